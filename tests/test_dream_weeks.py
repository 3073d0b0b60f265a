"""The nightly line over days, as a person lives it: things said on one day and changed on a
later one, dreams each night, hand edits of MEMORY.md, undo. Each test names what a person
sees in MEMORY.md, the dream's report or its diary."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app
from reverie.dream import describe
from reverie.keys import create_key
from reverie.server import create_app
from tests.edits import edit_text
from tests.fake_openai import Reply
from tests.test_dream import distill_input, kept, llm_memory

DAY0 = datetime(2026, 11, 16, 9, 0, tzinfo=timezone.utc)


def day(n: int, hour: int = 9) -> datetime:
    return DAY0 + timedelta(days=n, hours=hour - 9)


def say(mem: Memory, text: str, when: datetime, user: str = "ana", reply: str = "Noted.") -> None:
    mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": reply}], user=user, at=when)
    mem.flush()


def night(mem: Memory, n: int, user: str = "ana", minute: int = 55):
    run = mem.dream(user=user, days=3, force=True, now=day(n, 23) + timedelta(minutes=minute - 0))
    assert run.status == "done", (run.status, run.error, (run.report or {}).get("skipped"))
    return run


def entries(mem: Memory, user: str = "ana") -> list[str]:
    """The entry lines of MEMORY.md, markers and [Nx] left out."""
    return [re.sub(r"^- \[\d+x\] | <!-- fact_\w+ -->$", "", line)
            for line in mem.memory_md(user=user).splitlines() if line.endswith("-->")]


def every_fact(mem: Memory, user: str) -> list:
    return [f for status in ("pending", "consolidated", "archived") for f in mem.facts(user=user, status=status)]


def diary(mem: Memory, user: str = "ana") -> str:
    return "\n".join(mem.diaries(user=user).values())


def test_a_job_changed_days_later_shows_the_new_job_in_memory_md_not_neither(mem):
    say(mem, "I work as a nurse at Lisbon General Hospital.", day(0))
    night(mem, 0)
    assert entries(mem) == ["Works as a nurse at Lisbon General Hospital"]
    say(mem, "I switched jobs: I work as a data engineer at Acme now.", day(7))
    run = night(mem, 7)
    # the old job gave way when it was learned; the new one is an entry, and the report says so
    assert entries(mem) == ["Works as a data engineer at Acme now"]
    assert [(c["content"], c["replaced"]) for c in run.report["conflicts"]] == [
        ("Works as a data engineer at Acme now", ["Works as a nurse at Lisbon General Hospital"])]
    assert "“Works as a nurse at Lisbon General Hospital” conflicted with “Works as a data engineer at Acme now”" \
        in diary(mem)
    assert run.report["kept"] == 0 and run.report["confirmed"] == 0  # the new job is no entry kept as it was


def test_an_entry_that_left_memory_md_between_dreams_is_told_with_why(mem):
    porto = mem.remember("Lives in Porto", user="ana", category="identity")
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    night(mem, 0)
    assert entries(mem) == ["Likes jazz", "Lives in Porto"]
    mem.remember("Lives in Lisbon", user="ana", category="identity")  # a newer value, not by the dream
    mem.forget(jazz.id, user="ana")
    run = night(mem, 1)
    assert entries(mem) == ["Lives in Lisbon"]
    left = {e["fact_id"]: e["reason"] for e in run.report["left"]}
    assert left == {porto.id: "contradicted by a newer fact: “Lives in Lisbon”", jazz.id: "forgotten"}
    assert "2 entries left MEMORY.md since it was last written: “Likes jazz” (forgotten) and “Lives in Porto” " \
           "(contradicted by a newer fact: “Lives in Lisbon”)." in diary(mem)
    assert ", 2 left since MEMORY.md was last written;" in describe(run)


def test_a_newer_value_learned_between_dreams_is_told_once_as_the_conflict(mem):
    say(mem, "I have a dog named Rex.", day(0))
    night(mem, 0)
    say(mem, "I don't have a dog anymore.", day(8))
    run = night(mem, 8)
    assert entries(mem) == ["Doesn't have a dog anymore"]
    assert [(c["content"], c["replaced"]) for c in run.report["conflicts"]] == [
        ("Doesn't have a dog anymore", ["Has a dog named Rex"])]
    assert run.report["joined"] == [] and run.report["left"] == []


def test_a_chinese_note_becomes_its_fact_not_the_note_line_with_its_speaker(mem):
    say(mem, "我搬到上海了，不住在北京了。", day(0), user="li", reply="好的。")
    run = night(mem, 0, user="li")
    assert entries(mem, "li") == ["住在上海"]
    assert [e["content"] for e in run.report["added"]] == ["住在上海"]


def test_a_dream_run_again_the_same_night_changes_nothing(mem):
    say(mem, "我搬到上海了，不住在北京了。", day(0), user="li", reply="好的。")
    say(mem, "I prefer aisle seats on flights.", day(0, 10), user="li")
    night(mem, 0, user="li")
    before = mem.memory_md(user="li")
    facts = {f.id for f in every_fact(mem, "li")}
    again = night(mem, 0, user="li", minute=58)
    assert mem.memory_md(user="li") == before
    assert {f.id for f in every_fact(mem, "li")} == facts
    assert all(again.report[k] == [] for k in ("added", "merged", "conflicts", "cleaned", "left", "joined"))


def test_a_line_the_engine_adds_that_a_fact_already_says_is_that_fact_not_a_copy(home, fake_openai):
    # an engine adds, from a note alone, a line that an input fact says word for word: the
    # fact is confirmed; no copy is written and folded back each night
    mem = llm_memory(home, fake_openai)

    def answer(body: dict) -> dict:
        data = distill_input(body)
        return {"entries": kept(data) + [{"action": "add", "content": "Prefers tea over coffee", "category": "preference",
                                    "sources": [n["id"]]} for n in data["notes"]]}

    fake_openai.respond_by_step({"distill": answer})
    try:
        tea = mem.remember("Prefers tea over coffee", user="ana", category="preference")
        mem.trim([{"role": "user", "content": "I prefer tea over coffee, always"}], user="ana", at=day(0))
        for minute in (50, 55):
            run = night(mem, 0, minute=minute)
            assert run.report["added"] == [] and run.report["merged"] == []
        assert [f.id for f in every_fact(mem, "ana")] == [tea.id]
        assert entries(mem) == ["Prefers tea over coffee"]
    finally:
        mem.close()


def test_a_dream_tells_the_hand_edits_it_took_in_and_each_line_it_could_not(mem, home):
    mem.remember("Prefers tea over coffee", user="ana", category="preference")
    mem.remember("Is allergic to peanuts", user="ana", category="identity")
    night(mem, 0)
    path = home / "users" / "ana" / "MEMORY.md"
    edit_text(path, "Prefers tea over coffee", "Prefers coffee over tea")
    loose = "Swims on Sundays at the pool, my key is sk-proj-abcdefghijklmnopqrstuvwx1234567890"
    edit_text(path, "## Identity\n", f"## Identity\n\n{loose}\n- {'Long line. ' * 120}\n- Swims on Sundays\n")
    run = night(mem, 1)
    assert [(e["reason"], e["content"]) for e in run.report["hand_edits"]] == [
        ("changed", "Prefers coffee over tea"), ("added", "Swims on Sundays")]
    refused = run.report["refused"]
    assert [r["reason"].split(":")[0].split(";")[0] for r in refused] == ["not a list item", "1,319 characters"]
    assert refused[0]["content"] == "Swims on Sundays at the pool, my key is [api-key]"  # redacted, as stored
    told = diary(mem)
    assert "First I took in the edits made to MEMORY.md by hand: changed “Prefers coffee over tea” and added " \
           "“Swims on Sundays”" in told
    assert "I could not take in 2 lines written in MEMORY.md by hand, so they are no longer there: " \
           "“Swims on Sundays at the pool, my key is [api-key]” (not a list item" in told
    assert f"(to take them back: `reverie undo {run.report['synced']} --user ana`)" in told  # a command that runs
    assert "sk-proj" not in told and "sk-proj" not in json.dumps(run.report)
    assert "Swims on Sundays at the pool" not in mem.memory_md(user="ana")


def test_the_dream_command_prints_the_lines_of_memory_md_it_could_not_take_in(home):
    with Memory(home, background=False) as mem:
        mem.remember("Prefers tea over coffee", user="ana", category="preference")
        assert mem.dream(user="ana").status == "done"
    edit_text(home / "users" / "ana" / "MEMORY.md", "## Preferences\n", "## Preferences\n\nLikes jazz a lot\n")
    result = CliRunner().invoke(app, ["dream", "--user", "ana", "--home", str(home), "--force"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "not taken in (not a list item: an entry is a line that starts with '- '): Likes jazz a lot" \
        in " ".join(result.output.split())


def test_the_console_shows_what_left_memory_md_and_the_lines_not_taken_in(mem, home):
    mem.remember("Lives in Porto", user="ana", category="identity")
    night(mem, 0)
    mem.remember("Lives in Lisbon", user="ana", category="identity")
    edit_text(home / "users" / "ana" / "MEMORY.md", "## Identity\n", "## Identity\n\nLikes jazz a lot\n- Likes jazz\n")
    night(mem, 1)
    key = create_key(mem.store, user="ana").secret
    client = TestClient(create_app(mem, mcp=False), base_url="http://127.0.0.1", follow_redirects=False)
    page = client.get("/console/sign-in").text
    token = re.search(r'name="csrf" value="([^"]+)"', page)
    assert token is not None
    client.post("/console/sign-in", data={"key": key, "csrf": token.group(1), "next": ""})
    shown = client.get("/console/memory").text
    assert 'aria-label="left">−</span> Lives in Porto <span class="muted small">(contradicted by a newer fact' in shown
    assert "Likes jazz a lot <span class=\"muted small\">(written by hand, not taken in: not a list item" in shown


def test_an_entry_that_left_in_a_sync_before_the_dream_is_told_and_one_deleted_for_good_is_not(mem, home):
    mem.remember("Lives in Porto", user="ana", category="identity")
    secret = mem.remember("Sees doctor Ferreira on Mondays", user="ana", category="context")
    night(mem, 0)
    mem.remember("Lives in Lisbon", user="ana", category="identity")
    # a hand edit taken in before the dream writes MEMORY.md again without the archived line
    edit_text(home / "users" / "ana" / "MEMORY.md", "## Identity\n", "## Identity\n\n- Likes jazz\n")
    assert mem.sync(user="ana").added
    mem.forget(secret.id, user="ana", hard=True)
    run = night(mem, 1)
    assert [(e["content"], e["reason"]) for e in run.report["left"]] == [
        ("Lives in Porto", "contradicted by a newer fact: “Lives in Lisbon”")]
    assert "Ferreira" not in json.dumps(run.report) and "Ferreira" not in diary(mem)


def test_undoing_a_dream_and_the_hand_edits_it_took_in_brings_back_memory_md_exactly(mem, home):
    mem.remember("Prefers tea over coffee", user="ana", category="preference")
    mem.remember("Is allergic to peanuts", user="ana", category="identity")
    night(mem, 0)
    path = home / "users" / "ana" / "MEMORY.md"
    before = path.read_text(encoding="utf-8")
    assert "last distilled on 2026-11-16" in before
    edit_text(path, "Prefers tea over coffee", "Prefers coffee over tea")
    edit_text(path, "## Identity\n", "## Identity\n\n- Swims on Sundays\n")
    say(mem, "I like jazz.", day(3))
    run = night(mem, 3)
    assert "last distilled on 2026-11-19" in path.read_text(encoding="utf-8")
    assert run.report["journal"] and run.report["synced"]
    mem.undo(run.report["journal"], user="ana")
    assert "last distilled on 2026-11-16" in path.read_text(encoding="utf-8")  # the dream before it
    mem.undo(run.report["synced"], user="ana")
    assert path.read_text(encoding="utf-8") == before


def test_health_tells_what_the_last_dream_rejected_could_not_take_in_and_saw_leave(home, fake_openai):
    mem = llm_memory(home, fake_openai)

    def answer(body: dict) -> dict:
        data = distill_input(body)
        return {"entries": kept(data) + [{"action": "add", "content": "Owns a yacht in Monaco", "category": "identity",
                                    "sources": [data["facts"][0]["id"]]}]}

    try:
        mem.remember("Lives in Porto", user="ana", category="identity")
        mem.remember("Prefers tea over coffee", user="ana", category="preference")
        fake_openai.respond_by_step({"distill": lambda body: {"entries": answer(body)["entries"][:-1]}})
        night(mem, 0)
        assert mem.health(user="ana").advice == []
        fake_openai.respond_by_step({"distill": answer})
        mem.remember("Lives in Lisbon", user="ana", category="identity")
        edit_text(home / "users" / "ana" / "MEMORY.md", "## Identity\n", "## Identity\n\nLikes jazz a lot\n")
        run = night(mem, 1)
        assert len(run.report["rejected"]) == 1 and len(run.report["refused"]) == 1 and len(run.report["left"]) == 1
        report = mem.health(user="ana")
        assert (report.last_dream, report.dream_rejected, report.dream_left) == (run.id, 1, 1)
        assert [r.content for r in report.dream_refused] == ["Likes jazz a lot"]
        told = next(a for a in report.advice if a.startswith("the last dream"))
        assert "rejected 1 line its engine proposed" in told and "told 1 entry that left MEMORY.md" in told
        assert "could not take in 1 line written in MEMORY.md by hand, so it is no longer there: “Likes jazz a lot” " \
               "(not a list item)" in told
        assert told.endswith("`reverie diary --user ana --date 2026-11-17` tells each with why")
        assert report.healthy  # worth knowing, not a sign of ill health
        shown = " ".join(CliRunner().invoke(app, ["health", "--user", "ana", "--home", str(home)]).output.split())
        assert "last dream: not in MEMORY.md 1 rejected, 1 written by hand, not taken in, 1 left since it was " \
               "last written" in shown
        # a later run skipped as having nothing new still takes hand edits in first: what it could
        # not take in is told in health and in a diary of its own
        edit_text(home / "users" / "ana" / "MEMORY.md", "## Identity\n", "## Identity\n\nLikes blues too\n")
        skipped = mem.dream(user="ana", days=3, now=day(2, 23))
        assert skipped.status == "skipped" and skipped.report["refused"]
        report = mem.health(user="ana")
        assert [r.content for r in report.dream_refused] == ["Likes jazz a lot", "Likes blues too"]
        assert "`reverie diary --user ana --date 2026-11-17` and `reverie diary --user ana --date 2026-11-18`" \
            in report.advice[0]
        assert "“Likes blues too” (not a list item" in mem.diaries(user="ana")["2026-11-18"]
        assert "Then I did not dream: nothing changed since the last dream" in mem.diaries(user="ana")["2026-11-18"]
    finally:
        mem.close()


def test_a_dream_tells_a_line_moved_under_a_heading_it_does_not_know_and_a_profile_line_deleted(mem, home):
    mem.remember("Lives in Porto", user="ana", category="identity")
    mem.set_profile("user.personalContext", "Has a cat named Miso", user="ana")
    night(mem, 0)
    path = home / "users" / "ana" / "MEMORY.md"
    edit_text(path, "## Identity\n", "## My goals\n")
    edit_text(path, "- **Personal Context:** Has a cat named Miso\n", "")
    run = night(mem, 1)
    assert [(e["content"], e["reason"]) for e in run.report["hand_edits"]] == [
        ("Lives in Porto", "moved to Other (written under “## My goals”, no heading of MEMORY.md)"),
        ("Personal Context", "profile line deleted")]
    assert "moved to Other (written under “## My goals”, no heading of MEMORY.md) “Lives in Porto” and profile line " \
           "deleted “Personal Context”" in diary(mem)


def test_a_dream_that_fails_still_tells_the_hand_written_line_it_could_not_take_in(home, fake_openai):
    mem = llm_memory(home, fake_openai)
    try:
        mem.remember("Prefers tea over coffee", user="ana", category="preference")
        fake_openai.respond_by_step({"distill": lambda body: {"entries": kept(distill_input(body))}})
        night(mem, 0)
        edit_text(home / "users" / "ana" / "MEMORY.md", "## Preferences\n", "## Preferences\n\nLikes jazz a lot\n")
        fake_openai.respond_by_step({"distill": Reply.error(400, "model not found")})
        run = mem.dream(user="ana", days=3, force=True, now=day(1, 23))
        assert run.status == "failed"
        assert "Likes jazz a lot" not in mem.memory_md(user="ana")  # the sync before the engine wrote it again
        assert [r["content"] for r in run.report["refused"]] == ["Likes jazz a lot"]
        told = mem.diaries(user="ana")["2026-11-17"]
        assert "I could not take in 1 line written in MEMORY.md by hand, so it is no longer there: “Likes jazz a lot”" \
            in told and "Then the dream failed, and changed nothing more: " in told
        report = mem.health(user="ana")
        assert [r.content for r in report.dream_refused] == ["Likes jazz a lot"] and report.dream_error
    finally:
        mem.close()
