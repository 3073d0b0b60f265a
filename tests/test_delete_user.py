"""Deleting a user's whole memory leaves nothing of them in any table or file, and nothing
of anyone else is touched."""

from __future__ import annotations

import sqlite3
import threading
from datetime import datetime, timezone

import httpx
import pytest
from typer.testing import CliRunner

from reverie import InvalidInput, Memory, StoreError
from reverie.cli import app
from reverie.facts import note_skipped
from reverie.keys import create_key
from reverie.server import create_app
from reverie.store.sqlite import SQLiteStore
from tests.live_server import live_server

MARK = "zanzibar"  # a word only ana's memory holds


def fill(memory: Memory, user: str, word: str) -> None:
    memory.remember(f"Dreams of {word} every winter", user=user, category="goal", tags=[word])
    with memory.turn(f"I booked a trip to {word} for March", user=user, thread="travel") as turn:
        turn.complete("Exciting!")
    memory.add([f"My friend from {word} visits in May", "Lovely"], user=user, thread="friends")
    memory.add_knowledge(f"{word} packing list", "- sunscreen\n- hat", user=user)
    memory.flush()
    memory.dream(user=user, days=30, force=True)
    memory.set_profile("user.topOfMind", f"Planning {word}", user=user)
    create_key(memory.store, user=user)
    with memory.store.transaction():  # what health counts of a user lives in per-user meta keys
        note_skipped(memory.store, user, {"trivial": 1}, datetime.now(timezone.utc))


def rows_mentioning(db, needles: tuple[str, ...], user: str | None = None) -> list[str]:
    conn = sqlite3.connect(db)
    found = []
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        if table.endswith(("_data", "_idx", "_docsize", "_config", "_content")):
            continue  # FTS5 shadow tables: read through the FTS table itself
        for row in conn.execute(f"SELECT * FROM {table}"):
            text = " ".join(str(v) for v in row).casefold()
            if any(n in text for n in needles) or (user is not None and user in row):
                found.append(f"{table}: {text[:80]}")
    conn.close()
    return found


def test_delete_user_removes_every_row_and_file_and_keeps_the_others(home):
    with Memory(home, background=False) as memory:
        fill(memory, "ana", MARK)
        fill(memory, "bob", "lofoten")
        before_bob = memory.export(user="bob")
        assert rows_mentioning(home / "reverie.db", (MARK,))
        with pytest.raises(InvalidInput):
            memory.delete_user(user="ana", confirm="bob")
        deleted = memory.delete_user(user="ana", confirm="ana")
        assert deleted["episodes"] >= 2 and deleted["facts"] >= 1 and deleted.get("files", 0) >= 1
        assert memory.users() == ["bob"]
        after_bob = memory.export(user="bob")
        for side in (before_bob, after_bob):
            side.pop("exportedAt")
        assert after_bob == before_bob
    assert rows_mentioning(home / "reverie.db", (MARK, '"ana"'), user="ana") == []
    conn = sqlite3.connect(home / "reverie.db")
    keys = [k for (k,) in conn.execute("SELECT key FROM meta")]
    conn.close()
    assert "facts-skipped:bob" in keys and not [k for k in keys if k.endswith(":ana")]
    assert not (home / "users" / "ana").exists() and (home / "users" / "bob").is_dir()
    assert not any(MARK in p.read_text(encoding="utf-8", errors="ignore") for p in home.rglob("*.md"))


def test_delete_user_over_rest_and_cli_needs_the_confirmation(home):
    with Memory(home, background=False) as memory:
        fill(memory, "ana", MARK)
        key = create_key(memory.store, user="ana").secret
        with live_server(create_app(memory, mcp=False)) as url:
            headers = {"Authorization": f"Bearer {key}"}
            assert httpx.delete(f"{url}/api/memory", headers=headers).status_code == 422  # no confirm
            assert httpx.delete(f"{url}/api/memory", params={"confirm": "bob"}, headers=headers).status_code == 400
            r = httpx.delete(f"{url}/api/memory", params={"confirm": "ana", "purge": "true"}, headers=headers)
            assert r.status_code == 200 and r.json()["deleted"]["episodes"] >= 2
        fill(memory, "cy", "atlantis")
    result = CliRunner().invoke(app, ["delete-user", "--user", "cy", "--confirm", "cy", "--home", str(home)])
    assert result.exit_code == 0 and "deleted the memory of cy" in result.output
    assert rows_mentioning(home / "reverie.db", (MARK, "atlantis")) == []
    assert _bytes_holding(home, MARK) == []  # the REST delete purged


def _bytes_holding(home, word: str) -> list[str]:
    """The store's files whose raw bytes still hold ``word`` (free pages, index segments, the log)."""
    return [p.name for p in home.glob("reverie.db*") if word.encode() in p.read_bytes()]


def test_a_purge_leaves_no_byte_of_a_deleted_user_in_the_store_files(home):
    with Memory(home, background=False) as memory:
        fill(memory, "ana", MARK)
        fill(memory, "bob", "lofoten")
        memory.delete_user(user="ana", confirm="ana")
        assert _bytes_holding(home, MARK)  # deleted rows' bytes: free pages, the index's segments
        result = CliRunner().invoke(app, ["delete-user", "--user", "bob", "--confirm", "bob", "--purge",
                                          "--home", str(home)])
        assert result.exit_code == 0
        assert _bytes_holding(home, MARK) == [] and _bytes_holding(home, "lofoten") == []


def test_a_purge_keeps_everyone_else_whole_and_searchable(bmem):
    memory = bmem  # on SQLite and on PostgreSQL
    fill(memory, "ana", MARK)
    fill(memory, "bob", "lofoten")
    before = memory.export(user="bob")
    memory.delete_user(user="ana", confirm="ana", purge=True)
    after = memory.export(user="bob")
    for side in (before, after):
        side.pop("exportedAt")
    assert after == before
    assert "lofoten" in memory.recall("when do I go to lofoten?", user="bob").context
    assert MARK not in memory.recall(f"{MARK} trip", user="bob").context


def test_a_purge_waits_out_another_checkpoint_and_leaves_no_byte(home):
    """A checkpoint that meets another one running gives up at once (SQLite calls no busy
    handler there): a purge beside a process that checkpoints all the time still empties the log."""
    with Memory(home, background=False) as memory:
        for n in range(30):
            fill(memory, f"u{n}", f"{MARK}{n}x")
        memory.delete_user(user="u0", confirm="u0")
        stop = threading.Event()

        def checkpoint_all_the_time() -> None:
            other = sqlite3.connect(home / "reverie.db", isolation_level=None)
            while not stop.is_set():
                other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            other.close()

        hammer = threading.Thread(target=checkpoint_all_the_time)
        hammer.start()
        try:
            memory.store.purge()
        finally:
            stop.set()
            hammer.join()
        assert _bytes_holding(home, f"{MARK}0x") == []


def test_a_purge_that_cannot_empty_the_log_says_so_and_the_deletion_stands(tmp_path):
    store = SQLiteStore(tmp_path / "reverie.db", busy_timeout_ms=300)
    try:
        with Memory(tmp_path, store=store, background=False) as memory:
            fill(memory, "ana", MARK)
            fill(memory, "bob", "lofoten")
            reader = sqlite3.connect(tmp_path / "reverie.db", isolation_level=None)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM facts").fetchone()  # a snapshot from before the purge
            with pytest.raises(StoreError, match="log of .* still holds their old pages.*--purge"):
                memory.delete_user(user="ana", confirm="ana", purge=True)
            assert memory.users() == ["bob"] and not (tmp_path / "users" / "ana").exists()
            reader.execute("COMMIT")
            reader.close()
            memory.delete_user(user="ana", confirm="ana", purge=True)  # again, with the store idle
            assert _bytes_holding(tmp_path, MARK) == []
    finally:
        store.close()
