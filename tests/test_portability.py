"""Export and import: round trips (ours and deer-flow's), strict envelope, lenient inside."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from reverie import InvalidInput, Memory


def _fill(mem: Memory) -> None:
    mem.remember("Prefers trash over rm", user="ana", category="preference", area="Tools")
    mem.remember("Wants the conclusion first", user="ana", category="cognitive", tags=["answer style"])
    mem.set_profile("user.workContext", "Backend engineer at a logistics startup", user="ana")
    mem.add(
        [
            {"speaker": "ana", "content": "We moved the billing service to Postgres", "source_id": "D1:1"},
            {"speaker": "bot", "content": "Noted, Postgres for billing.", "source_id": "D1:2"},
        ],
        user="ana",
        thread="t1",
        at=datetime(2024, 3, 1, tzinfo=timezone.utc),
    )
    mem.add_knowledge("Release checklist", "1. tag\n2. build\n3. publish", user="ana", tags=["release"])


def _strip_times(data: dict) -> dict:
    data = dict(data)
    data.pop("exportedAt")
    return data


def test_export_import_export_is_identical_apart_from_timestamps(tmp_path, backend):
    first = Memory(tmp_path / "a", background=False)
    _fill(first)
    exported = first.export(user="ana")
    first.close()
    # imported into SQLite, and into PostgreSQL (where an import's writes go out as one batch)
    second = Memory(tmp_path / "b", background=False, store=backend)
    counts = second.import_(json.dumps(exported), user="ana")
    assert counts["facts"] == 2 and counts["episodes"] == 1 and counts["knowledge"] == 1
    again = second.export(user="ana")
    second.close()
    assert _strip_times(again) == _strip_times(exported)
    assert set(exported) == {"version", "exportedAt", "user", "profile", "withdrawn", "facts", "episodes", "notes",
                             "knowledge"}


def test_an_export_streamed_a_page_at_a_time_is_the_same_envelope(bmem, monkeypatch, tmp_path):
    import io

    import reverie.portability as portability

    monkeypatch.setattr(portability, "EXPORT_PAGE", 3)  # several pages of each kind
    monkeypatch.setattr(portability, "EXPORT_KNOWLEDGE_PAGE", 2)
    monkeypatch.setattr(portability, "EXPORT_CHUNK_CHARS", 100)  # and pieces cut anywhere
    for n in range(8):
        bmem.remember(f"Project orbit{n} runs on module kestrel{n}", user="ana")
        bmem.add_knowledge(f"Runbook {n}", f"- step {n}", user="ana")
        bmem.add([{"role": "user", "content": f"I always want topic tundra{n} summarised first",
                   "at": f"2024-05-0{n % 5 + 1}T10:00:00Z"}], user="ana", thread=f"t{n}")
    bmem.flush(user="ana")
    bmem.forget(bmem.facts(user="ana")[0].id, user="ana")  # an archived fact is exported too
    whole = bmem.export(user="ana")
    out = io.StringIO()
    bmem.export_to(out, user="ana")
    streamed = json.loads(out.getvalue())
    assert list(streamed) == list(whole)  # the same sections in the same order
    assert _strip_times(streamed) == _strip_times(whole)
    assert len(whole["episodes"]) == 8 and len(whole["facts"]) >= 9 and len(whole["notes"]) == 8
    # every knowledge document, in the order stored, whatever the page
    assert [d["id"] for d in streamed["knowledge"]] == [d.id for d in bmem.knowledge(user="ana")]
    assert len(streamed["knowledge"]) == 8
    # an empty memory is a valid envelope too
    empty = io.StringIO()
    bmem.export_to(empty, user="nobody")
    assert json.loads(empty.getvalue())["facts"] == []


def test_deerflow_memory_json_imports_profile_and_facts(mem):
    deerflow = {
        "version": "1.0",
        "lastUpdated": "2025-01-02T03:04:05Z",
        "user": {
            "workContext": {"summary": "Builds agents in Python", "updatedAt": "2025-01-01T00:00:00Z"},
            "cognitiveStyle": {"summary": "Conclusion first, then details", "updatedAt": ""},
        },
        "history": {"recentMonths": {"summary": "Shipped memory v2", "updatedAt": "2025-01-01T00:00:00Z"}},
        "facts": [
            {"id": "f1", "content": "Uses uv for Python projects", "category": "tech_stack", "confidence": 0.9,
             "createdAt": "2024-12-01T00:00:00Z", "source": "thread-7"},
            {"id": "f2", "content": "Prefers dark mode", "category": "preference", "confidence": 0.7,
             "createdAt": "2024-12-02T00:00:00Z", "source": "manual"},
        ],
    }
    mem.import_(deerflow, user="ana")
    # the same file read from disk (not an envelope to stream: read whole, as deer-flow's)
    path = mem.home / "memory.json"
    path.write_text(json.dumps({**deerflow, "facts": deerflow["facts"][:1]}), encoding="utf-8")
    assert mem.import_file(path, user="cy")["facts"] == 1
    assert mem.profile(user="cy").user.work_context.summary == "Builds agents in Python"
    profile = mem.profile(user="ana")
    assert profile.user.work_context.summary == "Builds agents in Python"
    assert profile.user.cognitive_style.summary == "Conclusion first, then details"
    assert profile.history.recent_months.summary == "Shipped memory v2"
    facts = {f.id: f for f in mem.facts(user="ana")}
    assert facts["f1"].category == "other" and facts["f1"].original_category == "tech_stack"
    assert facts["f1"].provenance.source_ids == ["thread-7"]
    assert facts["f2"].confidence == 0.7


@pytest.mark.parametrize(
    "envelope, field",
    [
        ({"exportedAt": "2025-01-01T00:00:00", "facts": []}, "version"),
        ({"version": 99, "facts": []}, "version"),
        ({"version": 1, "facts": {"content": "x"}}, "facts"),
        ({"version": 1, "profile": []}, "profile"),
        ({"version": 1, "mystery": 1}, "mystery"),
        ({"version": 1, "facts": [{"content": "ok"}, {"category": "preference"}]}, "facts[1]"),
        ({"version": 1, "facts": [{"content": "   "}]}, "facts[0]"),
        ({"version": 1, "withdrawn": [{"content": "x", "key": "not a digest", "at": "2025-01-01T00:00:00+00:00"}]},
         "withdrawn[0]"),
        ({"version": 1, "withdrawn": {"content": "x"}}, "withdrawn"),
    ],
)
def test_bad_import_is_rejected_naming_the_field_and_changes_nothing(mem, envelope, field):
    mem.remember("Existing fact stays", user="ana")
    before = mem.export(user="ana")
    with pytest.raises(InvalidInput) as err:
        mem.import_(envelope, user="ana")
    assert err.value.field == field
    assert field.split("[")[0] in str(err.value)
    assert _strip_times(mem.export(user="ana")) == _strip_times(before)


def test_import_fills_and_normalizes_inside_a_valid_envelope(mem):
    counts = mem.import_(
        {"version": 1, "facts": [{"content": "Likes long walks", "category": "hobby", "confidence": 1},
                                 {"content": "Lives in Lisbon"}]},
        user="ana",
    )
    assert counts["facts"] == 2
    facts = {f.content: f for f in mem.facts(user="ana")}
    assert facts["Likes long walks"].category == "other"
    assert facts["Likes long walks"].original_category == "hobby"
    assert facts["Likes long walks"].confidence == 1.0
    assert facts["Lives in Lisbon"].confidence == 0.8 and facts["Lives in Lisbon"].status == "consolidated"
    assert mem.profile(user="ana").user.work_context.summary == ""  # missing section filled empty


def test_a_lenient_import_corrects_bad_values_and_counts_them(mem):
    from reverie.portability import import_user

    counts = import_user(
        mem.ctx,
        {"version": 1, "facts": [{"content": "Likes long walks", "confidence": "1.7"},
                                 {"content": "Lives in Lisbon", "confidence": -2, "status": "weird"}]},
        "ana",
        strict=False,
    )
    assert counts["facts"] == 2 and counts["corrected"] == 3 and counts["skipped"] == 0
    facts = {f.content: f for f in mem.facts(user="ana")}
    assert facts["Likes long walks"].confidence == 1.0
    assert facts["Lives in Lisbon"].confidence == 0.0 and facts["Lives in Lisbon"].status == "consolidated"


def test_background_read_skips_unusable_facts_with_a_warning(mem, caplog):
    from reverie.portability import import_user

    counts = import_user(mem.ctx, {"version": 1, "facts": [{"content": "good one"}, {"content": ""}]}, "ana", strict=False)
    assert counts["facts"] == 1 and counts["skipped"] == 1
    assert "facts[1]" in caplog.text


def test_import_strips_secrets(mem):
    mem.import_({"version": 1, "facts": [{"content": "Reach me at ana@example.com"}]}, user="ana")
    assert "ana@example.com" not in mem.facts(user="ana")[0].content


def test_import_never_overwrites_another_users_item(tmp_path):
    mem = Memory(tmp_path / "h", background=False)
    bob_fact = mem.remember("Bob's own fact", user="bob")
    mem.import_({"version": 1, "facts": [{"id": bob_fact.id, "content": "Ana's fact"}]}, user="ana")
    assert mem.fact(bob_fact.id).content == "Bob's own fact"
    assert [f.content for f in mem.facts(user="ana")] == ["Ana's fact"]
    mem.close()


def test_facts_without_ids_are_found_again_not_added_again(mem):
    deerflow = {"user": {}, "history": {}, "facts": [
        {"content": "Likes dark roast coffee", "category": "preference", "confidence": 0.9},
        {"content": "Likes dark roast coffee", "category": "preference", "confidence": 0.9},
        {"content": "Enjoys rock climbing", "category": "preference", "confidence": 0.8}]}
    first = mem.import_(deerflow, user="ana")
    assert (first["facts"], first["replaced"], first["repeated"]) == (2, 0, 1)  # the line given twice, said
    again = mem.import_(deerflow, user="ana")
    assert (again["facts"], again["replaced"], again["repeated"]) == (2, 2, 1)
    envelope = mem.export(user="ana")
    for fact in envelope["facts"]:
        fact.pop("id")
    assert mem.import_(envelope, user="ana")["replaced"] == 2
    assert sorted(f.content for f in mem.facts(user="ana")) == ["Enjoys rock climbing", "Likes dark roast coffee"]


@pytest.mark.parametrize("section, item, field, says", [
    ("knowledge", {"title": "Big", "body": "x" * 150_000}, "knowledge[0].body", "a knowledge document is at most 100,000"),
    ("facts", {"content": "Plays chess", "tags": [f"t{i}" for i in range(61)]}, "facts[0].tags", "at most 32 tags"),
    ("episodes", {"messages": [{"role": "user", "content": "hi"}], "tags": [f"t{i}" for i in range(101)]},
     "episodes[0].tags", "at most 32 tags"),
])
def test_an_import_holds_items_to_the_limits_every_other_way_in_does(mem, tmp_path, section, item, field, says):
    from reverie import InvalidInput

    envelope = {**mem.export(user="nobody"), section: [item]}
    with pytest.raises(InvalidInput, match=says) as caught:
        mem.import_(envelope, user="ana")
    assert caught.value.field == field and "nothing was imported" in str(caught.value)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(envelope), encoding="utf-8")
    with pytest.raises(InvalidInput, match=says):
        mem.import_file(path, user="ana")  # streamed a page at a time: the same checks
    assert mem.export(user="ana")[section] == []


def test_a_line_a_person_deleted_stays_deleted_in_the_home_an_export_moves_to(tmp_path):
    """The record of deleted lines travels with the export: a dream in the new home does not
    write back, from the notes it also carries, a line the person took out of MEMORY.md."""
    talk = [{"role": "user", "content": "My favourite editor is Helix and I use fish shell"},
            {"role": "assistant", "content": "Nice."}]
    with Memory(tmp_path / "a", background=False) as old:
        old.add(talk, user="ana")
        old.flush()
        assert old.dream(user="ana").status == "done"
        path = tmp_path / "a" / "users" / "ana" / "MEMORY.md"
        lines = path.read_text(encoding="utf-8").splitlines()
        assert any("Helix" in line for line in lines)
        path.write_text("\n".join(line for line in lines if "Helix" not in line) + "\n", encoding="utf-8")
        assert len(old.sync(user="ana").deleted) == 1
        exported = old.export(user="ana")
    assert [w["content"] for w in exported["withdrawn"]] and "Helix" in exported["withdrawn"][0]["content"]
    with Memory(tmp_path / "b", background=False) as new:
        new.import_(exported, user="ana")
        run = new.dream(user="ana", force=True)
        assert run.report["rejected"] and all("a person deleted this line" in r["reason"]
                                              for r in run.report["rejected"]), run.report
        md = tmp_path / "b" / "users" / "ana" / "MEMORY.md"
        assert not md.exists() or "Helix" not in md.read_text(encoding="utf-8")
        new.import_(exported, user="ana")  # imported again: the record holds each line once
        assert len(new.export(user="ana")["withdrawn"]) == 1


def test_the_same_file_ingested_after_a_move_is_skipped_as_before(tmp_path):
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps([
        {"speaker": "ana", "content": "We moved the billing service to Postgres", "at": "2024-03-01T10:00:00Z"},
        {"speaker": "bot", "content": "Noted.", "at": "2024-03-01T10:00:05Z"},
        {"speaker": "ana", "content": "We moved the billing service to Postgres", "at": "2024-03-02T10:00:00Z",
         "id": "m3"},
    ]), encoding="utf-8")
    with Memory(tmp_path / "a", background=False) as old:
        first = old.ingest(conv, user="ana")
        assert old.ingest(conv, user="ana").skipped == first.episodes > 0
        exported = old.export(user="ana")
    with Memory(tmp_path / "b", background=False) as new:
        new.import_(exported, user="ana")
        again = new.ingest(conv, user="ana")
        assert again.episodes == 0 and again.skipped == first.episodes
        assert len(new.export(user="ana")["episodes"]) == len(exported["episodes"])


def test_a_deerflow_profile_section_past_the_limit_refuses_the_file_or_keeps_its_newest_part_when_lenient(
        tmp_path, mem):
    """One long history paragraph refused the whole file, and no door offered the lenient
    mode the refusal could have named."""
    from typer.testing import CliRunner

    from reverie.cli import app

    long = " ".join(f"Part {n} of a long history paragraph." for n in range(40))  # past 500 characters
    data = {"version": "1.0", "user": {"workContext": {"summary": "Engineer", "updatedAt": ""}},
            "history": {"earlierContext": {"summary": long, "updatedAt": ""}},
            "facts": [{"id": "f1", "content": "Prefers tea", "category": "preference", "confidence": 0.9,
                       "createdAt": "2025-01-01T00:00:00Z", "source": "thread-1"}]}
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InvalidInput) as refused:
        mem.import_(data, user="jan")
    assert "--lenient" in str(refused.value) and mem.facts(user="jan") == []
    with pytest.raises(InvalidInput):
        mem.import_(data, user="jan", strict="no")  # type: ignore[arg-type]
    counts = mem.import_file(path, user="jan", strict=False)
    assert counts["facts"] == 1 and counts["corrected"] >= 1
    kept = mem.profile(user="jan").history.earlier_context.summary
    assert 0 < len(kept) <= mem.settings.max_profile_chars and kept.endswith("Part 39 of a long history paragraph.")
    home = tmp_path / "cli"
    said = CliRunner().invoke(app, ["import", str(path), "--user", "jan", "--home", str(home), "--lenient"])
    assert said.exit_code == 0 and "1 facts" in said.output, said.output
