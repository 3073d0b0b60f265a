"""The learning line: queue, fact rules, profile updates, engines, redaction on every write path."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app
from reverie.models import Fact, Provenance
from tests.fake_openai import Reply

AT = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)


def _openai(home, fake, llm=None, background=False, **extra):
    return Memory(home, background=background, engine="openai", llm={
        "base_url": fake.base_url, "model": "fake-model", "max_retries": 0, "breaker_seconds": 0, **(llm or {})}, **extra)


def _extraction(**overrides):
    base = {"user": {}, "history": {}, "newFacts": [], "factsToReinforce": [], "factsToRemove": [], "tags": []}
    base.update(overrides)
    return base


SUMMARY = {"summary": "Ana talked about her setup", "overview": "Ana described her tools.", "tags": ["tooling"],
           "scene": "work", "sub_scene": "coding"}
NO_TAGS = {"relations": [], "activate": ["tooling"], "deprecate": []}


# ---------------------------------------------------------------- queue

def test_queue_waits_for_the_debounce_and_flush_drains_it(home):
    mem = Memory(home, background=False, debounce_seconds=3600)
    mem.add([{"role": "user", "content": "I prefer tabs over spaces in Go code"}], user="ana", thread="a")
    mem.add([{"role": "user", "content": "My goal is to run a marathon in May"}], user="ana", thread="a")
    assert mem.learner.pending() == 2
    assert mem.facts(user="ana") == []
    assert mem.flush() == 2
    assert mem.learner.pending() == 0
    assert len(mem.facts(user="ana")) == 2
    mem.close()


def test_updates_for_one_key_merge_into_one_batch(home, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "extract": _extraction(), "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, debounce_seconds=3600)
    for text in ("first message about my editor", "second message about my editor"):
        mem.add([{"role": "user", "content": text}], user="ana", thread="t1")
    mem.flush()
    extracts = [r for r in fake_openai.chat_requests if r.step == "extract"]
    assert len(extracts) == 1  # one batch for (ana, None, t1)
    assert "first message" in extracts[0].message("user") and "second message" in extracts[0].message("user")
    mem.close()


def test_background_worker_learns_after_the_debounce(home):
    mem = Memory(home, background=True, debounce_seconds=0.2)
    mem.add([{"role": "user", "content": "I prefer dark mode in every editor"}], user="ana")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not mem.facts(user="ana"):
        time.sleep(0.05)
    assert mem.facts(user="ana"), "the worker should have learned within the deadline"
    mem.close()


def test_close_drains_the_queue(home):
    mem = Memory(home, background=True, debounce_seconds=3600)
    mem.add([{"role": "user", "content": "I prefer tea over coffee in the morning"}], user="ana")
    mem.close()
    again = Memory(home, background=False)
    assert again.facts(user="ana")
    assert again.learner.pending() == 0
    again.close()


def test_trivial_turns_are_skipped(mem):
    for text in ("ok", "thanks!", "好的"):
        mem.add([{"role": "user", "content": text}], user="ana")
    mem.flush()
    assert mem.facts(user="ana") == []
    assert all(e.learned for e in mem.episodes(user="ana"))
    assert mem.store.list_notes("ana") == []


def test_long_messages_are_clipped_head_and_tail(home, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "extract": _extraction(), "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, max_message_chars=400)
    text = "HEADSTART " + "filler words here " * 500 + " TAILEND"
    mem.add([{"role": "user", "content": text}], user="ana")
    mem.flush()
    sent = [r for r in fake_openai.chat_requests if r.step == "extract"][0].message("user")
    assert "HEADSTART" in sent and "TAILEND" in sent and "[…]" in sent
    assert len(sent) < len(text)
    mem.close()


# ---------------------------------------------------------------- fact rules (scripted engine)

def test_facts_below_the_confidence_threshold_are_dropped(home, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(newFacts=[
        {"content": "Uses helix as editor", "category": "preference", "confidence": 0.9},
        {"content": "Might like Rust", "category": "preference", "confidence": 0.4},
    ])})
    mem = _openai(home, fake_openai)
    mem.add([{"role": "user", "content": "I use helix. Rust looks fun maybe."}], user="ana")
    mem.flush()
    assert [f.content for f in mem.facts(user="ana")] == ["Uses helix as editor"]
    fact = mem.facts(user="ana")[0]
    assert fact.status == "pending" and fact.provenance.origin == "learned" and fact.provenance.episodes
    # not lost without a word: health counts what was not kept, and why
    report = mem.health(user="ana")
    assert report.facts_skipped == {"below fact_confidence_threshold": 1}
    assert any("1 change(s) the engine proposed to the facts were not made (1 below fact_confidence_threshold" in a
               for a in report.advice)
    assert report.pending_facts == 1
    mem.close()


def test_temporary_state_is_not_a_fact(home, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(newFacts=[
        {"content": "The server is on port 3000", "category": "context", "confidence": 0.9},
        {"content": "服务器现在在 3000 端口", "category": "context", "confidence": 0.9},
        {"content": "Deploys with blue-green releases", "category": "behavior", "confidence": 0.9},
    ])})
    mem = _openai(home, fake_openai)
    mem.add([{"role": "user", "content": "server on 3000 today; we deploy blue-green"}], user="ana")
    mem.flush()
    assert [f.content for f in mem.facts(user="ana")] == ["Deploys with blue-green releases"]
    assert mem.health(user="ana").facts_skipped == {"temporary state": 2}
    mem.add([{"role": "user", "content": "the server moved to port 4000 today"}], user="ana")
    mem.flush()
    assert mem.health(user="ana").facts_skipped == {"temporary state": 4}  # counted so far
    mem.close()


def test_a_near_duplicate_reinforces_the_existing_fact(home, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(newFacts=[
        {"content": "Prefers trash over rm for deleting files", "category": "preference", "confidence": 0.9}])})
    mem = _openai(home, fake_openai)
    existing = mem.remember("Prefers trash over rm when deleting files", user="ana", category="preference")
    mem.add([{"role": "user", "content": "again: trash, not rm"}], user="ana")
    mem.flush()
    facts = mem.facts(user="ana")
    assert len(facts) == 1 and facts[0].id == existing.id and facts[0].uses == 1
    mem.close()


def test_engine_reinforce_and_remove_lists_are_applied(home, fake_openai):
    mem = _openai(home, fake_openai)
    keep = mem.remember("Works at a logistics startup", user="ana", category="identity")
    drop = mem.remember("Uses neovim daily", user="ana", category="preference")
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(
        newFacts=[{"content": "Uses helix daily", "category": "preference", "confidence": 0.95}],
        factsToReinforce=[keep.id],
        factsToRemove=[{"id": drop.id, "reason": "switched to helix"}],
    )})
    mem.add([{"role": "user", "content": "No, actually I switched to helix, not neovim."}], user="ana")
    mem.flush()
    assert mem.fact(keep.id).uses == 1
    dropped = mem.fact(drop.id)
    assert dropped.status == "archived" and dropped.superseded_by
    assert mem.fact(dropped.superseded_by).content == "Uses helix daily"
    mem.close()


def test_a_removal_of_a_fact_the_conversation_does_not_talk_about_is_refused_and_counted(home, fake_openai):
    mem = _openai(home, fake_openai)
    allergy = mem.remember("Allergic to peanuts", user="ana", category="constraint")
    learned = mem.remember("Lives in Berlin", user="ana", category="context")
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(
        factsToRemove=[{"id": allergy.id, "reason": "outdated"}, {"id": learned.id, "reason": "moved"}])})
    mem.add([{"role": "user", "content": "Lunch was a salad today. I moved away from Berlin last month."}],
            user="ana")
    mem.flush()
    assert mem.fact(allergy.id).status == "consolidated"  # lunch is no word on peanuts
    assert mem.fact(learned.id).status == "archived"  # ... but Berlin was talked about
    assert mem.health(user="ana").facts_skipped == {"removal of a fact the conversation does not talk about": 1}
    mem.close()


def test_tag_governance_decides_only_about_the_tags_it_was_asked_about(home, fake_openai):
    mem = _openai(home, fake_openai)
    for tag in ("green tea", "kyoto trip"):
        mem.remember(f"Talked about {tag}", user="ana", tags=[tag])
    fake_openai.respond_by_step({"summarize": {**SUMMARY, "tags": ["espresso"]}, "extract": _extraction(),
                                 "govern_tags": {"activate": ["espresso", "billing"],
                                                 "deprecate": ["green tea", "kyoto trip"],
                                                 "relations": [{"source": "green tea", "target": "kyoto trip",
                                                                "level": "related"}]}})
    before = {t["name"]: t["status"] for t in mem.tags(user="ana")}
    mem.add(["I had an espresso this morning"], user="ana")
    mem.flush()
    status = {t["name"]: t["status"] for t in mem.tags(user="ana")}
    assert status["espresso"] == "active"  # the candidate
    assert {n: status[n] for n in before} == before and "billing" not in status  # and nothing else
    assert mem.store.relations("ana", ["green tea", "kyoto trip"]) == []  # two tags it was not shown
    mem.close()


def test_what_an_engine_says_is_redacted_before_it_is_cut_or_stored(home, fake_openai):
    secret = "ana.secret@example.com"
    mem = _openai(home, fake_openai)
    stale = mem.remember("Uses neovim daily", user="ana", category="preference")
    summary = "x" * 485 + " 4111 1111 1111 1111 " + "y" * 600  # a cut to 1,000 (head and tail) splits the card
    fake_openai.respond_by_step({"summarize": {**SUMMARY, "summary": summary, "tags": ["t" * 100_000, "tooling"]},
                                 "govern_tags": NO_TAGS, "extract": _extraction(
        newFacts=[{"content": "Uses helix daily", "category": "contact " + secret + " " + "z" * 5000,
                   "confidence": 0.9, "tags": ["u" * 5000]}],
        factsToRemove=[{"id": stale.id, "reason": f"switched, tell {secret}"}])})
    mem.add(["I use helix daily now, not neovim"], user="ana")
    mem.flush()
    [episode] = mem.episodes(user="ana")
    assert "[card]" in episode.summary and "1111 1" not in episode.summary
    assert all(len(t) <= 200 for t in episode.tags) and all(len(t["name"]) <= 200 for t in mem.tags(user="ana"))
    [helix] = [f for f in mem.facts(user="ana") if f.content == "Uses helix daily"]
    assert helix.category == "other" and len(helix.original_category) <= 200 and secret not in helix.original_category
    assert secret not in mem.fact(stale.id).archived_reason
    mem.close()


def test_a_removed_fact_links_the_new_fact_that_takes_its_place(home, fake_openai):
    mem = _openai(home, fake_openai)
    editor = mem.remember("Uses neovim daily", user="ana", category="preference")
    city = mem.remember("Lives in Berlin", user="ana", category="context")
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(
        newFacts=[{"content": "Likes green tea", "category": "preference", "confidence": 0.95},
                  {"content": "Uses helix daily", "category": "preference", "confidence": 0.95}],
        factsToRemove=[{"id": editor.id, "reason": "switched to helix"},
                       {"id": city.id, "reason": "moved away"}],
    )})
    mem.add([{"role": "user", "content": "I like green tea. I switched to helix. I moved away from Berlin."}],
            user="ana")
    mem.flush()
    # of the same category, the one that shares its words; nothing relates to the city: no link
    assert mem.fact(mem.fact(editor.id).superseded_by).content == "Uses helix daily"
    gone = mem.fact(city.id)
    assert gone.status == "archived" and gone.archived_reason == "moved away" and gone.superseded_by is None
    mem.close()


def test_a_reinforced_fact_remembers_the_episodes_and_turns_that_said_it_again(home, fake_openai):
    mem = _openai(home, fake_openai)
    keep = mem.remember("Works at a logistics startup", user="ana", category="identity")
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS,
                                 "extract": _extraction(factsToReinforce=[keep.id])})
    talk = [
        {"role": "user", "content": "The weather turned cold this week.", "id": "t1"},
        {"role": "assistant", "content": "Stay warm.", "id": "t2"},
        {"role": "user", "content": "Busy days: I still work at the logistics startup.", "id": "t3"},
        {"role": "assistant", "content": "Sounds busy.", "id": "t4"},
        {"role": "user", "content": "I baked bread on Sunday.", "id": "t5"},
        {"role": "assistant", "content": "Yum.", "id": "t6"},
    ]
    mem.add(talk, user="ana")
    mem.flush()
    said_again = next(e for e in mem.episodes(user="ana", limit=None) if "t3" in e.source_ids)
    fact = mem.fact(keep.id)
    assert fact.uses == 1
    # the one episode, and the one turn, whose words hold it: not every episode of the batch
    assert fact.provenance.episodes == [said_again.id] and fact.provenance.source_ids == ["t3"]
    mem.close()


def test_a_near_duplicate_new_fact_gives_the_fact_it_repeats_its_turns(mem):
    mem.add([{"role": "user", "content": "I prefer tea over coffee in the morning.", "id": "a1"},
             {"role": "assistant", "content": "Noted.", "id": "a2"}], user="ana", thread="one")
    mem.flush()
    [fact] = [f for f in mem.facts(user="ana", status="pending") if "tea" in f.content]
    mem.add([{"role": "user", "content": "Remember, I prefer tea over coffee in the morning.", "id": "b1"},
             {"role": "assistant", "content": "Sure.", "id": "b2"}], user="ana", thread="two")
    mem.flush()
    again = mem.fact(fact.id)
    assert again.uses == 1 and again.provenance.source_ids == ["a1", "b1"]
    assert len(again.provenance.episodes) == 2


def test_capacity_archives_the_weakest_but_keeps_corrections(home):
    mem = Memory(home, background=False, fact_capacity=3)
    # learned facts (capacity never evicts what a person stated: see test_capacity.py)
    facts = [Fact(user="ana", content="Never deploy on Fridays", category="correction", confidence=0.1)]
    facts += [Fact(user="ana", content=f"Project {word} uses codename {word}{i}", confidence=0.5 + i / 10)
              for i, word in enumerate(["alpha", "bravo", "charlie", "delta"])]
    with mem.store.transaction():
        for fact in facts:
            fact.status, fact.provenance = "consolidated", Provenance(origin="learned")
            mem.ctx.facts.index_fact(fact, [])
    mem.ctx.facts.enforce_capacity("ana", datetime.now(timezone.utc))
    live = mem.facts(user="ana", status="consolidated")
    archived = mem.facts(user="ana", status="archived")
    assert len(live) == 3
    assert any(f.category == "correction" for f in live)
    assert [f.archived_reason for f in archived] == ["over capacity", "over capacity"]
    assert "alpha" in " ".join(f.content for f in archived)
    mem.close()


def test_profile_updates_only_with_should_update(home, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(user={
        "workContext": {"summary": "Backend engineer", "shouldUpdate": True},
        "cognitiveStyle": {"summary": "Likes chit-chat", "shouldUpdate": False},
    })})
    mem = _openai(home, fake_openai)
    mem.add([{"role": "user", "content": "I'm a backend engineer"}], user="ana")
    mem.flush()
    profile = mem.profile(user="ana")
    assert profile.user.work_context.summary == "Backend engineer"
    assert profile.user.cognitive_style.summary == ""
    mem.close()


def test_a_talk_among_several_named_people_never_writes_the_profile_whatever_the_model_says(home, fake_openai):
    # the profile describes one person: in a talk of Jon and Gina, neither marked as the
    # user, a model's "works as a banker" is no one's profile; the facts name whose they are
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(
        user={"workContext": {"summary": "Works as a banker", "shouldUpdate": True}},
        history={"recentMonths": {"summary": "Jon lost his job and opened a dance studio", "shouldUpdate": True}},
        newFacts=[{"content": "Jon: works as a banker", "category": "identity", "confidence": 0.9}],
    )})
    mem = _openai(home, fake_openai)
    mem.add([{"speaker": "Jon", "content": "I work as a banker."}, {"speaker": "Gina", "content": "Nice!"}], user="ana")
    mem.flush()
    profile = mem.profile(user="ana")
    assert profile.user.work_context.summary == ""
    assert profile.history.recent_months.summary == "Jon lost his job and opened a dance studio"  # what happened
    assert [f.content for f in mem.facts(user="ana")] == ["Jon: works as a banker"]
    system = next(r for r in fake_openai.chat_requests if r.step == "extract").message("system")
    assert "The user is Gina, Jon" in system and "`user` profile sections stay unchanged" in system
    # the same model answer for the user's own turn is theirs
    with mem.turn("I work as a banker.", user="ana") as turn:
        turn.complete("Noted.")
    mem.flush()
    assert mem.profile(user="ana").user.work_context.summary == "Works as a banker"
    mem.close()


def test_the_heuristic_profile_comes_from_the_user_s_lines_only(home):
    with Memory(home, background=False) as mem:
        # two named people, neither marked as the user: facts for each, named; no profile
        mem.add([{"speaker": "Jon", "content": "I work as a banker at a big firm."},
                 {"speaker": "Gina", "content": "I work as a designer at a small studio."}], user="ana", thread="t1")
        mem.flush(user="ana")
        facts = sorted(f.content for f in mem.facts(user="ana"))
        assert facts == ["Gina: Works as a designer at a small studio", "Jon: Works as a banker at a big firm"]
        assert mem.profile(user="ana").user.work_context.summary == ""
        # one of them marked as the user: theirs is the profile, the other's is not
        mem.add([{"speaker": "Jon", "role": "user", "content": "I live in Lisbon now."},
                 {"speaker": "Gina", "content": "I live in Porto now."}], user="ana", thread="t2")
        mem.flush(user="ana")
        personal = mem.profile(user="ana").user.personal_context.summary
        assert "Lisbon" in personal and "Porto" not in personal
        # a talk of one named speaker is theirs
        mem.add([{"speaker": "Jon", "content": "I work as a pilot for a small airline."}], user="bo", thread="t3")
        mem.flush(user="bo")
        assert "pilot" in mem.profile(user="bo").user.work_context.summary


@pytest.mark.parametrize("order", ["newer stored first", "both in one ingest"])
def test_history_stored_out_of_order_keeps_the_value_said_last(mem, tmp_path, order):
    hamburg = [{"role": "user", "content": "I live in Hamburg now.", "at": "2026-03-23T09:00:00Z"},
               {"role": "assistant", "content": "Ok."}]
    berlin = [{"role": "user", "content": "I live in Berlin.", "at": "2026-03-02T09:00:00Z"},
              {"role": "assistant", "content": "Ok."}]
    if order == "newer stored first":
        for thread, talk in (("t2", hamburg), ("t1", berlin)):
            mem.add(talk, user="ana", thread=thread)
            mem.flush()
    else:
        path = tmp_path / "history.json"
        path.write_text(json.dumps({"conversations": [{"thread": "t2", "messages": hamburg},
                                                      {"thread": "t1", "messages": berlin}]}), encoding="utf-8")
        mem.ingest(path, user="ana")
    (live,) = mem.facts(user="ana")
    (old,) = mem.facts(user="ana", status="archived")
    assert (live.content, old.content) == ("Lives in Hamburg now", "Lives in Berlin")
    assert old.superseded_by == live.id and old.archived_reason == "contradicted by a newer fact"
    assert mem.profile(user="ana").user.personal_context.summary == "Lives in Hamburg now"


def test_a_learned_fact_keeps_the_dates_a_relative_time_meant_when_it_was_said(mem):
    mem.add([{"role": "user", "content": "Big news: we moved to Hamburg last weekend."},
             {"role": "assistant", "content": "Congratulations!"}], user="ana", at=datetime(2026, 3, 23, 9, tzinfo=timezone.utc))
    mem.flush()
    assert [f.content for f in mem.facts(user="ana")] == ["Moved to Hamburg on the weekend of 21-22 March 2026"]


def test_who_the_user_lives_with_stays_when_the_city_changes(mem):
    t0 = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
    for days, text in [(0, "I live in Berlin with my partner Jonas."), (21, "I live in Hamburg now.")]:
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Ok."}],
                user="ana", thread=f"t{days}", at=t0 + timedelta(days=days))
        mem.flush()
    assert sorted(f.content for f in mem.facts(user="ana")) == ["Jonas is their partner", "Lives in Hamburg now"]
    # not a partner any more
    mem.add([{"role": "user", "content": "I broke up with my girlfriend Anna."}], user="ana", thread="t9")
    mem.flush()
    assert not any("Anna" in f.content for f in mem.facts(user="ana"))


@pytest.mark.parametrize("newer, older, live, profile", [
    ("I moved to Munich", "I moved to Hamburg", "Moved to Munich", "Lives in Munich"),
    ("I work at Globex now", "I work at Acme", "Works at Globex now", "Works at Globex now"),
    ("我搬到北京了", "我住在上海", "住在北京", "住在北京"),
])
def test_an_older_talk_stored_later_takes_back_neither_value_nor_profile(mem, newer, older, live, profile):
    for thread, text, month in (("t1", newer, 6), ("t2", older, 4)):
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Ok."}], user="ana",
                thread=thread, at=datetime(2026, month, 1, 12, tzinfo=timezone.utc))
        mem.flush()
    assert [f.content for f in mem.facts(user="ana")] == [live]
    assert profile in {s.summary for s in mem.profile(user="ana").sections().values()}


def test_facts_an_engine_s_extraction_dropped_are_counted_in_health(home, fake_openai):
    many = [{"content": f"Collects stamp series number {n}", "category": "preference", "confidence": 0.9,
             "tags": [], "sources": []} for n in range(45)]
    invented = {"content": "Owns a yacht", "category": "context", "confidence": 0.9, "tags": [], "sources": ["m99"]}
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS,
                                 "extract": _extraction(newFacts=[invented, *many])})
    mem = _openai(home, fake_openai)
    mem.add([{"role": "user", "content": "I collect stamps, a lot of series"}], user="ana")
    mem.flush()
    assert 1 <= len(mem.facts(user="ana")) <= 40  # (what the judge makes of the numbered lines is its own)
    skipped = mem.health(user="ana").facts_skipped
    assert skipped == {"cited no line of the conversation": 1, "over the limit of 40 new facts an extraction": 5}
    mem.close()


def test_a_speaker_s_turn_of_its_own_in_a_talk_among_people_keeps_their_name(mem, tmp_path):
    talk = tmp_path / "talk.txt"
    talk.write_text("Jon: I live in Lisbon and work as a designer.\nMaria: What do you do on weekends?\n"
                    "Jon: I love running by the river.\n", encoding="utf-8")
    mem.ingest(talk, user="ana")
    facts = sorted(f.content for f in mem.facts(user="ana"))
    assert "Jon: Loves running by the river" in facts and all(f.startswith("Jon: ") for f in facts)


def test_a_model_s_overlong_profile_section_keeps_its_newest_sentences_and_says_so(home, fake_openai):
    sentences = [f"Worked on project {n} for the billing team." for n in range(40)]
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(user={
        "workContext": {"summary": " ".join(sentences), "shouldUpdate": True},
    })})
    mem = _openai(home, fake_openai)
    mem.add([{"role": "user", "content": "I'm a backend engineer"}], user="ana")
    mem.flush()
    work = mem.profile(user="ana").user.work_context.summary
    assert 0 < len(work) <= mem.settings.max_profile_chars and work.endswith(sentences[-1])
    assert sentences[0] not in work
    assert mem.health(user="ana").profile_trimmed["user.workContext"] == 40 - len(work.split(". "))
    mem.close()


def test_preferred_language_is_passed_to_the_engine(home, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "extract": _extraction(), "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai)
    mem.add([{"role": "user", "content": "回答的时候先给结论，不要长铺垫。"}], user="ana")
    mem.flush()
    extract = [r for r in fake_openai.chat_requests if r.step == "extract"][0]
    assert "zh-Hans" in extract.message("system") + extract.message("user")
    mem.close()


# ---------------------------------------------------------------- failures

def test_a_broken_engine_changes_nothing_and_the_batch_is_retried(home, fake_openai):
    fake_openai.respond_by_step({"summarize": Reply.malformed(), "extract": Reply.error(500), "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai)
    ep = mem.add([{"role": "user", "content": "I prefer Go for backend services"}], user="ana")[0]
    assert mem.flush() == 0
    stored = mem.episode(ep.id)
    assert not stored.learned and stored.summary == ""
    assert mem.facts(user="ana") == [] and mem.store.list_tags("ana") == []
    assert mem.learner.pending() == 1  # queued again with a backoff
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(
        newFacts=[{"content": "Prefers Go for backend services", "category": "preference", "confidence": 0.9}])})
    assert mem.flush() == 1
    assert mem.episode(ep.id).learned
    assert [f.content for f in mem.facts(user="ana")] == ["Prefers Go for backend services"]
    mem.close()


# ---------------------------------------------------------------- secrets

SECRETS = ["ana@example.com", "+1 415-555-0132", "4111 1111 1111 1111", "sk-abcdefghijklmnopqrstuvwx123456",
           "hunter2secret"]


def _assert_no_secret(mem, home):
    """Every text cell of every table (full-text indexes, tags, journals included) and every
    markdown file."""
    import sqlite3

    conn = sqlite3.connect(home / "reverie.db")
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    dump = ""
    for table in tables:
        for row in conn.execute(f'SELECT * FROM "{table}"'):
            dump += " ".join(str(v) for v in row if isinstance(v, str)) + "\n"
    conn.close()
    for path in home.rglob("*.md"):
        dump += path.read_text(encoding="utf-8")
    assert "episodes_fts" in tables and "tags" in tables
    for secret in SECRETS:
        assert secret not in dump, secret


def test_no_secret_survives_any_write_path_even_when_the_engine_returns_it(home, fake_openai):
    leak = "mail ana@example.com, call +1 415-555-0132, card 4111 1111 1111 1111, key sk-abcdefghijklmnopqrstuvwx123456"
    fake_openai.respond_by_step({
        "summarize": {"summary": leak, "overview": leak, "tags": ["contact"], "scene": "work"},
        "govern_tags": NO_TAGS,
        "extract": _extraction(
            user={"personalContext": {"summary": leak, "shouldUpdate": True}},
            newFacts=[{"content": f"Contact: {leak}", "category": "identity", "confidence": 0.95}],
        ),
    })
    mem = _openai(home, fake_openai)
    mem.add([{"role": "user", "content": f"{leak}; my password is hunter2secret"}], user="ana")
    mem.add([{"speaker": "ana@example.com", "content": "hello from a named speaker"},
             {"speaker": "+1 415-555-0132", "role": "4111 1111 1111 1111", "content": "hi"}],
            user="ana", thread="ana@example.com", agent="+1 415-555-0132")
    with mem.turn(f"remember {leak}", user="ana", thread="sk-abcdefghijklmnopqrstuvwx123456") as turn:
        turn.complete(f"ok {leak}")
    from reverie import InvalidInput

    with pytest.raises(InvalidInput, match="personal data"):  # a tag is kept as it is: refused, not kept
        mem.remember(f"Fact with {leak}", user="ana", tags=["ana@example.com", "contact"])
    with pytest.raises(InvalidInput, match="personal data"):
        mem.add_knowledge("Contacts", leak, user="ana", tags=["password: hunter2secret"])
    mem.remember(f"Fact with {leak}", user="ana", tags=["contact"], category="ana@example.com",
                 agent="ana@example.com")
    mem.set_profile("user.topOfMind", leak, user="ana")
    mem.add_knowledge("Contacts", leak, user="ana", project="ana@example.com")
    mem.import_({"version": 1, "facts": [{"content": f"imported {leak}", "tags": ["ana@example.com"]}]}, user="ana")
    mem.trim([{"role": "user", "content": leak}], user="ana")
    mem.flush()
    mem.dream(user="ana", days=30, force=True)
    _assert_no_secret(mem, home)
    mem.close()


# ---------------------------------------------------------------- heuristic, end to end

def test_english_conversation_teaches_facts_tags_and_profile(mem):
    mem.add([
        {"role": "user", "content": "I'm a backend engineer at a logistics startup."},
        {"role": "assistant", "content": "Nice!"},
        {"role": "user", "content": "I prefer trash over rm for deleting files."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "We decided to use logical replication for the Postgres cutover."},
        {"role": "assistant", "content": "Good call."},
        {"role": "user", "content": "Always give me the conclusion first, then the details."},
        {"role": "assistant", "content": "Will do."},
    ], user="ana", at=AT)
    mem.flush()
    facts = {f.category: f.content for f in mem.facts(user="ana")}
    assert "trash" in facts.get("preference", "")
    assert "logical replication" in facts.get("decision", "")
    assert "conclusion first" in facts.get("cognitive", "").lower()
    profile = mem.profile(user="ana")
    assert "backend engineer" in profile.user.work_context.summary.lower()
    assert "conclusion first" in profile.user.cognitive_style.summary.lower()
    assert mem.store.list_tags("ana", status="active")


def test_chinese_conversation_sets_cognitive_style(mem):
    mem.add([
        {"role": "user", "content": "回答的时候先给结论，不要长铺垫。"},
        {"role": "assistant", "content": "好的。"},
        {"role": "user", "content": "我喜欢周末去爬山。"},
        {"role": "assistant", "content": "不错。"},
    ], user="li", at=AT)
    mem.flush()
    facts = mem.facts(user="li")
    cognitive = [f.content for f in facts if f.category == "cognitive"]
    assert cognitive and "先给结论" in cognitive[0]
    assert any("爬山" in f.content and f.category == "preference" for f in facts)
    assert "先给结论" in mem.profile(user="li").user.cognitive_style.summary
    assert mem.store.list_tags("li")


def test_cli_ingest_with_the_openai_engine(home, tmp_path, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(
        user={"workContext": {"summary": "Runs the data platform team", "shouldUpdate": True}},
        newFacts=[{"content": "Runs the data platform team", "category": "identity", "confidence": 0.9}])})
    convo = tmp_path / "c.json"
    convo.write_text(json.dumps([{"role": "user", "content": "I run the data platform team."}]), encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(convo), "--user", "ana", "--home", str(home), "--engine", "openai",
                                 "--base-url", fake_openai.base_url, "--model", "fake-model", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["learned"] == 1
    facts = json.loads(runner.invoke(app, ["facts", "--user", "ana", "--home", str(home), "--json"]).output)
    assert [f["content"] for f in facts] == ["Runs the data platform team"]
    profile = json.loads(runner.invoke(app, ["profile", "--user", "ana", "--home", str(home), "--json"]).output)
    assert profile["user"]["workContext"]["summary"] == "Runs the data platform team"


def test_learning_keeps_what_was_written_while_the_engine_worked(mem):
    ep = mem.add([{"role": "user", "content": "I prefer green tea in the afternoon"}], user="ana")[0]
    engine = mem.engines.summarize
    original = engine.summarize

    def slow_summarize(request):
        mem.feedback(ep.id, "rejected", reason="wrong")  # another request lands meanwhile
        return original(request)

    engine.summarize = slow_summarize
    try:
        assert mem.flush() == 1
    finally:
        engine.summarize = original
    stored = mem.episode(ep.id)
    assert stored.learned and stored.summary
    assert stored.feedback is not None and stored.feedback.status == "rejected"


def test_a_long_talk_reaches_the_engine_in_bounded_batches(home, fake_openai):
    fake_openai.respond_by_step({"summarize": SUMMARY, "extract": _extraction(), "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, learn_batch_chars=1000)
    mem.add([{"role": "user", "content": f"message {i}: " + "words " * 40} for i in range(20)],
            user="ana", group="message")
    assert mem.flush() == 20
    extracts = [r for r in fake_openai.chat_requests if r.step == "extract"]
    assert len(extracts) >= 5
    assert all(len(r.message("user")) < 4000 for r in extracts)
    mem.close()


def test_a_failed_batch_keeps_the_rest_for_later(home, fake_openai):
    calls = {"n": 0}

    def extract(body):
        calls["n"] += 1
        return Reply.error(500) if calls["n"] == 2 else _extraction()

    fake_openai.respond_by_step({"summarize": SUMMARY, "extract": extract, "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, learn_batch_chars=300)
    mem.add([{"role": "user", "content": f"note {i}: " + "words " * 40} for i in range(4)],
            user="ana", group="message")
    assert mem.flush() == 1  # the first batch landed, the second failed and stopped the run
    assert sum(e.learned for e in mem.episodes(user="ana")) == 1
    assert mem.learner.pending() == 3
    assert mem.flush() == 3
    mem.close()


def test_daily_notes_tell_what_the_user_said_not_the_agents_answer(mem):
    mem.add([{"role": "user", "content": "No, actually I switched to helix last month, not neovim."},
             {"role": "assistant", "content": "Thanks for the correction: helix it is, I will remember that carefully."}],
            user="ana", at=AT)
    mem.flush()
    notes = mem.store.list_notes("ana")
    assert len(notes) == 1 and "helix last month" in notes[0].content
    assert not notes[0].content.lower().startswith("assistant")


def test_a_flush_learns_the_threads_of_one_user_in_one_batch(mem):
    calls = []
    extract = mem.engines.extract.extract
    mem.engines.for_step("extract")  # build it, then count its calls
    engine = mem.engines.extract

    def counting(request):
        calls.append(len(set(request.episode_ids)))  # the real engine answers; we count its batches
        return extract(request)

    engine.extract = counting  # type: ignore[method-assign]
    for i, thread in enumerate(("work", "home", "trip")):
        mem.add([{"role": "user", "content": f"I moved the standup to Tuesday number {i}"},
                 {"role": "assistant", "content": "Noted."}], user="ana", thread=thread)
    mem.add([{"role": "user", "content": "I like green tea"}], user="bo", thread="work")
    assert mem.flush() == 4
    assert sorted(calls) == [1, 3]  # ana's three threads together, bo's alone
    assert all(e.learned for e in mem.episodes(user="ana"))


def test_failed_learning_is_an_error_exit_and_unhealthy_not_silence(tmp_path):
    """A dead endpoint: ingest and flush exit 1 saying how many episodes wait and why; health is
    unhealthy with the error; nothing is lost (a later flush with a working engine learns them)."""
    home = tmp_path / "home"
    talk = tmp_path / "talk.jsonl"
    talk.write_text('{"role": "user", "content": "I moved to Lisbon in May"}\n'
                    '{"role": "assistant", "content": "Nice!"}\n', encoding="utf-8")
    dead = ["--engine", "openai", "--base-url", "http://127.0.0.1:9/v1", "--home", str(home)]
    result = CliRunner().invoke(app, ["ingest", str(talk), "--user", "ana", *dead])
    assert result.exit_code == 1
    assert "1 episode(s) wait to be learned" in " ".join(result.output.split())
    flushed = CliRunner().invoke(app, ["flush", "--user", "ana", "--json", *dead])
    assert flushed.exit_code == 1 and json.loads(flushed.stdout)["waiting"] == 1
    with Memory(home, background=False) as memory:
        report = memory.health(user="ana")
        assert not report.healthy and report.learning_error
        assert any("wait to be learned" in r for r in report.reasons)
    recovered = CliRunner().invoke(app, ["flush", "--user", "ana", "--home", str(home)])
    assert recovered.exit_code == 0 and "learned from 1" in recovered.output


@pytest.fixture
def mem(bmem):
    """Each test of this module runs on SQLite and on PostgreSQL."""
    return bmem


# ---------------------------------------------------------------- the collector during a batch

def test_the_collector_waits_while_an_offline_batch_is_learned_and_runs_again_after(mem, monkeypatch):
    import gc

    seen = []
    engine = mem.ctx.engines.for_step("summarize")
    summarize, put = engine.summarize, mem.store.put_episode
    monkeypatch.setattr(engine, "summarize", lambda request: seen.append(("engine", gc.isenabled())) or summarize(request))
    monkeypatch.setattr(mem.store, "put_episode",
                        lambda ep, **kw: seen.append(("write", gc.isenabled())) or put(ep, **kw))
    mem.add([{"role": "user", "content": "I prefer Go for backend services"}], user="ana")
    assert gc.isenabled() and mem.flush() == 1
    assert gc.isenabled()
    assert ("engine", False) in seen and ("write", False) in seen and ("engine", True) not in seen


def test_the_collector_keeps_running_while_a_batch_waits_on_an_endpoint(home, fake_openai, monkeypatch):
    import gc

    seen: list[object] = []

    def summary(body):  # the endpoint is asked while the collector runs
        seen.append(("asked", gc.isenabled()))
        return SUMMARY
    fake_openai.respond_by_step({"summarize": summary, "govern_tags": NO_TAGS, "extract": _extraction()})
    mem = _openai(home, fake_openai)
    mem.add([{"role": "user", "content": "I prefer Go for backend services"}], user="ana")
    put = mem.store.put_episode
    monkeypatch.setattr(mem.store, "put_episode", lambda ep, **kw: seen.append(("write", gc.isenabled())) or put(ep, **kw))
    assert mem.flush() == 1 and gc.isenabled()
    assert ("asked", True) in seen and ("write", False) in seen  # the writes themselves ran with it paused
    mem.close()


# ---------------------------------------------------------------- an endpoint's calls in flight at once

class _InFlight:
    """A responder's view of how many calls the server holds at once. Until ``expect`` calls
    have been in flight together, each call waits for that (up to ``hold`` seconds), so that
    the figure does not hang on how quickly threads happen to start."""

    def __init__(self, expect: int, hold: float = 5.0):
        import threading

        self.expect, self.hold = expect, hold
        self.now = self.most = 0
        self.steps_seen_together: set[frozenset[str]] = set()
        self._running: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, step: str, answer):
        with self._cond:
            self.now += 1
            self._running.append(step)
            self.most = max(self.most, self.now)
            self.steps_seen_together.add(frozenset(self._running))
            self._cond.notify_all()
            self._cond.wait_for(lambda: self.most >= self.expect, timeout=self.hold)
            self.now -= 1
            self._running.remove(step)
        return answer


def _said(body) -> str:
    """The text of the one message a summarize request carries."""
    request = json.loads(next(m["content"] for m in body["messages"] if m["role"] == "user"))
    return request["messages"][0]["content"]


def _own_summary(body) -> dict:
    return {**SUMMARY, "summary": f"Summary of: {_said(body)}"}


TOPICS = ["sourdough starters", "sea kayaking", "the Lisbon move", "a vintage camera", "chess openings",
          "the garden shed"]


def _one_batch(mem, user: str = "ana") -> list:
    """Six episodes of one thread, learned as one batch on the next flush."""
    return [mem.add([{"role": "user", "content": f"Let me tell you about {topic} today"}], user=user,
                    thread="t1", at=AT)[0] for topic in TOPICS]


def test_an_endpoint_summarizes_a_batch_s_episodes_up_to_llm_concurrency_at_once(home, fake_openai):
    flight = _InFlight(expect=3)
    fake_openai.respond_by_step({"summarize": lambda body: flight("summarize", _own_summary(body)),
                                 "extract": _extraction(), "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, llm={"concurrency": 3}, debounce_seconds=3600)
    episodes = _one_batch(mem)
    assert mem.flush() == 6
    assert flight.most == 3
    for ep, topic in zip(episodes, TOPICS):  # each answer landed on the episode it was asked for
        assert mem.episode(ep.id).summary == f"Summary of: Let me tell you about {topic} today"
    assert len([r for r in fake_openai.chat_requests if r.step == "summarize"]) == 6
    mem.close()


def _one_batch_watched(home, fake_openai, flight: _InFlight, concurrency: int) -> None:
    """``_one_batch`` learned by a flush, its summary and extraction calls counted by ``flight``."""
    fake_openai.respond_by_step({"summarize": lambda body: flight("summarize", _own_summary(body)),
                                 "extract": lambda body: flight("extract", _extraction()),
                                 "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, llm={"concurrency": concurrency}, debounce_seconds=3600)
    _one_batch(mem)
    assert mem.flush() == 6
    mem.close()


def test_the_extraction_is_asked_while_the_summaries_are_in_flight(home, fake_openai):
    flight = _InFlight(expect=7)  # six summaries and the extraction, within llm.concurrency
    _one_batch_watched(home, fake_openai, flight, concurrency=8)
    assert any({"summarize", "extract"} <= steps for steps in flight.steps_seen_together)


def test_the_endpoint_never_gets_more_than_llm_concurrency_calls_from_this_process(home, fake_openai):
    flight = _InFlight(expect=2)
    fake_openai.respond_by_step({"summarize": lambda body: flight("summarize", _own_summary(body)),
                                 "extract": lambda body: flight("extract", _extraction()),
                                 "govern_tags": lambda body: flight("govern_tags", NO_TAGS)})
    mem = _openai(home, fake_openai, llm={"concurrency": 2}, debounce_seconds=3600, learn_threads=3)
    for user in ("ana", "bo", "cy"):  # three users' batches at once, each wanting more calls than that
        _one_batch(mem, user=user)
    assert mem.flush() == 18
    assert flight.most == 2
    mem.close()


def test_llm_concurrency_1_asks_one_call_at_a_time(home, fake_openai):
    flight = _InFlight(expect=2, hold=0.2)
    _one_batch_watched(home, fake_openai, flight, concurrency=1)
    assert flight.most == 1


def test_one_failed_summary_among_concurrent_ones_leaves_the_whole_batch_for_later(home, fake_openai):
    def summary(body):
        return Reply.error(400, "scripted refusal") if "sea kayaking" in _said(body) else _own_summary(body)

    fake_openai.respond_by_step({"summarize": summary, "extract": _extraction(), "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, debounce_seconds=3600)
    episodes = _one_batch(mem)
    assert mem.flush() == 0
    for ep in episodes:  # nothing of the batch was written, the answers that came back included
        stored = mem.episode(ep.id)
        assert not stored.learned and stored.summary == ""
    assert mem.store.learning_backlog("ana")[0] == 6
    assert "scripted refusal" in mem.store.learning_backlog("ana")[1]
    assert mem.store.list_tags("ana") == [] and mem.learner.pending() == 6
    fake_openai.respond_by_step({"summarize": _own_summary, "extract": _extraction(), "govern_tags": NO_TAGS})
    assert mem.flush() == 6
    assert mem.episode(episodes[1].id).summary == "Summary of: Let me tell you about sea kayaking today"
    mem.close()


def test_llm_concurrency_is_a_bounded_setting(home):
    from reverie.errors import InvalidInput

    with pytest.raises(InvalidInput, match="llm.concurrency"):
        Memory(home, background=False, llm={"concurrency": 0})
    assert Memory(home, background=False).settings.llm.concurrency == 4


def test_trim_asks_an_endpoint_for_its_exchanges_summaries_at_once_and_keeps_their_order(home, fake_openai):
    flight = _InFlight(expect=3)
    fake_openai.respond_by_step({"summarize": lambda body: flight("summarize", _own_summary(body))})
    mem = _openai(home, fake_openai, llm={"concurrency": 3})
    dropped = [message for topic in TOPICS for message in (
        {"role": "user", "content": f"Let me tell you about {topic} today", "at": AT.isoformat()},
        {"role": "assistant", "content": "Go on."})]
    notes = mem.trim(dropped, user="ana", thread="t1")
    assert flight.most == 3
    assert [n.content for n in notes] == [f"Summary of: Let me tell you about {t} today" for t in TOPICS]
    assert mem.trim(dropped, user="ana", thread="t1") == []  # reported twice: nothing new, nothing asked
    assert len([r for r in fake_openai.chat_requests if r.step == "summarize"]) == 6
    mem.close()


def _learned(mem, episodes, seconds: float = 20.0) -> bool:
    """Wait (a bounded time) until the background learner has learned every one of ``episodes``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(mem.episode(ep.id).learned for ep in episodes):
            return True
        time.sleep(0.02)
    return False


def test_several_users_batches_are_learned_at_once_when_the_engines_wait_on_an_endpoint(home, fake_openai, backend):
    flight = _InFlight(expect=3)
    fake_openai.respond_by_step({"summarize": _own_summary, "extract": lambda body: flight("extract", _extraction()),
                                 "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, background=True, debounce_seconds=0.05, learn_threads=3, store=backend)
    episodes = [mem.add([{"role": "user", "content": f"Let me tell you about {topic} today"}], user=user,
                        thread="t1")[0] for user, topic in zip(("ana", "bo", "cy"), TOPICS)]
    assert _learned(mem, episodes)
    assert flight.most == 3  # three users' extractions were in flight together
    for ep, topic in zip(episodes, TOPICS):
        assert mem.episode(ep.id).summary == f"Summary of: Let me tell you about {topic} today"
    mem.close()


def test_one_user_s_batches_are_learned_one_after_another_even_with_threads_to_spare(home, fake_openai, backend):
    flight = _InFlight(expect=2, hold=0.3)
    fake_openai.respond_by_step({"summarize": _own_summary, "extract": lambda body: flight("extract", _extraction()),
                                 "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, background=True, debounce_seconds=0.05, learn_threads=4, store=backend)
    episodes = [mem.add([{"role": "user", "content": f"Let me tell you about {topic} today"}], user="ana",
                        thread=f"t{i}")[0] for i, topic in enumerate(TOPICS[:3])]
    assert _learned(mem, episodes)
    assert flight.most == 1  # each batch planned on what the one before it wrote
    mem.close()


def test_the_offline_engine_learns_one_batch_at_a_time(home):
    mem = Memory(home, background=True, debounce_seconds=0.05, learn_threads=4)
    episodes = [mem.add([{"role": "user", "content": f"I prefer {topic} over everything else"}], user=user)[0]
                for user, topic in zip(("ana", "bo", "cy"), TOPICS)]
    assert _learned(mem, episodes)
    assert mem.learner._pool is None  # no pool: the interpreter would run the batches in turn anyway
    mem.close()


def test_a_flush_learns_several_users_at_once_when_the_engines_wait_on_an_endpoint(home, fake_openai, backend):
    flight = _InFlight(expect=3)
    fake_openai.respond_by_step({"summarize": _own_summary, "extract": lambda body: flight("extract", _extraction()),
                                 "govern_tags": NO_TAGS})
    mem = _openai(home, fake_openai, debounce_seconds=3600, learn_threads=3, store=backend)
    episodes = [mem.add([{"role": "user", "content": f"Let me tell you about {topic} today"}], user=user,
                        thread="t1")[0] for user, topic in zip(("ana", "bo", "cy"), TOPICS)]
    assert mem.flush() == 3
    assert flight.most == 3
    assert all(mem.episode(ep.id).learned for ep in episodes)
    mem.close()


def test_a_batch_the_store_turns_away_as_busy_waits_in_the_queue_and_the_flush_says_so(home):
    import sqlite3
    import threading

    from reverie import StoreBusy

    with Memory(home, background=False) as mem:
        episode = mem.add([{"role": "user", "content": "I work as a nurse at the city hospital now"}], user="ana",
                          thread="t", group="message")[0]
        mem.store._busy_ms = 50  # the flush's thread opens its connection with a short wait
        writer = sqlite3.connect(home / "reverie.db", isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        raised: list[Exception] = []

        def flush() -> None:
            try:
                mem.flush(user="ana")
            except StoreBusy as exc:
                raised.append(exc)

        try:
            worker = threading.Thread(target=flush)
            worker.start()
            worker.join(30)
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        assert len(raised) == 1 and "busy, nothing was written" in str(raised[0])  # the caller hears of it
        assert not mem.episode(episode.id).learned
        assert mem.learner.pending() == 1  # the batch waits in the queue
        assert mem.flush(user="ana") == 1
        assert mem.episode(episode.id).learned
        assert mem.profile(user="ana").section("user.workContext").summary.startswith("Works as a nurse")


def test_an_imported_episode_without_its_messages_is_learned_without_failing(tmp_path):
    # an export may carry an episode's text without its messages: learning must not stop there
    with Memory(tmp_path / "home", background=False) as mem:
        envelope = {"version": 1, "user": "ana", "profile": {}, "facts": [], "notes": [], "knowledge": [],
                    "episodes": [{"id": "ep_imported1", "user": "ana", "status": "completed", "learned": False,
                                  "user_text": "I moved to Porto in May and I love the river", "reply_text": "Nice",
                                  "messages": []}]}
        assert mem.import_(envelope, user="ana")["episodes"] == 1
        assert mem.flush(user="ana") == 1
        assert mem.learning_backlog(user="ana") == (0, "")
        assert mem.episode("ep_imported1", user="ana").learned


def test_flushes_racing_over_the_same_episodes_learn_each_once_without_failing(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    with Memory(tmp_path / "home", background=False) as mem:
        for round_ in range(5):
            mem.add([{"role": "user", "content": f"I always want the conclusion first, note {round_} {j}"}
                     for j in range(30)], user="ana", group="message")
            with ThreadPoolExecutor(max_workers=3) as pool:
                for done in [pool.submit(mem.flush) for _ in range(3)]:
                    done.result()  # a flush that failed raises here
        assert mem.learning_backlog(user="ana") == (0, "")
        assert all(e.learned for e in mem.episodes(user="ana", limit=None))


def test_roles_decide_who_spoke_when_named_speakers_share_a_batch(tmp_path):
    # a turn (unnamed, role user) and an ingested talk (named speakers) learned in one batch:
    # the user's own turn is still theirs, and the assistant's named lines never are
    with Memory(tmp_path / "home", background=False) as mem:
        with mem.turn("I always want the conclusion first", user="ana", thread="t1") as turn:
            turn.complete("Noted.")
        mem.add([{"speaker": "ana", "role": "user", "content": "Hi there"},
                 {"speaker": "Bot", "role": "assistant", "content": "I live in Lisbon now."}], user="ana", thread="t2")
        mem.flush(user="ana")
        facts = [f.content for f in mem.facts(user="ana")]
        assert any("conclusion first" in f for f in facts)
        assert not any("Lisbon" in f for f in facts)
        assert "Lisbon" not in mem.profile(user="ana").user.personal_context.summary


def test_an_agents_conversation_neither_says_again_nor_takes_back_another_agents_facts(home, fake_openai):
    mem = _openai(home, fake_openai)
    theirs = mem.remember("Lives in Berlin", user="ana", agent="travel-bot", category="context")
    everyone = mem.remember("Works at Acme in Berlin", user="ana", category="context")
    fake_openai.respond_by_step({"summarize": SUMMARY, "govern_tags": NO_TAGS, "extract": _extraction(
        factsToReinforce=[theirs.id, everyone.id], factsToRemove=[{"id": theirs.id, "reason": "moved"},
                                                                 {"id": everyone.id, "reason": "moved"}])})
    mem.add(["I moved away from Berlin, I still work at Acme in Berlin"], user="ana", agent="home-bot")
    mem.flush()
    assert mem.fact(theirs.id).status == "consolidated" and mem.fact(theirs.id).uses == 0
    assert mem.fact(everyone.id).status == "consolidated" and mem.fact(everyone.id).uses == 1
    extract = next(r for r in fake_openai.requests if r.step == "extract")
    assert "Works at Acme" in extract.message("user") and "Lives in Berlin" not in extract.message("user")
    mem.close()


def test_a_notes_file_that_cannot_be_written_leaves_each_episode_learned_once(mem, home):
    """The store holds the notes: a day's file that cannot be written (here a file stands
    where the notes folder goes) is said in health, and no retry learns the episodes again."""
    blocker = home / "users" / "ana" / "memory"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("in the way", encoding="utf-8")
    at = datetime(2026, 11, 3, 9, tzinfo=timezone.utc)
    mem.add(["I work as a nurse at the city hospital", "Good to know"], user="ana", at=at)
    mem.add(["I always cycle to work", "Nice"], user="ana", thread="t2", at=at)
    assert mem.flush(user="ana") == 2
    facts = {f.id: f.uses for f in mem.store.list_facts("ana")}
    notes = mem.store.note_lines("ana", "2026-11-03")
    report = mem.health(user="ana")
    assert report.notes_unwritten == ["2026-11-03"] and not report.healthy
    assert any("notes files of 1 day(s) could not be written" in r for r in report.reasons)
    assert mem.learning_backlog(user="ana") == (0, "")
    assert mem.flush(user="ana") == 0  # nothing to learn again, and nothing learned twice
    assert {f.id: f.uses for f in mem.store.list_facts("ana")} == facts
    assert mem.store.note_lines("ana", "2026-11-03") == notes
    blocker.unlink()
    mem.flush(user="ana")  # writes what could not be written
    assert (blocker / "2026-11-03.md").read_text(encoding="utf-8").count("nurse") == 1
    assert mem.health(user="ana").notes_unwritten == []


def test_a_batch_counts_only_the_episodes_it_learned_itself(mem):
    """What a flush reports: a batch whose episodes another process learned meanwhile
    (between the read and the write) counts none of them."""
    at = datetime(2026, 11, 3, 9, tzinfo=timezone.utc)
    mem.add(["I work as a nurse at the city hospital", "Good to know"], user="ana", at=at)
    episodes = list(mem.store.get_episodes([e.id for e in mem.store.list_episodes("ana")]).values())
    assert mem.learner.learn(episodes) == 1
    assert mem.learner.learn(episodes) == 0  # read before the first learned them
    assert mem.flush(user="ana") == 0


def test_a_line_that_only_carried_a_credential_is_not_kept_as_a_fact(mem):
    at = datetime(2026, 11, 3, 9, tzinfo=timezone.utc)
    mem.add(["I prefer to log in with pw: Zq8kL2pW9x!", "Noted"], user="ana", at=at)
    mem.add(["Decided to use the api key sk-proj-abcdefghijklmnopqrstuvwxyz012345 in staging", "Ok"], user="ana",
            thread="t2", at=at)
    mem.add(["I prefer window seats on long flights", "Noted"], user="ana", thread="t3", at=at)
    mem.flush()
    contents = [f.content for f in mem.facts(user="ana", status="pending")]
    assert not [c for c in contents if "[password]" in c or "[api-key]" in c]
    assert any("window seats" in c for c in contents)
    assert mem.health(user="ana").facts_skipped.get("held a credential", 0) >= 1


@pytest.mark.parametrize("before, after, live", [
    ("I'm allergic to peanuts.", "I'm not allergic to peanuts after all, it was a misdiagnosis.",
     ["Is not allergic to peanuts"]),
    ("I have a dog named Rex.", "Rex died last week, I don't have a dog anymore.", ["Doesn't have a dog anymore"]),
    ("I'm a vegetarian.", "I'm not a vegetarian anymore.", ["Is no longer a vegetarian"]),
    ("I live in Porto.", "I don't live in Porto anymore.", ["Doesn't live in Porto anymore"]),
    ("I live in Porto.", "Actually I moved to Lisbon, not Porto.", ["Moved to Lisbon, not Porto"]),
    ("I'm vegetarian.", "I started eating fish again, so I'm pescatarian now.", ["Is pescatarian now"]),
    ("I'm married to João.", "I'm single now.", ["Is single now"]),
    ("I prefer window seats on flights.", "Actually I prefer aisle seats now.", ["Prefers aisle seats now"]),
    ("I have two kids.", "I have three kids now, our son Max was born in June.", ["Has three kids now"]),
    ("At work we decided to launch the new checkout on December 1.", "Correction: the checkout launch moved to December 8.",
     ["The checkout launch moved to December 8"]),
    ("I'm allergic to cats and dogs.", "I'm only allergic to cats, not dogs.", ["Is allergic to cats, not dogs"]),
])
def test_what_the_user_takes_back_or_changes_later_replaces_what_they_said_before(mem, before, after, live):
    first = datetime(2026, 10, 1, 9, tzinfo=timezone.utc)
    for text, at in ((before, first), (after, first + timedelta(days=30))):
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "OK."}], user="ana", at=at)
        mem.flush()
    assert [f.content for f in mem.facts(user="ana") if f.status != "archived"] == live
    archived = [f for f in mem.facts(user="ana", status="archived")]
    assert archived and all(f.archived_reason for f in archived)  # the older line is kept, archived, with why


def test_a_fact_taken_back_is_linked_to_what_took_it_back_not_to_another_new_fact_of_its_kind(tmp_path):
    """Learned in one batch with "I'm pescatarian now", "I'm not allergic to peanuts after all"
    archived "Is allergic to peanuts" with a link to "Is pescatarian now" (of its category)."""
    with Memory(tmp_path / "home", background=False) as mem:
        for text, day in (("I'm allergic to peanuts.", 2), ("I'm vegetarian.", 3)):
            mem.add([{"role": "user", "content": text}], user="sam", at=f"2026-11-0{day}T10:00:00Z")
        mem.flush()
        for text, day in (("I'm not allergic to peanuts after all, the test was wrong.", 20),
                          ("I'm pescatarian now.", 21)):
            mem.add([{"role": "user", "content": text}], user="sam", at=f"2026-11-{day}T10:00:00Z")
        mem.flush()
        every = {f.content: f for f in [*mem.facts(user="sam"), *mem.facts(user="sam", status="archived")]}
        assert every["Is allergic to peanuts"].superseded_by == every["Is not allergic to peanuts"].id
        assert every["Is vegetarian"].superseded_by == every["Is pescatarian now"].id
