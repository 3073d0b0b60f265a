"""The dream line: daily notes, Deep Dream distillation, MEMORY.md, the diary, the chat
command and the nightly schedule, each safety rule with its own test."""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app
from reverie.dream import describe, parse_chat_command, wait
from reverie.facts import MAX_FACT_CHARS
from reverie.scheduler import Scheduler
from reverie.errors import Conflict, InvalidInput
from reverie.models import Fact, Note
from reverie.notes import is_small_talk
from tests.edits import dreamed, edit_text
from tests.fake_openai import Reply

DAY0 = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
MARKER = re.compile(r"<!-- (fact_\w+) -->")


def day(n: int, hour: int = 9) -> datetime:
    return DAY0 + timedelta(days=n, hours=hour - 9)


def say(mem: Memory, text: str, at: datetime, user: str = "ana") -> None:
    mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}], user=user, at=at)


def confirm_pending(mem: Memory, user: str = "ana") -> None:
    """A person confirms what the learning line found (pending -> consolidated, [Nx] + 1)."""
    for fact in mem.facts(user=user, status="pending"):
        mem.reinforce(fact.id, user=user)


def llm_memory(home, fake) -> Memory:
    return Memory(home, background=False, engines={"distill": "openai"},
                  llm={"base_url": fake.base_url, "model": "fake-model", "max_retries": 0})


def distill_input(body: dict) -> dict:
    return json.loads(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def kept(data: dict) -> list[dict]:
    """A distill answer's entries that keep every fact of its input as it is."""
    return [{"action": "keep", "content": f["content"], "category": f["category"], "sources": [f["id"]]}
            for f in data["facts"]]


def keep_all_and_add(additions: dict[str, str]):
    """A scripted distill step: keep every fact; add the given line for a note whose text
    contains the key."""

    def answer(body: dict) -> dict:
        data = distill_input(body)
        entries = kept(data)
        for note in data["notes"]:
            for key, line in additions.items():
                if key in note["content"]:
                    entries.append({"action": "add", "content": line, "category": "preference",
                                    "sources": [note["id"]]})
        return {"entries": entries}

    return answer


# ---------------------------------------------------------------- daily notes

def test_trim_turns_dropped_messages_into_redacted_note_lines_for_their_day(mem, home):
    dropped = [
        {"role": "user", "content": "I prefer tea over coffee; mail me at ana.lima@example.com", "at": day(0).isoformat()},
        {"role": "assistant", "content": "Tea it is."},
        {"role": "user", "content": "We decided to move the team to weekly releases", "at": day(1).isoformat()},
        {"role": "assistant", "content": "Weekly releases, noted."},
    ]
    notes = mem.trim(dropped, user="ana", thread="t1")
    assert [n.date for n in notes] == ["2024-05-01", "2024-05-02"]
    assert all("ana.lima@example.com" not in n.content for n in notes)
    assert "tea" in notes[0].content.lower() and "weekly releases" in notes[1].content.lower()
    assert (home / "users" / "ana" / "memory" / "2024-05-01.md").read_text(encoding="utf-8").count("- ") == 1
    assert mem.trim(dropped, user="ana", thread="t1") == []  # reported twice: nothing new
    assert len(mem.notes(user="ana")) == 2


CASHEWS = "Actually I'm not allergic to peanuts, it was a misdiagnosis; it's cashews I'm allergic to."


@pytest.mark.parametrize("said, line", [
    (CASHEWS, "User: Actually I'm not allergic to peanuts, it was a misdiagnosis; it's cashews I'm allergic to"),
    ("My flight is at 9; the gate is B12.", "User: My flight is at 9; the gate is B12"),
    ("其实我不对花生过敏，那是误诊；我真正过敏的是腰果。", "用户：其实我不对花生过敏，那是误诊；我真正过敏的是腰果"),
])
def test_a_note_keeps_the_whole_sentence_a_semicolon_splits(mem, said, line):
    say(mem, said, day(0))
    mem.flush()
    assert [n.content for n in mem.notes(user="ana")] == [line]


def test_a_note_of_a_sentence_no_semicolon_splits_is_the_summary_as_it_is(mem):
    say(mem, "Big news: we moved to Hamburg last weekend. I live in Hamburg now.", day(0))
    say(mem, "No, actually I switched to helix last month, not neovim.", day(0))
    mem.flush()
    assert sorted(n.content for n in mem.notes(user="ana")) == sorted(e.summary for e in mem.episodes(user="ana"))


def test_trim_keeps_the_whole_sentence_a_semicolon_splits(mem):
    [note] = mem.trim([{"role": "user", "content": CASHEWS}, {"role": "assistant", "content": "Noted."}], user="ana")
    assert "cashews I'm allergic to" in note.content and "peanuts" in note.content


def test_the_dream_reads_the_new_value_after_the_semicolon(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        say(mem, CASHEWS, day(0))
        mem.flush()
        fake_openai.respond_by_step({"distill": keep_all_and_add({"cashews": "Is allergic to cashews"})})
        assert mem.dream(user="ana", now=day(0, 23)).status == "done"
        [asked] = [r for r in fake_openai.requests if r.step == "distill"]
        assert [n["content"] for n in distill_input(asked.body)["notes"]] == [
            "User: Actually I'm not allergic to peanuts, it was a misdiagnosis; it's cashews I'm allergic to"]
        assert "Is allergic to cashews" in mem.memory_md(user="ana")
    finally:
        mem.close()


SMALL_TALK = [
    "lol that's funny", "haha nice", "hmm interesting", "good morning!", "good night", "I'm bored", "thanks!",
    "哈哈", "晚安",
]
# what a person asks about is theirs to remember, whoever it names
SAYS_SOMETHING = [
    "Is it okay to drink coffee while pregnant?", "how much ibuprofen can I take with warfarin?",
    "Should I take the job offer from globex?", "could you keep answers short from now on?",
    "what should I cook for a vegan guest?", "孩子发烧38度怎么办？", "what's 15% of 80?",
    "Hi! I'm Sam. I live in Berlin with my partner Jonas.", "Pixel loves the Elbe beach.",
    "The checkout redesign is in QA now.", "can you suggest a gift for my sister?", "should I take the Globex offer?",
    "I need help writing a cover letter for a nursing job, can you help?", "How's your new job going?",
    "remind me to call mom tomorrow", "I'm tired of my job", "We decided against a second dog.",
    "what's a good vegan recipe? I'm vegan", "haha, I finally passed my driving test!", "我下周搬到汉堡，有什么建议吗？",
]


@pytest.mark.parametrize("text", SMALL_TALK)
def test_small_talk_is_small_talk(text):
    assert is_small_talk(text)


@pytest.mark.parametrize("text", SAYS_SOMETHING)
def test_a_message_that_tells_something_of_its_speaker_is_no_small_talk(text):
    assert not is_small_talk(text)


def test_small_talk_gets_no_note_line_and_what_tells_something_does(mem, home):
    said = SMALL_TALK + SAYS_SOMETHING
    for i, text in enumerate(said):
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Sure."}],
                user="ana", thread=f"t{i}", at=day(0))
    mem.flush()
    notes = mem.notes(user="ana")
    assert len(notes) == len(SAYS_SOMETHING)
    assert {e for n in notes for e in n.episodes} == {e.id for e in mem.episodes(user="ana", limit=100)
                                                      if e.user_text in SAYS_SOMETHING}
    assert len(mem.episodes(user="ana", limit=100)) == len(said)  # each exchange is still kept, and recalled
    day_file = (home / "users" / "ana" / "memory" / "2024-05-01.md").read_text(encoding="utf-8")
    assert day_file.count("\n- ") == len(SAYS_SOMETHING) and "funny" not in day_file and "good night" not in day_file


def test_a_talk_among_people_keeps_the_note_of_an_exchange_one_side_of_which_tells_something(mem):
    mem.add([{"speaker": "Caroline", "content": "How are you?"},
             {"speaker": "Melanie", "content": "Great! I just got back from camping with my kids."}],
            user="ana", thread="t1", at=day(0))
    mem.add([{"speaker": "Caroline", "content": "haha nice"}, {"speaker": "Melanie", "content": "lol good night"}],
            user="ana", thread="t2", at=day(0))
    mem.flush()
    assert ["camping" in n.content for n in mem.notes(user="ana")] == [True]


def test_trim_keeps_no_line_for_small_talk(mem):
    notes = mem.trim([
        {"role": "user", "content": "good morning!"}, {"role": "assistant", "content": "Morning!"},
        {"role": "user", "content": "lol that's funny"}, {"role": "assistant", "content": "Glad you liked it."},
        {"role": "user", "content": "I'm learning Italian now"}, {"role": "assistant", "content": "Bravo!"},
    ], user="ana")
    assert len(notes) == 1 and "Italian" in notes[0].content


# ---------------------------------------------------------------- safety rules

def test_dream_with_no_content_is_skipped_and_writes_no_file(mem, home):
    mem.set_profile("user.workContext", "", user="bo")
    run = mem.dream(user="bo")
    assert run.status == "skipped"
    assert "no facts and no daily notes" in run.report["skipped"]
    assert not (home / "users" / "bo" / "MEMORY.md").exists()
    assert mem.diaries(user="bo") == {}


def test_a_plan_that_keeps_nothing_never_overwrites_memory_md(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        mem.remember("Prefers tea over coffee", user="ana", category="preference")
        fake_openai.respond_by_step({"distill": keep_all_and_add({})})
        assert mem.dream(user="ana").status == "done"
        before = mem.memory_md(user="ana")
        assert "Prefers tea over coffee" in before
        fake_openai.respond_by_step({"distill": {"entries": [
            {"action": "add", "content": "Owns a yacht in Monaco", "sources": ["note_0000000000000000"]}]}})
        run = mem.dream(user="ana", force=True)
        assert run.status == "skipped" and "left as it is" in run.report["skipped"]
        assert mem.memory_md(user="ana") == before
        assert mem.facts(user="ana")[0].status == "consolidated"
    finally:
        mem.close()


def test_dream_skips_unchanged_inputs_unless_forced(mem):
    say(mem, "I prefer tea over coffee in the morning", day(0))
    mem.flush()
    confirm_pending(mem)
    first = mem.dream(user="ana", days=3, now=day(1))
    assert first.status == "done" and first.input_hash
    again = mem.dream(user="ana", days=3, now=day(1))
    assert again.status == "skipped" and first.id in again.report["skipped"]
    forced = mem.dream(user="ana", days=3, now=day(1), force=True)
    assert forced.status == "done"
    say(mem, "I decided to move the team to weekly releases", day(1))
    mem.flush()
    assert mem.dream(user="ana", days=3, now=day(1)).status == "done"  # new notes: a new dream


def test_background_dream_reports_by_callback_and_pollable_status(mem):
    say(mem, "I prefer tea over coffee in the morning", day(0))
    mem.flush()
    confirm_pending(mem)
    finished: list = []
    done = threading.Event()
    run = mem.dream(user="ana", now=day(1), background=True, on_done=lambda r: (finished.append(r), done.set()))
    assert run.status == "queued"
    assert done.wait(10)
    assert finished[0].id == run.id and finished[0].status == "done"
    polled = mem.dream_status(run.id, user="ana")
    assert polled.status == "done" and polled.finished_at is not None
    assert polled.report["entries"] == 1
    assert mem.dream_status(user="ana").id == run.id


def test_one_dream_at_a_time_per_user(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        mem.remember("Prefers tea over coffee", user="ana", category="preference")
        mem.remember("Likes jazz", user="bo", category="preference")
        fake_openai.respond_by_step({"distill": lambda body: Reply.delayed(0.6, keep_all_and_add({})(body))})
        done = threading.Event()
        first = mem.dream(user="ana", background=True, on_done=lambda r: done.set())
        with pytest.raises(Conflict, match=first.id):
            mem.dream(user="ana")
        reply = mem.chat_command("/memory dream", user="ana")
        assert not reply.ok and "already running" in reply.message
        other = mem.dream(user="bo")  # another user is not held up
        assert other.status == "done"
        assert wait(mem.home, timeout=10) and done.is_set()
        assert mem.dream_status(first.id, user="ana").status == "done"
        assert mem.dream(user="ana", force=True).status == "done"  # free again once it ended
    finally:
        mem.close()


def test_scheduler_flushes_the_learning_line_before_it_dreams(mem):
    say(mem, "I prefer tea over coffee in the morning", day(0))
    say(mem, "I decided to move the team to weekly releases", day(0, 11))
    assert mem.learner.pending() == 2 and mem.notes(user="ana") == []
    runs = Scheduler(mem).run_once(now=day(0, 23))
    assert [r.user for r in runs] == ["ana"]
    assert mem.learner.pending() == 0
    assert runs[0].status == "done"
    assert runs[0].report["notes_read"] == 2  # the notes the flush wrote were the dream's input
    assert Scheduler(mem).run_once(now=day(0, 23))[0].status == "skipped"  # nothing new since


def test_the_nightly_run_dreams_for_several_users_at_once_when_distill_waits_on_an_endpoint(home, fake_openai):
    import threading

    users = ["ana", "bo", "cy"]
    lock, state = threading.Condition(), {"now": 0, "most": 0}

    def distill(body: dict) -> dict:
        with lock:  # each call waits (a bounded time) until all three are in flight together
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            lock.notify_all()
            lock.wait_for(lambda: state["most"] >= len(users), timeout=5)
            state["now"] -= 1
        return keep_all_and_add({})(body)

    fake_openai.respond_by_step({"distill": distill})
    mem = Memory(home, background=False, engines={"distill": "openai"}, learn_threads=3,
                 llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0})
    try:
        for user in users:
            mem.remember(f"{user} prefers tea over coffee in the morning", user=user, category="preference")
        runs = Scheduler(mem).run_once(now=day(0, 23))
        assert [r.user for r in runs] == users and all(r.status == "done" for r in runs)
        assert state["most"] == 3
    finally:
        mem.close()


def test_scheduler_runs_at_2355_local_by_default(mem):
    scheduler = Scheduler(mem)
    evening = datetime(2024, 5, 1, 20, 0).astimezone()
    assert scheduler.next_run(evening).strftime("%Y-%m-%d %H:%M") == "2024-05-01 23:55"
    assert scheduler.next_run(evening.replace(hour=23, minute=58)).strftime("%Y-%m-%d %H:%M") == "2024-05-02 23:55"
    assert Scheduler(mem, at="03:30").next_run(evening).strftime("%H:%M") == "03:30"
    with pytest.raises(InvalidInput):
        Scheduler(mem, at="25:00")


@pytest.mark.skipif(not hasattr(__import__("time"), "tzset"), reason="needs time.tzset (POSIX)")
def test_the_nightly_run_keeps_its_wall_clock_time_across_daylight_saving(mem, monkeypatch):
    import time

    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    try:
        scheduler = Scheduler(mem)
        spring = scheduler.next_run(datetime(2024, 3, 9, 23, 56).astimezone())  # the clocks go forward that night
        assert spring.strftime("%Y-%m-%d %H:%M %z") == "2024-03-10 23:55 -0700"
        autumn = scheduler.next_run(datetime(2024, 11, 3, 22, 55, 30).astimezone())  # ... and back
        assert autumn.strftime("%Y-%m-%d %H:%M %z") == "2024-11-03 23:55 -0800"
        assert scheduler.next_run(autumn + timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M") == "2024-11-04 23:55"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


# ---------------------------------------------------------------- distillation

PREFERENCES = ["tea over coffee in the morning", "Python for scripting", "dark mode in every editor",
               "short answers with the conclusion first", "trains over planes for trips under 600 km",
               "paper notebooks for planning", "Postgres over MySQL", "tabs in Go code", "window seats on flights",
               "email over phone calls", "mechanical keyboards", "quiet cafes for deep work"]
LIKES = ["jazz", "hiking in the Alps", "board games with friends", "Japanese food", "early morning runs",
         "science fiction novels", "cycling to work", "baking sourdough bread", "chess puzzles", "indie films"]
DECISIONS = ["move the team to weekly releases", "drop the legacy billing API", "adopt trunk-based development",
             "hire a second data engineer", "use Kubernetes for the new platform", "write design docs for big changes",
             "keep the monorepo", "retire the old dashboard"]
HABITS = ["reviews pull requests before lunch", "writes tests before fixing bugs", "blocks Friday afternoons for reading",
          "plans the week on Sunday evening", "takes a walk after lunch"]


def thirty_days(mem: Memory) -> None:
    """A month of talk: about 35 durable statements, some said again on later days, a move,
    and temporary chatter the learning line should not keep."""
    lines = ([f"I prefer {p}" for p in PREFERENCES] + [f"I like {x}" for x in LIKES]
             + [f"I decided to {d}" for d in DECISIONS] + [f"I always {h.split(' ', 1)[0][:-1]} {h.split(' ', 1)[1]}" for h in HABITS])
    for i, text in enumerate(lines):
        say(mem, text, day(i % 30, 9 + i // 30))
    for i, text in enumerate(lines[:8]):  # said again a couple of weeks later
        say(mem, text, day(14 + i, 15))
    say(mem, "I live in Berlin", day(2, 18))
    say(mem, "I live in Lisbon", day(27, 18))
    say(mem, "the staging server is running on port 3000 right now", day(20, 18))
    mem.flush()
    confirm_pending(mem)
    for query in ("what do I drink in the morning", "which editor theme do I like", "what did we decide about releases"):
        mem.recall(query, user="ana", at=day(29, 20))  # use: [Nx] + 1 for what is delivered


def test_a_thirty_day_history_distills_to_at_most_30_entries_each_traceable(mem, home):
    thirty_days(mem)
    assert len(mem.facts(user="ana", status="consolidated")) > 30
    run = mem.dream(user="ana", days=30, now=day(29, 23))
    assert run.status == "done", run.error
    report = run.report
    assert report["notes_read"] >= 40
    assert 0 < report["entries"] <= 30
    text = (home / "users" / "ana" / "MEMORY.md").read_text(encoding="utf-8")
    ids = MARKER.findall(text)
    assert len(ids) == report["entries"] == len(set(ids))
    facts = mem.store.get_facts(ids)
    for fact_id in ids:
        fact = facts[fact_id]
        assert fact.status == "consolidated" and fact.user == "ana"
        sources = mem.store.get_episodes(fact.provenance.episodes)
        notes = mem.store.get_notes(fact.provenance.notes)
        assert sources or notes, f"{fact.content!r} has no traceable source"
        assert all(e.user == "ana" for e in sources.values()) and all(n.user == "ana" for n in notes.values())
        assert fact.content in text
    entries = "\n".join(line for line in text.splitlines() if MARKER.search(line))
    assert "Lives in Lisbon" in entries and "Lives in Berlin" not in entries
    assert "port 3000" not in text
    assert "## Preferences" in text and "## Decisions" in text and "[2x]" in text
    diary = mem.diaries(user="ana")["2024-05-30"]
    assert f"MEMORY.md now holds {report['entries']} entries" in diary
    assert re.search(r"I read \d+ facts and \d+ note lines from the last 30 days", diary)
    # the command it gives to take the dream back runs as copied: it names the user
    assert f"`reverie undo {report['journal']} --user ana`" in diary


def test_a_fabricated_entry_from_the_model_is_rejected_and_reported(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        say(mem, "I prefer tea over coffee in the morning", day(0))
        mem.flush()
        confirm_pending(mem)
        fact_id = mem.facts(user="ana")[0].id
        note_id = mem.notes(user="ana")[0].id

        def plan(body: dict) -> dict:
            return {"entries": [
                {"action": "keep", "content": "Prefers tea over coffee in the morning", "sources": [fact_id]},
                {"action": "add", "content": "Owns a sailing yacht moored in Monaco", "category": "identity",
                 "sources": [note_id]},
                {"action": "add", "content": "Drinks 5 cups of tea a day", "sources": [note_id, fact_id]},
                {"action": "merge", "content": "Prefers tea over coffee", "sources": [fact_id, "fact_made_up"]},
                {"action": "add", "content": "Loves morning tea", "sources": []},
            ]}

        fake_openai.respond_by_step({"distill": plan})
        run = mem.dream(user="ana", now=day(1))
        assert run.status == "done"
        rejected = {r["content"]: r["reason"] for r in run.report["rejected"]}
        assert set(rejected) == {"Owns a sailing yacht moored in Monaco", "Drinks 5 cups of tea a day",
                                 "Prefers tea over coffee", "Loves morning tea"}
        assert "content words appear in its sources" in rejected["Owns a sailing yacht moored in Monaco"]
        assert "5" in rejected["Drinks 5 cups of tea a day"]
        assert "fact_made_up" in rejected["Prefers tea over coffee"]
        assert "no sources" in rejected["Loves morning tea"]
        facts = [f.content for f in mem.facts(user="ana")]
        assert facts == ["Prefers tea over coffee in the morning"]
        assert "yacht" not in mem.memory_md(user="ana")
        diary = mem.diaries(user="ana")["2024-05-02"]
        assert "I rejected 4 proposals that did not stand on the inputs" in diary and "yacht" in diary
    finally:
        mem.close()


def test_a_conflict_resolves_newest_wins_and_the_dream_can_be_undone(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        say(mem, "I prefer dark mode in the editor", day(0))
        mem.flush()
        confirm_pending(mem)
        old = mem.facts(user="ana")[0]
        fake_openai.respond_by_step({"distill": keep_all_and_add({"light mode": "Prefers light mode in the editor"})})
        assert mem.dream(user="ana", now=day(0, 23)).status == "done"
        assert old.content in mem.memory_md(user="ana")
        mem.store.put_note(Note(user="ana", date="2024-05-11", content="User: switched to light mode in the editor",
                                created_at=day(10)))
        run = mem.dream(user="ana", days=30, now=day(11))  # the model keeps both; code settles it
        assert run.status == "done"
        assert [(c["content"], c["replaced"]) for c in run.report["conflicts"]] == [
            ("Prefers light mode in the editor", [old.content])]
        archived = mem.fact(old.id)
        winner = mem.fact(archived.superseded_by)
        assert archived.status == "archived" and winner.status == "consolidated"
        assert winner.supersedes == old.id and winner.provenance.notes
        text = mem.memory_md(user="ana")
        assert "light mode" in text and "dark mode" not in text
        assert "conflicted with" in mem.diaries(user="ana")["2024-05-12"]

        undone = mem.undo(run.id, user="ana")
        assert undone.restored >= 1 and undone.archived == 1
        assert mem.fact(old.id).status == "consolidated" and mem.fact(old.id).superseded_by is None
        assert mem.fact(winner.id).status == "archived"
        text = mem.memory_md(user="ana")
        assert "dark mode" in text and "light mode" not in text
        with pytest.raises(Conflict):
            mem.undo(run.id, user="ana")
    finally:
        mem.close()


def test_a_note_that_repeats_a_pending_fact_promotes_it_instead_of_adding_a_twin(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        say(mem, "I like jazz", day(0))
        mem.flush()
        pending = mem.facts(user="ana", status="pending")
        assert [f.content for f in pending] == ["Likes jazz"]
        fake_openai.respond_by_step({"distill": keep_all_and_add({"jazz": "Likes jazz"})})
        run = mem.dream(user="ana", now=day(1))
        assert [a["fact_id"] for a in run.report["added"]] == [pending[0].id]
        assert [(f.id, f.status) for f in mem.facts(user="ana")] == [(pending[0].id, "consolidated")]
    finally:
        mem.close()


# ---------------------------------------------------------------- the chat command

@pytest.mark.parametrize(("text", "days"), [("/memory dream", None), ("/memory dream 7", 7),
                                             ("  /MEMORY Dream 30 ", 30), ("/memory dream 1", 1)])
def test_chat_command_parses_memory_dream_n(text, days):
    assert parse_chat_command(text).days == days


@pytest.mark.parametrize("text", ["/memory dream 0", "/memory dream 31", "/memory dream three",
                                  "/memory dream 3 4", "/memory", "/memory forget x"])
def test_chat_command_gives_a_clear_error_with_the_usage(text):
    with pytest.raises(InvalidInput, match=r"usage: /memory dream \[N\]"):
        parse_chat_command(text)


@pytest.mark.parametrize("text", ["hello", "/memorize this", "please /memory dream", ""])
def test_other_messages_are_no_command(text):
    assert parse_chat_command(text) is None


def test_chat_command_runs_the_dream_in_the_background_and_reports(mem):
    say(mem, "I prefer tea over coffee in the morning", day(0))
    mem.flush()
    confirm_pending(mem)
    done = threading.Event()
    reply = mem.chat_command("/memory dream 30", user="ana", on_done=lambda run: done.set())
    assert reply.ok and reply.run_id and "background" in reply.message
    assert done.wait(10)
    run = mem.dream_status(reply.run_id, user="ana")
    assert run.days == 30 and run.status == "done"
    assert not mem.chat_command("/memory dream 99", user="ana").ok
    assert mem.chat_command("just chatting", user="ana") is None


def test_a_dream_keeps_a_person_s_line_an_engine_would_drop_and_clips_a_runaway_line(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        mine = mem.remember("Prefers trash over rm", user="ana", category="preference")
        learned = mem.remember("Likes jazz", user="ana", category="preference")
        say(mem, "I like sourdough bread and " + "very " * 20 + "long walks", day(0))
        mem.flush()

        def plan(body: dict) -> dict:
            data = distill_input(body)
            return {"entries": [
                {"action": "remove", "sources": [mine.id], "reason": "outdated"},
                {"action": "keep", "content": "Likes jazz", "category": "preference", "sources": [learned.id]},
                {"action": "add", "content": "Likes sourdough bread and " + "very " * 20 + "long walks " * 5000,
                 "category": "preference", "sources": [data["notes"][0]["id"]]},
            ]}

        fake_openai.respond_by_step({"distill": plan})
        run = mem.dream(user="ana", now=day(0, 23))
        assert run.status == "done"
        assert mem.fact(mine.id).status == "consolidated" and "Prefers trash over rm" in mem.memory_md(user="ana")
        refused = [e for e in run.report["rejected"] if e["fact_id"] == mine.id]
        assert refused and "a person's own line" in refused[0]["reason"]
        (added,) = run.report["added"]
        assert len(added["content"]) <= MAX_FACT_CHARS and added["content"].endswith("…")
        assert len(mem.fact(added["fact_id"]).content) <= MAX_FACT_CHARS
    finally:
        mem.close()


def test_a_dream_asks_no_engine_when_only_use_counts_changed(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        tea = mem.remember("Prefers tea over coffee", user="ana", category="preference")
        fake_openai.respond_by_step({"distill": keep_all_and_add({})})
        assert mem.dream(user="ana").status == "done"
        asked = len([r for r in fake_openai.chat_requests if r.step == "distill"])
        mem.reinforce(tea.id, user="ana")
        run = mem.dream(user="ana")
        assert run.status == "skipped" and "only use counts changed" in run.report["skipped"]
        assert len([r for r in fake_openai.chat_requests if r.step == "distill"]) == asked
        assert f"[{mem.fact(tea.id).uses}x] Prefers tea over coffee" in mem.memory_md(user="ana")
    finally:
        mem.close()


def test_a_failing_engine_fails_the_run_and_changes_nothing(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        fact = mem.remember("Prefers tea over coffee", user="ana", category="preference")
        fake_openai.respond_by_step({"distill": Reply.error(400, "model not found")})
        run = mem.dream(user="ana")
        assert run.status == "failed" and "model not found" in run.error
        assert mem.fact(fact.id).status == "consolidated" and mem.memory_md(user="ana") == ""
        assert mem.dream_status(run.id, user="ana").status == "failed"
    finally:
        mem.close()


# ---------------------------------------------------------------- the CLI

def test_diaries_come_the_newest_day_first_a_page_at_a_time(mem):
    for n, drink in enumerate(("tea", "coffee", "cocoa", "matcha")):
        say(mem, f"I prefer {drink} over juice in the morning", DAY0 + timedelta(days=n))
        mem.flush()
        assert mem.dream(user="ana", days=1, force=True, now=DAY0 + timedelta(days=n, hours=2)).status == "done"
    days = [(DAY0 + timedelta(days=n)).date().isoformat() for n in range(4)]
    first = mem.diary_page(user="ana", limit=3)
    assert [d for d, _ in first.items] == days[::-1][:3] and first.next is not None
    assert dict(first.items) == {d: mem.diaries(user="ana")[d] for d in days[1:]}
    rest = mem.diary_page(user="ana", after=first.next, limit=3)
    assert [d for d, _ in rest.items] == days[:1] and rest.next is None
    assert "I read" in rest.items[0][1]
    with pytest.raises(InvalidInput) as err:
        mem.diary_page(user="ana", limit=367)
    assert err.value.field == "limit"


def test_dream_notes_and_diary_from_the_cli(home):
    runner = CliRunner()

    def cli(*args: str):
        return runner.invoke(app, [*args, "--user", "ana", "--home", str(home)], catch_exceptions=False)

    with Memory(home, background=False) as mem:
        say(mem, "I prefer tea over coffee in the morning", datetime.now(timezone.utc))
        mem.flush()
        confirm_pending(mem)
    bad = cli("dream", "--days", "31")
    assert bad.exit_code == 2 and "days must be a whole number from 1 to 30" in bad.output
    done = cli("dream", "--days", "2")
    assert done.exit_code == 0 and "Dream done:" in done.output and "MEMORY.md" in done.output
    again = json.loads(cli("dream", "--days", "2", "--json").output)
    assert again["status"] == "skipped" and again["days"] == 2
    today = datetime.now(timezone.utc).date().isoformat()
    notes = cli("notes", "--date", today)
    assert today in notes.output and "tea" in notes.output.lower()
    diary = cli("diary")
    assert diary.exit_code == 0 and "I read 1 fact and 1 note line from the last 2 days" in diary.output
    assert cli("diary", "--date", "1999-01-01").exit_code == 1


def test_the_agents_own_words_in_the_notes_are_not_distilled_as_user_facts(mem):
    from reverie.engines.base import DistillRequest, NoteRef
    from reverie.engines.heuristic import HeuristicEngine

    plan = HeuristicEngine().distill(DistillRequest(facts=[], notes=[
        NoteRef(id="n1", date="2026-11-02", content="Assistant: Understood: always conclusion first, no padding"),
        NoteRef(id="n2", date="2026-11-02", content="User: prefers trash over rm for deleting files"),
    ]))
    added = [e for e in plan.entries if e.action == "add"]
    assert [e.sources for e in added] == [["n2"]]


@pytest.fixture
def mem(bmem):
    """Each test of this module runs on SQLite and on PostgreSQL."""
    return bmem


def test_a_dream_promotes_the_pending_fact_its_note_repeats_instead_of_adding_a_copy(tmp_path):
    # the day's note reads "User: always wants ..."; the entry distilled from it is the pending
    # fact learned from the same turn, not a second line "The user always wants ..."
    with Memory(tmp_path / "home", background=False) as mem:
        with mem.turn("I always want the conclusion first", user="ana") as turn:
            turn.complete("Noted.")
        mem.flush(user="ana")
        [learned] = mem.facts(user="ana")
        assert learned.status == "pending"
        assert mem.dream(user="ana").status == "done"
        live = mem.facts(user="ana")
        assert [(f.id, f.status) for f in live] == [(learned.id, "consolidated")]


def test_a_nightly_dream_the_endpoints_breaker_held_is_tried_again_after_it(home, fake_openai):
    # the night's flush or first dream met a failing endpoint: its breaker holds every call for
    # a while; the dream runs after it that night, not the next one
    fake_openai.push(Reply.error(500, "down"))
    mem = Memory(home, background=False, engines={"distill": "openai"},
                 llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0,
                      "breaker_seconds": 1})
    fake_openai.respond_by_step({"distill": keep_all_and_add({})})
    try:
        mem.remember("Prefers tea over coffee in the morning", user="ana", category="preference")
        [run] = Scheduler(mem).run_once(now=day(0, 23))
        assert run.status == "done", run.error
    finally:
        mem.close()


# ---------------------------------------------------------------- the hand edits a dream takes in

def test_a_dream_reports_the_hand_edits_it_took_in_and_they_can_be_undone(mem, home):
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    mem.remember("Prefers tea over coffee", user="ana", category="preference")
    path = dreamed(mem, home)
    edit_text(path, "Likes jazz", "Likes cool jazz")
    run = mem.dream(user="ana")
    synced = run.report["synced"]
    assert run.status == "done" and synced.startswith("chg_") and synced != run.report["journal"]
    assert [c.action for c in mem.changes(user="ana") if c.id == synced] == ["sync"]
    assert f"`reverie undo {synced} --user ana`" in "".join(mem.diaries(user="ana").values())
    if run.report["journal"]:  # the dream came after the edits: it is taken back first
        mem.undo(run.id, user="ana")
    mem.undo(synced, user="ana")
    assert mem.fact(jazz.id).content == "Likes jazz"


def test_a_skipped_dream_still_reports_the_hand_edits_it_took_in(home):
    runner = CliRunner()

    def cli(*args: str):
        return runner.invoke(app, [*args, "--user", "ana", "--home", str(home)], catch_exceptions=False)

    with Memory(home, background=False) as mem:
        jazz = mem.remember("Likes jazz", user="ana", category="preference")
    assert cli("dream").exit_code == 0
    path = home / "users" / "ana" / "MEMORY.md"
    edit_text(path, f"- [0x] Likes jazz <!-- {jazz.id} -->\n", "")
    run = json.loads(cli("dream", "--json").output)  # the line is gone: nothing left to dream over
    assert run["status"] == "skipped" and run["report"]["journal"] is None
    synced = run["report"]["synced"]
    assert synced.startswith("chg_")
    undone = cli("undo", synced)
    assert undone.exit_code == 0 and "undid sync" in undone.output
    with Memory(home, background=False) as mem:
        assert mem.fact(jazz.id).status == "consolidated"
    edit_text(path, "Likes jazz", "Likes cool jazz")
    shown = cli("dream").output
    again = re.search(r"took in your edits of MEMORY.md first \(undo: reverie undo (chg_\w+) --user ana\)", shown)
    assert again, shown


def test_the_dream_command_prints_how_to_take_it_back(home):
    runner = CliRunner()

    def cli(*args: str):
        return runner.invoke(app, [*args, "--user", "ana", "--home", str(home)], catch_exceptions=False)

    with Memory(home, background=False) as mem:
        for content in ("Prefers tabs over spaces", "Prefers tabs over spaces!"):  # the dream folds the two
            mem.store.put_fact(Fact(user="ana", content=content, category="preference", status="consolidated"))
    shown = cli("dream").output
    undo = re.search(r"to take this dream back: reverie undo (dream_\w+) --user ana", shown)
    assert undo, shown
    assert "undid dream" in cli("undo", undo.group(1)).output
    with Memory(home, background=False) as mem:
        assert len(mem.facts(user="ana")) == 2


def test_the_diary_says_one_kept_entry_in_the_singular(mem):
    mem.remember("Prefers tea over coffee", user="ana", category="preference")
    assert mem.dream(user="ana").status == "done"
    diary = "".join(mem.diaries(user="ana").values())
    assert "I kept 1 entry as it was." in diary and "as they were" not in diary
    mem.remember("Likes jazz", user="ana", category="preference")
    assert mem.dream(user="ana").status == "done"
    assert mem.dream(user="ana", force=True).status == "done"
    assert "I kept 2 entries as they were." in "".join(mem.diaries(user="ana").values()).split("## ")[-1]


def test_an_entry_promoted_by_recall_since_the_last_dream_is_told_as_an_addition(mem):
    mem.remember("Prefers tea over coffee", user="ana", category="preference")
    say(mem, "I love climbing on weekends.", day(0))
    mem.flush()
    [climbing] = mem.facts(user="ana", status="pending")
    # the notes of day 0 are outside each dream's one day: only the recall promotes the fact
    assert mem.dream(user="ana", days=1, now=day(5)).status == "done"
    assert climbing.content not in mem.memory_md(user="ana")
    mem.recall("what sport do I love on weekends?", user="ana", at=day(5, 12))
    assert mem.fact(climbing.id).status == "consolidated"
    run = mem.dream(user="ana", days=1, now=day(5, 23))
    assert run.status == "done"
    assert [e["fact_id"] for e in run.report["joined"]] == [climbing.id] and run.report["added"] == []
    assert f"[1x] {climbing.content}" in mem.memory_md(user="ana")
    told = mem.diaries(user="ana")[day(5).date().isoformat()].split("## ")[-1]
    assert "I kept 1 entry as it was." in told
    assert f"1 entry joined MEMORY.md since it was last written: “{climbing.content}” (learned, then promoted)." in told
    assert "Nothing needed" not in told and "MEMORY.md now holds 2 entries" in told
    assert "1 new" in describe(run)


def test_a_dream_shows_use_counts_that_changed_and_skips_when_nothing_did(mem, home):
    tea = mem.remember("Prefers tea over coffee", user="ana", category="preference")
    assert mem.dream(user="ana", now=day(0)).status == "done"
    path = home / "users" / "ana" / "MEMORY.md"
    assert f"[{tea.uses}x] Prefers tea over coffee" in path.read_text(encoding="utf-8")
    for _ in range(3):
        mem.reinforce(tea.id, user="ana")
    uses = mem.fact(tea.id).uses
    say(mem, "I started a pottery class on Thursdays", day(1))
    mem.flush()
    run = mem.dream(user="ana", now=day(1, 23))
    assert run.status == "done"  # a new note, and the counts changed beside it
    assert f"[{uses}x] Prefers tea over coffee" in path.read_text(encoding="utf-8")
    assert [(e["fact_id"], e["reason"]) for e in run.report["recounted"]] == [(tea.id, f"{tea.uses}x → {uses}x")]
    told = mem.diaries(user="ana")[day(1).date().isoformat()]
    assert f"The use count of 1 entry changed: “Prefers tea over coffee” ({tea.uses}x → {uses}x)." in told
    # only the counts changed: MEMORY.md shows them, and no engine is asked about the same entries
    mem.reinforce(tea.id, user="ana")
    counted = mem.dream(user="ana", now=day(2))
    assert counted.status == "skipped" and "only use counts changed" in counted.report["skipped"]
    assert f"[{uses + 1}x] Prefers tea over coffee" in path.read_text(encoding="utf-8")
    written = path.read_text(encoding="utf-8")
    again = mem.dream(user="ana", now=day(2))
    assert again.status == "skipped" and path.read_text(encoding="utf-8") == written


def _owner_of_a_killed_process(reap: bool) -> str:
    """The owner string of a process that was killed (and reaped, or left a zombie)."""
    import signal
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", "from reverie.owners import process_owner; print(process_owner(), flush=True); "
                               "import time; time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    owner = child.stdout.readline().strip()
    child.send_signal(signal.SIGKILL)
    if reap:
        child.wait()
    else:  # killed, not yet reaped: what a server restarted at once sees of its predecessor
        import time

        while True:
            with open(f"/proc/{child.pid}/stat") as stat:
                if stat.read().rpartition(")")[2].split()[0] == "Z":
                    break
            time.sleep(0.01)
        child.stdout.close()
    return owner


@pytest.mark.parametrize("reap", [True, False], ids=["reaped", "zombie"])
def test_a_dream_left_running_by_a_killed_process_does_not_block_the_next(mem, reap):
    from reverie.store.base import DreamRun

    say(mem, "I prefer tea over coffee in the morning", day(0))
    mem.flush()
    confirm_pending(mem)
    left = DreamRun(id="dream_left", user="ana", status="running", days=3, started_at=datetime.now(timezone.utc),
                    owner=_owner_of_a_killed_process(reap))
    with mem.store.transaction():
        mem.store.put_dream_run(left)
    run = mem.dream(user="ana", days=3, now=day(1), force=True)
    assert run.status == "done"
    stopped = mem.store.get_dream_run("dream_left")
    assert stopped.status == "failed" and "stopped" in stopped.error


def test_a_dream_running_in_a_live_process_still_refuses_another(home):
    """On SQLite, where no lock spans processes, a run whose process lives is respected
    (a shared store tells it by the store's lock instead). The other process: this one's
    parent, alive while the test runs."""
    import os
    import socket

    from reverie.owners import _began
    from reverie.store.base import DreamRun

    parent = os.getppid()
    other = f"{socket.gethostname()}:{parent}" + (f"/{_began(parent)}" if _began(parent) else "")
    with Memory(home, background=False) as mem:
        with mem.store.transaction():
            mem.store.put_dream_run(DreamRun(id="dream_live", user="ana", status="running", days=3,
                                             started_at=datetime.now(timezone.utc), owner=other))
        with pytest.raises(Conflict, match="another process is dreaming for ana"):
            mem.dream(user="ana", days=3, now=day(1), force=True)


def test_a_note_that_says_two_facts_at_once_makes_no_third_fact(mem):
    """Found by a tester: "Moved to Lisbon and they work as a data engineer at Acme now" became a
    third fact beside the two it says; now it confirms them (the pending ones are promoted)."""
    say(mem, "I moved to Lisbon last month.", day(0))
    say(mem, "I work as a data engineer at Acme now.", day(0))
    mem.flush()
    say(mem, "So yes, I moved to Lisbon and I work as a data engineer at Acme now.", day(1))
    mem.flush()
    before = sorted(f.content for f in mem.facts(user="ana"))
    assert len(before) == 2
    run = mem.dream(user="ana", now=day(2))
    assert run.status == "done", run.error
    after = mem.facts(user="ana")
    assert sorted(f.content for f in after) == before
    assert {f.status for f in after} == {"consolidated"}
    assert all(f.content in mem.memory_md(user="ana") for f in after)


def test_a_dream_keeps_what_the_user_said_last_of_a_thing_they_took_back(mem):
    say(mem, "I'm allergic to penicillin.", day(0))
    say(mem, "I'm not allergic to penicillin after all, the test was wrong.", day(5))
    mem.flush()
    mem.dream(user="ana", days=14, now=day(6, 23), force=True)
    live = [f.content for f in mem.facts(user="ana") if f.status != "archived"]
    assert "Is not allergic to penicillin" in live and "Is allergic to penicillin" not in live
    assert "Is allergic to penicillin" not in mem.memory_md(user="ana")


def test_a_dream_keeps_the_corrected_date_not_the_decision_it_corrects(mem):
    say(mem, "At work we decided to launch the new checkout on December 1.", day(0))
    say(mem, "Correction: the checkout launch moved to December 8.", day(5))
    mem.flush()
    mem.dream(user="ana", days=14, now=day(6, 23), force=True)
    lines = [line for line in mem.memory_md(user="ana").splitlines() if line.startswith("- [")]
    assert any("December 8" in line for line in lines) and not any("December 1 " in line or line.endswith("December 1")
                                                                    or "December 1 <" in line for line in lines)


@pytest.mark.parametrize("line, entry", [
    ("has a cat named Pixel", "Has a cat named Pixel"),
    ("works as a nurse at the Santo António hospital", "Works as a nurse at the Santo António hospital"),
    ("lives in Porto", "Lives in Porto"),
    ("no longer uses emacs", "No longer uses emacs"),
])
def test_a_dream_reads_a_daily_note_written_in_the_third_person(mem, line, entry):
    # a summary line says the user's facts as "User: has ...": the rules read "has", "works", "lives"
    mem.store.put_note(Note(user="ana", date=day(0).date().isoformat(), content=f"User: {line}"))
    mem.dream(user="ana", days=3, now=day(1, 23), force=True)
    assert entry in mem.memory_md(user="ana")
