"""MEMORY.md is a file a person edits: every edit is taken in or refused with a word, never
overwritten unread; what reverie cannot read is named."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from reverie import InvalidInput, Memory
from reverie.cli import app
from reverie.errors import Conflict
from reverie.memory_md import publish_memory_md, withdrawn_record
from tests.edits import dreamed, edit_text
from tests.fake_openai import Reply


def memory_md(mem: Memory, user: str = "ana"):
    path = mem.ctx.files.memory_md(user)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_a_memory_md_written_by_hand_before_any_dream_is_taken_in_not_overwritten(mem, home):
    mem.remember("Drinks oolong tea", user="ana", category="preference")
    path = memory_md(mem)
    path.write_text("# Memory of ana\n\n## Rules\n\n- Never book flights before 9am\n\n## Profile\n\n"
                    "- **Work Context:** Pilot at a small airline\n", encoding="utf-8")
    report = mem.sync(user="ana")
    assert [a.content for a in report.added] == ["Never book flights before 9am"]
    assert report.profile == ["user.workContext"]
    assert mem.profile(user="ana").user.work_context.summary == "Pilot at a small airline"
    assert mem.dream(user="ana", force=True).status == "done"
    text = path.read_text(encoding="utf-8")
    assert "Never book flights before 9am" in text and "Drinks oolong tea" in text


def test_a_memory_md_left_from_a_lost_store_is_taken_in_by_the_first_dream(home):
    with Memory(home, background=False) as mem:
        mem.remember("Is allergic to peanuts", user="ana", category="constraint")
        mem.remember("Prefers window seats", user="ana", category="preference")
        dreamed(mem, home)
    (home / "reverie.db").unlink()
    for stray in home.glob("reverie.db-*"):
        stray.unlink()
    with Memory(home, background=False) as mem:  # the file is the only copy left
        mem.remember("Drinks oolong tea", user="ana", category="preference")
        run = mem.dream(user="ana", force=True)
        assert run.status == "done" and run.report["synced"]
        contents = {f.content for f in mem.facts(user="ana")}
        assert {"Is allergic to peanuts", "Prefers window seats", "Drinks oolong tea"} <= contents
        assert "Is allergic to peanuts" in memory_md(mem).read_text(encoding="utf-8")


def test_an_emptied_memory_md_is_read_as_damage_and_written_again(mem, home):
    kept = [mem.remember(c, user="ana", category="preference") for c in ("Likes jazz", "Prefers window seats")]
    path = dreamed(mem, home)
    before = path.read_text(encoding="utf-8")
    path.write_text("", encoding="utf-8")
    report = mem.sync(user="ana")
    assert not report.deleted and "empty" in report.refused[0].reason
    assert all(mem.fact(f.id).status == "consolidated" for f in kept)
    assert path.read_text(encoding="utf-8") == before


def test_a_line_of_invisible_characters_added_by_hand_is_no_fact(mem, home):
    mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    edit_text(path, "## Preferences\n", "## Preferences\n\n- \u200b\u200b\n")
    report = mem.sync(user="ana")
    assert not report.added and [f.content for f in mem.facts(user="ana")] == ["Likes jazz"]


def test_a_memory_md_saved_as_utf16_is_read_and_one_in_another_encoding_is_named(mem, home):
    mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    text = path.read_text(encoding="utf-8").replace("Likes jazz", "Likes cool jazz")
    path.write_bytes(text.replace("\n", "\r\n").encode("utf-16"))  # Notepad's "Unicode"
    assert [e.content for e in mem.sync(user="ana").edited] == ["Likes cool jazz"]
    path.write_bytes("# Memory of ana\n\n## Preferences\n\n- Likes café\n".encode("latin-1"))
    with pytest.raises(InvalidInput, match=r"MEMORY.md is not UTF-8 text .*save it as UTF-8"):
        mem.sync(user="ana")
    run = mem.dream(user="ana", force=True)
    assert run.status == "failed" and "not UTF-8" in run.error


def test_reverie_never_overwrites_an_edit_it_has_not_read(mem, home):
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    edit_text(path, "## Preferences\n", "## Preferences\n\n- Is allergic to peanuts\n")
    edited = path.read_text(encoding="utf-8")
    with pytest.raises(Conflict, match="edited by hand"):
        publish_memory_md(mem.ctx, "ana", [mem.fact(jazz.id)])
    assert path.read_text(encoding="utf-8") == edited
    assert [a.content for a in mem.sync(user="ana").added] == ["Is allergic to peanuts"]


def test_an_edit_made_while_the_engine_dreams_is_taken_in_not_lost(home, fake_openai):
    mem = Memory(home, background=False, engines={"distill": "openai"},
                 llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 0})
    try:
        jazz = mem.remember("Likes jazz", user="ana", category="preference")
        path = memory_md(mem)

        def keep_all(body: dict) -> dict:
            data = json.loads(next(m["content"] for m in body["messages"] if m["role"] == "user"))
            return {"entries": [{"action": "keep", "content": f["content"], "sources": [f["id"]]}
                                for f in data["facts"]]}

        fake_openai.respond_by_step({"distill": keep_all})
        assert mem.dream(user="ana").status == "done"

        def edit_then_keep(body: dict) -> Reply | dict:  # the person saves while the model thinks
            edit_text(path, "## Preferences\n", "## Preferences\n\n- Is allergic to peanuts\n")
            return keep_all(body)

        fake_openai.respond_by_step({"distill": edit_then_keep})
        run = mem.dream(user="ana", force=True)
        assert run.status == "done" and run.report["synced"]
        text = path.read_text(encoding="utf-8")
        assert "Is allergic to peanuts" in text and "Likes jazz" in text
        assert any(f.content == "Is allergic to peanuts" and f.status == "consolidated" for f in mem.facts(user="ana"))
        assert mem.fact(jazz.id).status == "consolidated"
    finally:
        mem.close()


def test_a_line_deleted_by_hand_is_not_written_back_from_older_notes(mem, home):
    at = datetime.now(timezone.utc) - timedelta(hours=1)
    mem.add(["I love hiking in the Serra da Estrela mountains", "Sounds lovely"], user="ana", at=at)
    mem.add(["I always cycle to work", "Nice"], user="ana", thread="t2", at=at)
    mem.flush()
    for fact in mem.facts(user="ana", status="pending"):
        mem.reinforce(fact.id, user="ana")
    path = dreamed(mem, home)
    hiking = [line for line in path.read_text(encoding="utf-8").splitlines() if "Serra da Estrela" in line]
    assert hiking
    edit_text(path, hiking[0] + "\n", "")
    run = mem.dream(user="ana", force=True)
    assert run.status == "done" and run.report["synced"]
    assert "Serra da Estrela" not in path.read_text(encoding="utf-8")
    assert not [f for f in mem.facts(user="ana") if "Serra da Estrela" in f.content and f.status != "archived"]
    assert "cycle" in path.read_text(encoding="utf-8")
    # said again after the deletion, it is learned again
    mem.add(["I love hiking in the Serra da Estrela mountains", "Again!"], user="ana", thread="t3",
            at=datetime.now(timezone.utc))
    mem.flush()
    assert [f for f in mem.facts(user="ana") if "Serra da Estrela" in f.content and f.status != "archived"]


def test_a_numbered_item_is_an_entry_and_loose_text_is_said_not_dropped(mem, home):
    mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    edit_text(path, "## Preferences\n", "## Preferences\n\n1. Prefers window seats\n"
                    "My partner Joao is allergic to shellfish, never suggest shellfish recipes.\n")
    report = mem.sync(user="ana")
    assert [a.content for a in report.added] == ["Prefers window seats"]
    assert [r.content for r in report.refused] == [
        "My partner Joao is allergic to shellfish, never suggest shellfish recipes."]
    assert "list item" in report.refused[0].reason


def test_a_value_changed_within_one_batch_leaves_the_newer_in_the_profile(mem):
    mem.add(["I work as a backend engineer at Finlytics", "Nice"], user="ana", at=datetime(2026, 11, 1, tzinfo=timezone.utc))
    mem.add(["I work as a backend engineer at Tidepool", "Congrats"], user="ana", thread="t2",
            at=datetime(2026, 11, 2, tzinfo=timezone.utc))
    mem.flush()  # one batch
    work = mem.profile(user="ana").user.work_context.summary
    assert "Tidepool" in work and "Finlytics" not in work


def test_a_line_forgotten_for_good_leaves_only_a_digest_among_the_deleted_lines(mem):
    from reverie.memory_md import withdrawn

    fact = mem.remember("Sees a therapist on Tuesdays", user="ana", category="context")
    mem.forget(fact.id, user="ana")
    assert [text for text, _, _ in withdrawn(mem.store, "ana")] == ["Sees a therapist on Tuesdays"]
    mem.forget(fact.id, user="ana", hard=True)
    kept = withdrawn(mem.store, "ana")
    assert kept and all(text == "" and digest for text, digest, _ in kept)
    assert "therapist" not in (mem.store.get_meta("withdrawn:ana") or "")


def test_a_line_added_by_hand_that_takes_a_facts_place_says_so_and_undo_brings_it_back(mem, home):
    berlin = mem.remember("Lives in Berlin", user="ana", category="context")
    mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    edit_text(path, "## Context\n\n", "## Context\n\n- Lives in Porto\n")
    report = mem.sync(user="ana")
    assert [a.content for a in report.added] == ["Lives in Porto"]
    assert [(s.fact_id, s.content) for s in report.superseded] == [(berlin.id, "Lives in Berlin")]
    assert report.deleted == [] and report.changed
    assert mem.fact(berlin.id).status == "archived"
    said = runner_sync(home)
    assert "MEMORY.md has no edits to take in" in said  # taken in once
    mem.undo(report.journal, user="ana")
    assert mem.fact(berlin.id).status == "consolidated"


def runner_sync(home) -> str:
    from typer.testing import CliRunner

    from reverie.cli import app

    return CliRunner().invoke(app, ["sync", "--user", "ana", "--home", str(home)]).output


def test_a_dream_tells_only_the_counts_that_changed_since_memory_md_was_last_written(mem, home):
    tea = mem.remember("Prefers tea over coffee", user="ana", category="preference")
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    mem.reinforce(tea.id, user="ana")
    edit_text(path, "Likes jazz", "Likes cool jazz")
    assert mem.sync(user="ana").edited  # MEMORY.md is written again, with tea's new count
    assert f"[{mem.fact(tea.id).uses}x] Prefers tea over coffee" in path.read_text(encoding="utf-8")
    mem.reinforce(jazz.id, user="ana")
    run = mem.dream(user="ana")
    recounted = [(e["fact_id"], e["reason"]) for e in run.report["recounted"]]
    assert recounted == [(jazz.id, f"{jazz.uses}x → {jazz.uses + 1}x")]


def test_two_edits_from_one_base_take_one_and_the_other_changes_nothing(bmem):
    """Sent at once from the same page (two tabs, two replicas): one is taken; the other is a
    Conflict that wrote no line and no fact (before, both could be taken, or the refused one
    still added its fact)."""
    import hashlib
    import threading

    from reverie.errors import Conflict

    bmem.remember("Drinks oolong tea", user="ana", category="preference")
    assert bmem.dream(user="ana").status == "done"
    for round_ in range(4):
        text = bmem.memory_md(user="ana")
        base = hashlib.sha256(text.encode("utf-8")).hexdigest()
        start = threading.Barrier(2)
        outcome: dict[str, str] = {}

        def edit(tree: str) -> None:
            start.wait()
            try:
                bmem.save_memory_md(text.rstrip("\n") + f"\n- Plants a {tree} tree in spring\n", user="ana", base=base)
                outcome[tree] = "taken"
            except Conflict:
                outcome[tree] = "refused"

        trees = [f"birch{round_}", f"rowan{round_}"]
        threads = [threading.Thread(target=edit, args=(t,)) for t in trees]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(outcome.values()) == ["refused", "taken"], outcome
        facts = " ".join(f.content for f in bmem.facts(user="ana"))
        for tree, result in outcome.items():
            assert (tree in facts) == (result == "taken"), (tree, result, facts)
            assert (tree in bmem.memory_md(user="ana")) == (result == "taken")


def test_a_line_added_that_repeats_a_fact_is_said_as_a_duplicate_not_added_nor_a_use(mem, home):
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    path = dreamed(mem, home)
    original = mem.memory_md(user="ana")
    # written again above its line (the marker left out), and again in other words
    text = original.replace("### General\n\n", "### General\n\n- Likes jazz\n- likes jazz.\n")
    report = mem.save_memory_md(text, user="ana")
    assert report.added == [] and report.edited == [] and report.deleted == []
    assert [(d.content, d.fact.fact_id, d.fact.content) for d in report.duplicates] == [
        ("Likes jazz", jazz.id, "Likes jazz"), ("likes jazz.", jazz.id, "Likes jazz")]
    assert report.changed  # the lines left MEMORY.md: said, not merged silently
    assert mem.fact(jazz.id).uses == jazz.uses == 0  # an edit is no use
    assert [f.content for f in mem.facts(user="ana")] == ["Likes jazz"]
    assert mem.memory_md(user="ana") == original
    edit_text(path, "### General\n\n", "### General\n\n- likes jazz.\n")
    said = " ".join(runner_sync(home).split())
    assert f"already known, merged into {jazz.id} Likes jazz: likes jazz." in said


def test_a_profile_line_changed_by_hand_archives_the_fact_it_contradicts_and_undo_brings_it_back(mem, home):
    porto = mem.remember("Lives in Porto", user="ana", category="context")
    peanuts = mem.remember("Is allergic to peanuts", user="ana", category="identity")
    mem.set_profile("user.personalContext", "Lives in Porto; Is allergic to peanuts", user="ana")
    path = dreamed(mem, home)
    edit_text(path, "Lives in Porto;", "Lives in Lisbon;")
    report = mem.sync(user="ana")
    assert report.profile == ["user.personalContext"]
    assert [(s.fact_id, s.content) for s in report.superseded] == [(porto.id, "Lives in Porto")]
    assert mem.fact(porto.id).status == "archived" and mem.fact(peanuts.id).status != "archived"
    assert "Lives in Porto" not in mem.recall("where do I live?", user="ana", track=False).context
    mem.undo(report.journal, user="ana")
    assert mem.fact(porto.id).status != "archived"


def test_undoing_a_sync_that_deleted_a_line_takes_it_off_the_deleted_lines_an_export_carries(mem, home):
    jazz = mem.remember("Likes jazz", user="ana", category="preference")
    mem.remember("Lives in Porto", user="ana", category="identity")
    path = dreamed(mem, home)
    deleted = [(w["content"]) for w in mem.export(user="ana")["withdrawn"]]
    assert deleted == []
    edit_text(path, next(line for line in path.read_text(encoding="utf-8").splitlines() if "Likes jazz" in line)
              + "\n", "")
    synced = mem.sync(user="ana")
    assert [f.content for f in synced.deleted] == ["Likes jazz"]
    assert [w["content"] for w in mem.export(user="ana")["withdrawn"]] == ["Likes jazz"]
    mem.undo(synced.journal, user="ana")
    assert mem.export(user="ana")["withdrawn"] == []  # as it was before the sync
    assert "Likes jazz" in path.read_text(encoding="utf-8")
    # a line forgotten before, brought back (which takes it off the record), then deleted in
    # MEMORY.md: undo puts the record back as it was before that sync
    mem.forget(jazz.id, user="ana")
    assert [w["content"] for w in mem.export(user="ana")["withdrawn"]] == ["Likes jazz"]
    mem.restore_fact(jazz.id, user="ana")
    earlier = mem.export(user="ana")["withdrawn"]
    assert earlier == []
    mem.dream(user="ana", force=True)
    edit_text(path, next(line for line in path.read_text(encoding="utf-8").splitlines() if "Likes jazz" in line)
              + "\n", "")
    synced = mem.sync(user="ana")
    assert mem.export(user="ana")["withdrawn"] != earlier
    mem.undo(synced.journal, user="ana")
    assert mem.export(user="ana")["withdrawn"] == earlier
    # deleted for good since a sync: undoing that sync keeps no text of it on the record, nor in its journal
    edit_text(path, next(line for line in path.read_text(encoding="utf-8").splitlines() if "Likes jazz" in line)
              + "\n", "")
    synced = mem.sync(user="ana")
    mem.forget(jazz.id, user="ana", hard=True)
    assert "Likes jazz" not in (mem.store.get_meta(f"journal:{synced.journal}") or "")
    mem.undo(synced.journal, user="ana")
    assert [w["content"] for w in mem.export(user="ana")["withdrawn"]] == [""]


def test_sync_says_a_profile_line_deleted_and_lines_moved_under_a_heading_it_does_not_know(home):
    with Memory(home, background=False) as mem:
        porto = mem.remember("Lives in Porto", user="ana", category="identity")
        mem.remember("Swims on Sundays", user="ana", category="behavior")
        mem.set_profile("user.personalContext", "Has a cat named Miso", user="ana")
        path = dreamed(mem, home)
    edit_text(path, "- **Personal Context:** Has a cat named Miso\n", "")
    edit_text(path, "## Identity\n", "## My goals\n")
    edit_text(path, "## Habits\n", "##Habits\n\n- Runs on Tuesdays\n")
    path.write_text(path.read_text(encoding="utf-8") + "\n## Hobbies\n\n- Plays chess\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["sync", "--user", "ana", "--home", str(home)], catch_exceptions=False)
    said = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "profile line “Personal Context” deleted: the profile no longer says “Has a cat named Miso”" in said
    assert "updated" not in said
    assert f"moved to Other (written under “## My goals”, no heading of MEMORY.md) {porto.id} Lives in Porto" in said
    assert "added under Other (written under “## Hobbies”, no heading of MEMORY.md)" in said
    assert "“## My goals” is no heading of MEMORY.md, so its lines went under Other; to file them elsewhere, put " \
           "them under one of its headings: Profile, Corrections, Rules, Preferences, Identity, Goals" in said
    # a heading without its space is read as the heading meant, and said
    assert "read “##Habits” as the heading “## Habits” (a heading needs a space after its #s)" in said
    with Memory(home, background=False) as mem:
        habits = {f.content: f.category for f in mem.facts(user="ana")}
        assert habits["Runs on Tuesdays"] == "behavior" and habits["Plays chess"] == "other"
        assert mem.profile(user="ana").user.personal_context.summary == ""


def test_lines_a_sync_could_not_take_in_are_said_by_health_until_the_next_dream_tells_them(mem, home):
    """A plain sync told its caller what it refused, then wrote MEMORY.md again without those
    lines: nothing said them afterwards, in health or in a diary."""
    mem.remember("Prefers tea over coffee", user="ana", category="preference")
    path = dreamed(mem, home)
    secret = "my key sk-abcdefghijklmnopqrstuvwxyz012345"
    edit_text(path, "## Preferences", f"## Preferences\n\nCall me before noon ({secret})\n")
    report = mem.sync(user="ana")
    assert [r.content for r in report.refused] == [f"Call me before noon ({secret})"]
    assert "Call me before noon" not in path.read_text(encoding="utf-8")
    health = mem.health(user="ana")
    assert [r.reason.split(":")[0] for r in health.sync_refused] == ["not a list item"]
    said = health.sync_refused[0].content
    assert "Call me before noon" in said and "sk-abcdef" not in said  # kept redacted
    assert any("sync could not take in 1 line" in a for a in health.advice)
    mem.remember("Likes jazz", user="ana", category="preference")
    run = mem.dream(user="ana", force=True)
    assert run.status == "done"
    told = [r["content"] for r in run.report["refused"]]
    assert told == [said]
    diary = (home / run.report["diary"]).read_text(encoding="utf-8")
    assert "Call me before noon" in diary
    after = mem.health(user="ana")
    assert after.sync_refused == [] and [r.content for r in after.dream_refused] == [said]


def test_a_restored_fact_leaves_the_record_of_deleted_lines_and_its_undo_puts_it_back(mem):
    """A forgotten fact restored stayed on the record of lines a person deleted (which an
    export carries, and which keeps a dream from writing the line back from older notes)."""
    fact = mem.remember("Prefers aisle seats", user="ana", category="preference")
    mem.forget(fact.id, user="ana")
    assert [e["content"] for e in withdrawn_record(mem.store, "ana")] == ["Prefers aisle seats"]
    mem.restore_fact(fact.id, user="ana")
    assert withdrawn_record(mem.store, "ana") == []
    mem.undo(mem.changes(user="ana")[0].id, user="ana")
    assert mem.fact(fact.id, user="ana").status == "archived"
    assert [e["content"] for e in withdrawn_record(mem.store, "ana")] == ["Prefers aisle seats"]
