"""A profile section stays a short paragraph however much is learned, and what gives way is
counted; a recall delivers the profile within its share of the budget."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from reverie.errors import InvalidInput
from reverie.profiles import fit_profile, trimmed_record
from reverie.tokens import count_tokens
from tests.edits import dreamed, edit_text

AT = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)
JOBS = ["nurse", "carpenter", "pilot", "baker", "chemist", "teacher", "plumber", "florist", "lawyer", "architect",
        "welder", "dentist", "librarian", "surveyor", "tailor", "jeweller", "geologist", "butcher", "pharmacist",
        "translator", "mechanic", "optician", "sculptor", "radiologist"]
PLACES = ["Lyon", "Porto", "Graz", "Hobart", "Bristol", "Naples", "Taipei", "Cebu", "Savannah", "Prague", "Oslo",
          "Quito", "Dakar", "Perth", "Turin", "Bergen", "Cusco", "Tartu", "Malmo", "Leeds", "Kyoto", "Split",
          "Ghent", "Aarhus"]


def test_fit_profile_keeps_the_newest_whole_parts_and_counts_the_rest():
    summary = "Works as a nurse; Lives in Lyon; Moved to Porto last spring; Works as a pilot now"
    assert fit_profile(summary, 200) == (summary, 0)  # it fits as it is
    fitted, gave_way = fit_profile(summary, 50)
    assert fitted == "Moved to Porto last spring; Works as a pilot now" and gave_way == 2
    fitted, gave_way = fit_profile(summary, 25)
    assert fitted == "Works as a pilot now" and gave_way == 3
    # sentences are parts too
    assert fit_profile("Likes tea. Hates mornings. Runs at dusk.", 30) == ("Hates mornings. Runs at dusk.", 1)


def test_a_part_longer_than_the_limit_keeps_its_beginning_cut_at_a_word():
    fitted, gave_way = fit_profile("Old part; " + "a very long newest part that goes on " * 6, 60)
    assert fitted.endswith("…") and len(fitted) <= 60 and fitted.startswith("a very long newest part")
    assert not fitted[:-1].endswith(" ") and gave_way == 2  # the old part and the cut one


def test_learning_keeps_a_section_within_max_profile_chars_and_health_counts_what_gave_way(mem):
    limit = mem.settings.max_profile_chars
    for i, (job, place) in enumerate(zip(JOBS, PLACES)):
        mem.add([{"role": "user", "content": f"I'm a {job} at a clinic in {place}."},
                 {"role": "assistant", "content": "Noted."}], user="ana", thread=f"t{i}", at=AT + timedelta(days=i))
        mem.flush()
    work = mem.profile(user="ana").user.work_context.summary
    assert 0 < len(work) <= limit
    assert "radiologist" in work  # the newest part is kept
    assert "nurse" not in work  # the oldest gave way
    record = trimmed_record(mem.store, "ana")
    assert record["parts"] >= 1 and record["sections"]["user.workContext"] == record["parts"]
    report = mem.health(user="ana")
    assert report.profile_trimmed == {"user.workContext": record["parts"]}
    assert any("gave way" in line and "max_profile_chars" in line for line in report.advice)
    from typer.testing import CliRunner

    from reverie.cli import app

    printed = CliRunner().invoke(app, ["health", "--user", "ana", "--home", str(mem.settings.home)]).output
    assert f"user.workContext {record['parts']}" in printed and "gave way" in printed
    # the episodes they came from are kept: what the profile let go is still recalled
    assert any("nurse" in item.text for item in mem.recall("Was I ever a nurse?", user="ana", budget=500).items)


def test_a_profile_longer_than_its_share_is_delivered_as_its_newest_parts(mem):
    # a section written before the limit existed (or by hand in the store) may be longer than any budget
    parts = [f"Works as a {job} in {place}" for job, place in zip(JOBS * 8, PLACES * 8)]
    mem.store.put_profile_section("ana", "user.workContext", "; ".join(parts), AT)
    mem.remember("Works as a nurse in Lyon", user="ana")  # the profile's oldest part: not delivered
    result = mem.recall("What do I do for work?", user="ana", budget=500)
    profile = [item for item in result.items if item.kind == "profile"]
    assert len(profile) == 1 and profile[0].text.startswith("Work Context: ")
    assert profile[0].text.endswith(parts[-1])  # the newest part
    assert profile[0].tokens <= int(500 * mem.settings.profile_budget_share)
    assert profile[0].tokens == count_tokens(f"- {profile[0].text}") + 1
    # a fact the profile's delivered part does not say is not held back because an older part did
    assert any(item.kind == "fact" and "nurse in Lyon" in item.text for item in result.items)
    assert result.tokens <= 500


def test_no_profile_share_no_profile_lines(home):
    from reverie import Memory

    with Memory(home, background=False, profile_budget_share=0.0) as mem:
        mem.set_profile("user.workContext", "Works as a nurse", user="ana")
        assert not [i for i in mem.recall("work?", user="ana", budget=500).items if i.kind == "profile"]


def test_a_hand_edit_past_the_limit_is_refused_and_changes_nothing(mem):
    mem.set_profile("user.workContext", "Works as a nurse", user="ana")
    with pytest.raises(InvalidInput) as err:
        mem.set_profile("user.workContext", "x " * 400, user="ana")
    assert err.value.field == "summary" and "max_profile_chars" in str(err.value)
    assert mem.profile(user="ana").user.work_context.summary == "Works as a nurse"
    # the limit holds for what is stored: a short email becomes a longer marker
    near = "w" * (mem.settings.max_profile_chars - 7) + " x@y.co"
    with pytest.raises(InvalidInput):
        mem.set_profile("user.workContext", near, user="ana")
    assert mem.profile(user="ana").user.work_context.summary == "Works as a nurse"


def test_an_import_past_the_limit_is_refused_when_strict_and_kept_newest_when_not(mem):
    from reverie.portability import import_user

    long = "; ".join(f"Works as a {job}" for job in JOBS * 2)
    data = {"user": {"workContext": {"summary": long, "updatedAt": ""}}, "history": {}, "facts": []}
    with pytest.raises(InvalidInput) as err:
        mem.import_(data, user="ana")
    assert err.value.field == "profile.user.workContext" and "nothing was imported" in str(err.value)
    assert mem.profile(user="ana").user.work_context.summary == ""
    import_user(mem.ctx, data, "ana", strict=False)
    kept = mem.profile(user="ana").user.work_context.summary
    assert 0 < len(kept) <= mem.settings.max_profile_chars and kept.endswith("Works as a radiologist")
    assert mem.health(user="ana").profile_trimmed["user.workContext"] >= 1


def test_a_long_profile_edit_of_memory_md_keeps_its_newest_parts_and_says_so(mem, home):
    mem.remember("Likes jazz", user="ana", category="preference")
    mem.set_profile("user.cognitiveStyle", "Conclusion first, then details", user="ana")
    path = dreamed(mem, home)
    long = "; ".join(f"Thinks in {job} terms" for job in JOBS * 2)
    edit_text(path, "Conclusion first, then details", long)
    report = mem.sync(user="ana")
    assert report.profile == ["user.cognitiveStyle"] and report.profile_trimmed["user.cognitiveStyle"] >= 1
    style = mem.profile(user="ana").user.cognitive_style.summary
    assert len(style) <= mem.settings.max_profile_chars and style.endswith("Thinks in radiologist terms")
    assert mem.health(user="ana").profile_trimmed == report.profile_trimmed


def test_what_gave_way_is_the_users_own_record_deleted_with_them(bmem):
    from reverie.profiles import note_trimmed

    with bmem.store.transaction():
        note_trimmed(bmem.store, "ana", {"user.workContext": 3}, AT)
        note_trimmed(bmem.store, "bob", {"user.topOfMind": 1}, AT)
        note_trimmed(bmem.store, "ana", {"user.workContext": 2, "user.topOfMind": 1}, AT)
    assert trimmed_record(bmem.store, "ana")["sections"] == {"user.workContext": 5, "user.topOfMind": 1}
    bmem.delete_user(user="ana", confirm="ana")
    assert trimmed_record(bmem.store, "ana") == {}
    assert trimmed_record(bmem.store, "bob")["parts"] == 1


def test_the_heuristic_profile_takes_durable_lines_and_one_value_at_a_time(mem):
    turns = ["I work as a nurse at a clinic in Lyon.", "I worked in the garden in Hobart last week with Amara.",
             "I work as a pilot for a small airline now.", "I live in Porto.", "I live in Graz these days.",
             "I worked in the garden with Ebba on my day off.", "I founded a chess club last week."]
    for i, text in enumerate(turns):
        mem.add([{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}],
                user="ana", thread=f"t{i}", at=AT + timedelta(days=i))
        mem.flush()
    profile = mem.profile(user="ana")
    work, personal = profile.user.work_context.summary, profile.user.personal_context.summary
    assert "pilot" in work and "nurse" not in work  # a new job takes the old one's place in the profile
    assert "garden" not in work and "chess" not in work  # the past and dated events are episodes', not the profile's
    assert "Graz" in personal and "Porto" not in personal
    # the facts and episodes keep the rest
    assert any("nurse" in f.content for f in mem.facts(user="ana", status=None))


# ---------------------------------------------------------------- the profile says what is true now

def test_a_fact_replaced_by_a_newer_value_leaves_the_profile(bmem):
    mem = bmem  # on SQLite and on PostgreSQL
    mem.set_profile("user.personalContext", "Lives in Porto; Has a cat named Mia", user="ana")
    porto = mem.remember("Lives in Porto", user="ana", category="identity")
    mem.remember("Lives in Lisbon", user="ana", category="identity")
    assert mem.fact(porto.id).status == "archived"
    assert mem.profile(user="ana").user.personal_context.summary == "Has a cat named Mia"
    assert "Porto" not in mem.recall("where do I live?", user="ana", track=False).context


def test_a_forgotten_fact_leaves_the_profile_and_other_parts_stay(bmem):
    mem = bmem
    mem.set_profile("user.workContext", "Works as a nurse at Santa Maria. Plays the cello", user="ana")
    nurse = mem.remember("Works as a nurse at Santa Maria", user="ana", category="identity")
    mem.forget(nurse.id, user="ana")
    assert mem.profile(user="ana").user.work_context.summary == "Plays the cello"


def test_a_correction_learned_from_talk_leaves_no_outdated_profile_part(mem):
    mem.add(["I live in Berlin and work as a nurse at Charité.", "Nice."], user="ivy", thread="a",
            at=datetime(2026, 11, 1, tzinfo=timezone.utc))
    mem.flush()
    assert "Berlin" in mem.profile(user="ivy").user.personal_context.summary
    mem.add(["I no longer live in Berlin, I moved to Lisbon last week.", "Got it."], user="ivy", thread="b",
            at=datetime(2026, 11, 20, tzinfo=timezone.utc))
    mem.flush()
    assert "Berlin" not in mem.profile(user="ivy").user.personal_context.summary
    assert "Berlin" not in mem.recall("Which city am I in?", user="ivy", track=False).context.split("\n- ")[1]
