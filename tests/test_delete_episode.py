"""Forgetting one conversation: an episode deleted for good with the note lines drawn from it,
the facts learned from it listed; and a purge that leaves no byte of a deleted item."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from reverie import Memory
from reverie.cli import app as cli
from reverie.errors import InvalidInput, NotFound
from reverie.server import create_app
from tests.live_server import live_server

SECRET_WORD = "QUOKKAMANGO"
DAY = datetime(2026, 11, 20, 10, 0, tzinfo=timezone.utc)


def told(memory: Memory, user: str = "gil") -> str:
    """Two conversations of one day, learned; the id of the one to delete."""
    memory.add([{"role": "user", "content": f"My landlord is Mr {SECRET_WORD} and he lives downstairs"}],
               user=user, thread="rent", at=DAY)
    memory.add([{"role": "user", "content": "I play the cello on Fridays"}], user=user, thread="music", at=DAY)
    memory.flush(user=user)
    (episode,) = [e for e in memory.episodes(user=user) if SECRET_WORD in e.user_text]
    return episode.id


def stored_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("reverie.db"))


def test_deleting_an_episode_takes_its_note_lines_and_keeps_the_rest(bmem):
    episode_id = told(bmem)
    assert SECRET_WORD in bmem.recall("who is my landlord?", user="gil").context
    learned = [f.id for f in bmem.facts(user="gil") if episode_id in f.provenance.episodes]

    gone = bmem.delete_episode(episode_id, user="gil")

    assert gone.episode_id == episode_id and len(gone.notes) == 1 and gone.facts == learned
    with pytest.raises(NotFound):
        bmem.episode(episode_id, user="gil")
    notes = [n.content for n in bmem.notes(user="gil")] if hasattr(bmem, "notes") else []
    assert not any(SECRET_WORD in str(n) for n in notes)
    day_file = bmem.files.notes_file("gil", DAY.date().isoformat())
    assert "cello" in day_file.read_text(encoding="utf-8") and SECRET_WORD not in day_file.read_text(encoding="utf-8")
    assert [f.id for f in bmem.facts(user="gil") if f.id in learned] == learned  # the facts stay, listed
    assert "cello" in bmem.recall("what do I play?", user="gil").context
    assert bmem.check_store().intact


def test_a_day_left_without_lines_loses_its_notes_file(mem):
    mem.add([{"role": "user", "content": f"My landlord is Mr {SECRET_WORD}"}], user="gil", at=DAY)
    mem.flush(user="gil")
    (episode,) = mem.episodes(user="gil")
    day_file = mem.files.notes_file("gil", DAY.date().isoformat())
    assert day_file.exists()
    mem.delete_episode(episode.id, user="gil")
    assert not day_file.exists()
    assert mem.recall(f"{SECRET_WORD} landlord", user="gil").items == []


def test_another_users_episode_is_not_found_and_stays(bmem):
    episode_id = told(bmem, "gil")
    with pytest.raises(NotFound):
        bmem.delete_episode(episode_id, user="ana")
    assert bmem.episode(episode_id, user="gil").id == episode_id


def test_a_purge_leaves_no_byte_of_a_deleted_episode_or_fact(home):
    with Memory(home, background=False) as memory:
        gone = memory.delete_episode(told(memory), user="gil")
        for fact_id in gone.facts:  # what was learned from it goes too, as the answer advises
            memory.forget(fact_id, user="gil", hard=True)
        fact = memory.remember("Bank security question answer is ZEBRAFINCH", user="gil")
        memory.forget(fact.id, user="gil", hard=True)
        # deleted, not yet purged: the search index's segments and free pages keep the words
        assert b"zebrafinch" in stored_bytes(home).lower()
        memory.forget(memory.remember("Spare key is under the GNUPOTATO pot", user="gil").id, user="gil", hard=True,
                      purge=True)
        gone = memory.delete_episode(told(memory, "hal"), user="hal", purge=True)
        assert gone.purged
        for fact_id in gone.facts:
            memory.forget(fact_id, user="hal", hard=True, purge=True)
        left = stored_bytes(home).lower()
    for word in (SECRET_WORD, "ZEBRAFINCH", "GNUPOTATO"):
        assert word.lower().encode() not in left, word


def test_purge_without_hard_is_refused(mem):
    fact = mem.remember("Lives in Lisbon", user="gil")
    with pytest.raises(InvalidInput, match="hard"):
        mem.forget(fact.id, user="gil", purge=True)
    assert mem.fact(fact.id).status != "archived"


def test_rest_deletes_an_episode_once_and_only_its_users(home):
    with Memory(home, background=False) as memory, live_server(create_app(memory, auth=False, mcp=False)) as url:
        episode_id = told(memory)
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.delete(f"/api/memory/episodes/{episode_id}?user=ana").status_code == 404
            done = client.delete(f"/api/memory/episodes/{episode_id}?user=gil")
            assert done.status_code == 200, done.text
            assert done.json()["episode_id"] == episode_id and len(done.json()["notes"]) == 1
            assert client.delete(f"/api/memory/episodes/{episode_id}?user=gil").status_code == 404


def test_the_cli_forgets_an_episode_only_with_hard(home):
    with Memory(home, background=False) as memory:
        episode_id = told(memory)
    runner = CliRunner()
    soft = runner.invoke(cli, ["forget", episode_id, "--user", "gil", "--home", str(home)])
    assert soft.exit_code != 0 and "--hard" in soft.output
    hard = runner.invoke(cli, ["forget", episode_id, "--user", "gil", "--home", str(home), "--hard", "--json"])
    assert hard.exit_code == 0, hard.output
    assert json.loads(hard.output)["episode_id"] == episode_id
    with Memory(home, background=False) as memory:
        assert not [e for e in memory.episodes(user="gil") if e.id == episode_id]


def test_a_note_imported_again_on_another_day_leaves_its_old_days_file(mem):
    note = {"id": "note_moved", "date": "2026-11-01", "content": "Walked the dog"}
    envelope = {"version": 1, "user": "dan", "notes": [note]}
    mem.import_(json.dumps(envelope), user="dan", strict=False)
    old_file = mem.files.notes_file("dan", "2026-11-01")
    assert old_file.exists()
    mem.import_(json.dumps({**envelope, "notes": [{**note, "date": "2026-11-02"}]}), user="dan", strict=False)
    assert not old_file.exists() and mem.files.notes_file("dan", "2026-11-02").exists()


def test_a_misspelled_query_parameter_is_refused_not_ignored(home):
    """?purg=true answered 200 and purged nothing: a typo must not quietly do the other thing."""
    with Memory(home, background=False) as memory, live_server(create_app(memory, auth=False, mcp=False)) as url:
        episode_id = told(memory)
        with httpx.Client(base_url=url, timeout=30) as client:
            typo = client.delete(f"/api/memory/episodes/{episode_id}?user=gil&purg=true")
            assert typo.status_code == 400 and typo.json()["field"] == "purg" and "purge" in typo.json()["detail"]
            assert memory.episode(episode_id, user="gil").id == episode_id  # nothing was done
            assert client.get("/api/memory/facts?user=gil&limt=5").status_code == 400


def test_a_postgres_purge_leaves_no_count_row_of_a_deleted_word(home, pg_url):
    with Memory(home, background=False, store=pg_url) as memory:
        fact = memory.remember("Keeps a snorkelwumpus in the glimmerwright shed", user="gil")
        memory.forget(fact.id, user="gil", hard=True, purge=True)
        rows = memory.store._q("SELECT lexeme FROM term_sizes WHERE lexeme LIKE %s OR lexeme LIKE %s",
                               ["%snorkelwumpus%", "%glimmerwright%"])
        assert rows == []
        assert memory.check_store().intact


def test_a_line_forgotten_for_good_leaves_past_dreams_reports_and_diaries(bmem):
    """A dream's report and diary told the line it added: after a hard forget they still did."""
    bmem.add([{"role": "user", "content": "I am allergic to xylophonium berries"}], user="ana", at=DAY)
    bmem.flush(user="ana")
    run = bmem.dream(user="ana", days=30, now=DAY)
    assert run.status == "done", run.error
    told = [f for f in bmem.facts(user="ana") if "xylophonium" in f.content.lower()]
    assert told and any("xylophonium" in text.lower() for text in bmem.diaries(user="ana").values())
    for fact in told:
        bmem.forget(fact.id, user="ana", hard=True)
    report = json.dumps(bmem.dream_status(run.id, user="ana").report)
    assert "xylophonium" not in report.lower() and "[forgotten]" in report
    for text in bmem.diaries(user="ana").values():
        assert "xylophonium" not in text.lower()
