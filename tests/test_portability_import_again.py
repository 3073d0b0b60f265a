"""Import twice, into another user, and strict about values: a second import of a user's export
into another user replaces what the first wrote (no copies), ids named between items follow
their items, and a strict import refuses a bad value naming its path, writing nothing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from reverie import InvalidInput, Memory
from reverie.cli import app
from reverie.portability import import_user

BOB = {
    "version": 1,
    "user": "bob",
    "profile": {"user": {"workContext": {"summary": "Runs a bakery", "updatedAt": "2024-05-01T00:00:00+00:00"}}},
    "facts": [
        {"id": "fact_bob1", "content": "Bakes sourdough every Sunday", "category": "preference", "tags": ["bread"],
         "status": "consolidated", "provenance": {"origin": "import", "episodes": ["ep_bob1"], "notes": ["note_bob1"]}},
        {"id": "fact_bob2", "content": "Moved the bakery to Porto", "status": "consolidated",
         "supersedes": "fact_bob1", "provenance": {"origin": "import", "facts": ["fact_bob1"]}},
    ],
    "episodes": [
        {"id": "ep_bob1", "thread": "t1", "status": "completed", "user_text": "I bake sourdough on Sundays",
         "reply_text": "Nice!", "tags": ["bread"], "created_at": "2024-05-01T10:00:00+00:00", "learned": True,
         "messages": [{"speaker": "bob", "content": "I bake sourdough on Sundays"}]},
    ],
    "notes": [{"id": "note_bob1", "date": "2024-05-01", "content": "Talked about sourdough", "episodes": ["ep_bob1"]}],
    "knowledge": [{"id": "kn_bob1", "title": "Starter feeding", "body": "1:1:1 every 12 hours", "tags": ["bread"]}],
}


def _strip(export: dict) -> dict:
    return {k: v for k, v in export.items() if k != "exportedAt"}


def _ids(export: dict) -> set[str]:
    return {item["id"] for section in ("facts", "episodes", "notes", "knowledge") for item in export[section]}


def test_importing_an_export_into_another_user_twice_replaces_instead_of_copying(tmp_path, backend):
    mem = Memory(tmp_path / "h", background=False, store=backend)
    mem.import_(BOB, user="bob")
    bob_before = _strip(mem.export(user="bob"))
    exported = json.dumps(mem.export(user="bob"))

    first = mem.import_(exported, user="bob2")
    after_first = _strip(mem.export(user="bob2"))
    second = mem.import_(exported, user="bob2")
    after_second = _strip(mem.export(user="bob2"))

    assert [len(after_second[s]) for s in ("facts", "episodes", "notes", "knowledge")] == [2, 1, 1, 1]
    assert len(mem.facts(user="bob2")) == 2
    assert after_second == after_first
    sizes = {"profile": 1, "facts": 2, "episodes": 1, "notes": 1, "knowledge": 1}
    assert first == {**sizes, "replaced": 0}
    assert second == {**sizes, "replaced": 5}  # every item was already there
    # bob2's rows have ids of their own; bob's stay as they were
    assert not _ids(after_second) & _ids(bob_before)
    assert _strip(mem.export(user="bob")) == bob_before
    mem.close()


def test_ids_named_between_items_follow_their_items(tmp_path):
    mem = Memory(tmp_path / "h", background=False)
    mem.import_(BOB, user="bob")
    mem.import_(mem.export(user="bob"), user="bob2")
    export = mem.export(user="bob2")
    facts = {f["content"]: f for f in export["facts"]}
    sourdough, porto = facts["Bakes sourdough every Sunday"], facts["Moved the bakery to Porto"]
    [episode], [note] = export["episodes"], export["notes"]
    assert sourdough["provenance"]["episodes"] == [episode["id"]]
    assert sourdough["provenance"]["notes"] == [note["id"]]
    assert note["episodes"] == [episode["id"]]
    assert porto["supersedes"] == sourdough["id"] and porto["provenance"]["facts"] == [sourdough["id"]]
    # bob2's tags are bob2's: a recall of bob2 finds bob2's fact by its tag, never bob's
    assert [f.id for f in mem.facts(user="bob2") if "bread" in f.tags] == [sourdough["id"]]
    mem.close()


def test_a_second_import_finds_the_first_ones_rows_after_the_original_owner_is_gone(tmp_path):
    mem = Memory(tmp_path / "h", background=False)
    mem.import_(BOB, user="bob")
    exported = mem.export(user="bob")
    mem.import_(exported, user="bob2")
    written = _strip(mem.export(user="bob2"))
    mem.delete_user(user="bob", confirm="bob")
    again = mem.import_(exported, user="bob2")
    assert _strip(mem.export(user="bob2")) == written
    assert again["replaced"] == 5
    mem.close()


def test_the_cli_imports_into_another_user_twice_without_copies(tmp_path):
    home = tmp_path / "h"
    mem = Memory(home, background=False)
    mem.import_(BOB, user="bob")
    mem.close()
    out = tmp_path / "bob.json"
    runner = CliRunner()
    assert runner.invoke(app, ["export", "--user", "bob", "-o", str(out), "--home", str(home)]).exit_code == 0
    text = runner.invoke(app, ["import", str(out), "--user", "bob2", "--home", str(home)], catch_exceptions=False)
    again = runner.invoke(app, ["import", str(out), "--user", "bob2", "--json", "--home", str(home)],
                          catch_exceptions=False)
    facts = json.loads(runner.invoke(app, ["facts", "--user", "bob2", "--json", "--home", str(home)]).output)
    # the CLI keeps "--json was asked" in a context variable that outlives an in-process run; a
    # last run without --json sets it back, so later tests' errors are text again
    assert runner.invoke(app, ["facts", "--user", "bob2", "--home", str(home)]).exit_code == 0
    assert len(facts) == 2
    assert text.exit_code == 0 and "2 facts" in text.output and "0 replaced" in text.output
    assert json.loads(again.output)["replaced"] == 5


GOOD = {"content": "Lives in Lisbon", "confidence": 0.9}


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"content": "Likes jazz", "status": "weird"}, "facts[1].status"),
        ({"content": "Likes jazz", "confidence": 7}, "facts[1].confidence"),
        ({"content": "Likes jazz", "confidence": -0.5}, "facts[1].confidence"),
        ({"content": "Likes jazz", "confidence": "high"}, "facts[1].confidence"),
        ({"content": "Likes jazz", "created_at": "2026-02-30"}, "facts[1].created_at"),
        ({"content": "Likes jazz", "updated_at": "yesterday"}, "facts[1].updated_at"),
        ({"content": "Likes jazz", "uses": -3}, "facts[1].uses"),
        ({"content": "Likes jazz", "provenance": ["ep_1"]}, "facts[1].provenance"),
    ],
)
def test_a_strict_import_refuses_a_bad_value_naming_its_path_and_writes_nothing(tmp_path, backend, bad, field):
    mem = Memory(tmp_path / "h", background=False, store=backend)
    mem.remember("Existing fact stays", user="ana")
    before = _strip(mem.export(user="ana"))
    envelope = {"version": 1, "profile": {"user": {"workContext": {"summary": "Nurse"}}},
                "facts": [GOOD, bad], "episodes": [{"user_text": "hello"}]}
    with pytest.raises(InvalidInput) as err:
        mem.import_(envelope, user="ana")
    assert err.value.field == field
    assert field in str(err.value) and "nothing was imported" in str(err.value)
    assert _strip(mem.export(user="ana")) == before
    mem.close()


def test_remember_and_a_strict_import_refuse_the_same_confidence(mem):
    with pytest.raises(InvalidInput):
        mem.remember("Likes jazz", user="ana", confidence=7)
    with pytest.raises(InvalidInput) as err:
        mem.import_({"version": 1, "facts": [{"content": "Likes jazz", "confidence": 7}]}, user="ana")
    assert err.value.field == "facts[0].confidence"
    assert mem.facts(user="ana") == []


def test_a_strict_import_refuses_a_bad_date_of_a_deerflow_fact_and_of_a_profile_section(mem):
    deerflow = {"user": {}, "history": {}, "facts": [{"content": "Uses uv", "createdAt": "2026-02-30T00:00:00Z"}]}
    with pytest.raises(InvalidInput) as err:
        mem.import_(deerflow, user="ana")
    assert err.value.field == "facts[0].createdAt"
    envelope = {"version": 1, "profile": {"user": {"workContext": {"summary": "Nurse", "updatedAt": "2026-13-01"}}}}
    with pytest.raises(InvalidInput) as err:
        mem.import_(envelope, user="ana")
    assert err.value.field == "profile.user.workContext.updatedAt"
    assert mem.facts(user="ana") == [] and mem.profile(user="ana").user.work_context.summary == ""


def test_a_lenient_import_says_what_it_corrected(mem, caplog):
    counts = import_user(
        mem.ctx,
        {"version": 1, "facts": [{"content": "Likes jazz", "status": "weird", "confidence": 7,
                                  "created_at": "2026-02-30"}]},
        "ana",
        strict=False,
    )
    assert counts["facts"] == 1 and counts["corrected"] == 3
    for path in ("facts[0].status", "facts[0].confidence", "facts[0].created_at"):
        assert path in caplog.text
    [fact] = mem.facts(user="ana")
    assert (fact.status, fact.confidence) == ("consolidated", 1.0)


def test_a_file_imported_a_page_at_a_time_is_the_same_import(tmp_path, backend, monkeypatch):
    import reverie.portability as portability

    monkeypatch.setattr(portability, "IMPORT_PAGE", 2)  # BOB's sections cut into pages
    monkeypatch.setattr(portability, "EXPORT_PAGE", 2)
    many = json.loads(json.dumps(BOB))
    many["episodes"] += [{**BOB["episodes"][0], "id": f"ep_more{n}", "user_text": f"More bread talk {n}"}
                         for n in range(5)]
    many["facts"][0]["provenance"]["episodes"] += ["ep_more4"]  # a fact names an episode of a later page
    mem = Memory(tmp_path / "h", background=False, store=backend)
    mem.import_(many, user="bob")
    path = tmp_path / "bob.json"
    with path.open("w", encoding="utf-8") as out:
        mem.export_to(out, user="bob")

    # into another user (bob holds every id: all are mapped), from the file and from its text
    streamed = [mem.import_file(path, user="bob2"), mem.import_file(path, user="bob2")]
    whole = mem.import_(path.read_text(encoding="utf-8"), user="bob3")
    assert streamed[0] == {**whole, "replaced": 0} and streamed[1] == {**whole, "replaced": sum(
        whole[s] for s in ("facts", "episodes", "notes", "knowledge"))}
    two, three = mem.export(user="bob2"), mem.export(user="bob3")
    assert len(two["episodes"]) == 6 and not _ids(two) & _ids(mem.export(user="bob"))
    by_id = {ep["id"]: ep["user_text"] for ep in two["episodes"]}
    fact = next(f for f in two["facts"] if f["content"] == "Bakes sourdough every Sunday")
    assert [by_id[e] for e in fact["provenance"]["episodes"]] == ["I bake sourdough on Sundays", "More bread talk 4"]
    assert [len(two[s]) for s in ("facts", "episodes", "notes", "knowledge")] == \
        [len(three[s]) for s in ("facts", "episodes", "notes", "knowledge")]

    # a bad value on the last page: nothing of the earlier pages stays
    bad = json.loads(path.read_text(encoding="utf-8"))
    bad["episodes"][-1]["created_at"] = "2026-02-30T00:00:00Z"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(InvalidInput) as refused:
        mem.import_file(path, user="carl")
    assert refused.value.field.startswith("episodes[5]")
    assert mem.export(user="carl")["episodes"] == [] and mem.facts(user="carl") == []
    mem.close()


def test_an_import_file_tells_its_progress_after_each_page(tmp_path, monkeypatch):
    import reverie.portability as portability

    monkeypatch.setattr(portability, "IMPORT_PAGE", 2)
    many = json.loads(json.dumps(BOB))
    many["episodes"] += [{**BOB["episodes"][0], "id": f"ep_more{n}", "user_text": f"More bread talk {n}"}
                         for n in range(5)]
    path = tmp_path / "bob.json"
    path.write_text(json.dumps(many), encoding="utf-8")
    told: list[dict[str, int]] = []
    with Memory(tmp_path / "h", background=False) as mem:
        counts = mem.import_file(path, user="bob", on_progress=told.append)
    assert len(told) >= 4  # 6 episodes two at a time, and the other sections' pages
    assert [t["episodes"] for t in told] == sorted(t["episodes"] for t in told)
    assert told[-1] == {k: v for k, v in counts.items() if k != "replaced"} and told[-1]["episodes"] == 6


def test_an_import_file_that_is_not_json_or_not_utf8_is_refused_clearly(tmp_path, monkeypatch):
    import reverie.portability as portability

    monkeypatch.setattr(portability, "MAX_IMPORT_ITEM_CHARS", 2 << 20)
    mem = Memory(tmp_path / "h", background=False)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"version": 1, "facts": [{"content": "x" * (3 << 20)}]}), encoding="utf-8")
    with pytest.raises(InvalidInput, match="a value of more than 2 MB"):
        mem.import_file(big, user="ana")
    bom = tmp_path / "bom.json"  # a byte order mark (as some editors save) is read past
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(BOB).encode("utf-8"))
    assert mem.import_file(bom, user="bo")["facts"] == 2
    for body, said in ((b'{"version": 1, "facts": [{"content": "a"}, ', "not valid JSON"),
                       (b'{"version": 1} extra', "extra data"),
                       (b'{"version": 1, "facts": [{"content": "caf\xe9"}]}', "not UTF-8")):
        path = tmp_path / "f.json"
        path.write_bytes(body)
        with pytest.raises(InvalidInput, match=said):
            mem.import_file(path, user="ana")
    assert mem.facts(user="ana") == []
    mem.close()
