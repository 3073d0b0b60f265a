"""The SQLite store: schema, transactions, full text in two languages, several processes."""

from __future__ import annotations

import multiprocessing
import sqlite3
import uuid

import pytest

from reverie import Memory, StoreError
from reverie.models import Episode, Fact, Message
from reverie.store import SQLiteStore


def test_new_store_has_schema_version_wal_and_foreign_keys(tmp_path):
    store = SQLiteStore(tmp_path / "r.db")
    assert store.schema_version() >= 1
    conn = sqlite3.connect(tmp_path / "r.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._x("PRAGMA foreign_keys").fetchone()[0] == 1
    store.close()


def test_reopening_does_not_migrate_twice(tmp_path):
    SQLiteStore(tmp_path / "r.db").close()
    store = SQLiteStore(tmp_path / "r.db")
    rows = store._x("SELECT COUNT(*) FROM schema_version").fetchone()[0]
    assert rows == 1
    store.close()


def test_store_from_a_newer_reverie_is_refused(tmp_path):
    SQLiteStore(tmp_path / "r.db").close()
    conn = sqlite3.connect(tmp_path / "r.db")
    conn.execute("UPDATE schema_version SET version = 999")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SQLiteStore(tmp_path / "r.db")


def test_failed_transaction_leaves_nothing(tmp_path):
    store = SQLiteStore(tmp_path / "r.db")
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put_fact(Fact(user="ana", content="first"))
            with store.transaction():  # nested blocks join the outer one
                store.put_fact(Fact(user="ana", content="second"))
            raise RuntimeError("boom")
    assert store.list_facts("ana") == []
    assert store.search("ana", ["first"], ["fact"], 10) == []
    store.close()


def test_full_text_finds_english_stems_and_chinese_words(tmp_path):
    store = SQLiteStore(tmp_path / "r.db")
    store.put_fact(Fact(user="ana", content="Runs marathons every spring"))
    store.put_fact(Fact(user="ana", content="回答时先给结论，不要长铺垫"))
    store.put_fact(Fact(user="bob", content="Runs a bakery"))
    english = store.search("ana", ["marathon", "run"], ["fact"], 10)
    chinese = store.search("ana", ["结论"], ["fact"], 10)
    assert len(english) == 1 and len(chinese) == 1
    assert store.get_fact(chinese[0].id).content.startswith("回答时")
    store.close()


def test_search_sees_only_completed_unarchived_episodes(tmp_path):
    store = SQLiteStore(tmp_path / "r.db")
    done = Episode(user="ana", status="completed", messages=[Message(content="kayak trip")])
    pending = Episode(user="ana", status="pending", messages=[Message(content="kayak rental")])
    archived = Episode(user="ana", status="completed", archived=True, messages=[Message(content="kayak club")])
    for ep in (done, pending, archived):
        store.put_episode(ep)
    hits = store.search("ana", ["kayak"], ["episode"], 10)
    assert [h.id for h in hits] == [done.id]
    store.close()


def test_rewriting_an_item_keeps_one_search_row(tmp_path):
    store = SQLiteStore(tmp_path / "r.db")
    fact = Fact(user="ana", content="likes tea")
    store.put_fact(fact)
    fact.content = "likes coffee"
    store.put_fact(fact)
    assert store.search("ana", ["tea"], ["fact"], 10) == []
    assert len(store.search("ana", ["coffee"], ["fact"], 10)) == 1
    store.close()


def _writer(home: str, worker: int, count: int) -> None:
    mem = Memory(home, background=False)
    for _ in range(count):
        mem.remember(f"w{worker} stored item {uuid.uuid4().hex} {uuid.uuid4().hex}", user="ana")
    mem.store.close()


def test_two_processes_writing_at_once_lose_nothing(home):
    Memory(home, background=False).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(home), w, 60)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    mem = Memory(home, background=False)
    assert len(mem.facts(user="ana")) == 120
    mem.close()
