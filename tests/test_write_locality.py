"""Writes that stay cheap as a store grows: ids that sort by the time they were made, and
SQLite checkpoints taken by a thread instead of inside the writer's COMMIT."""

from __future__ import annotations

import re
import sqlite3
import threading
import time

import pytest

from reverie.errors import StoreError
from reverie.models import Episode, Message, new_id
from reverie.store.checkpoint import BACKSTOP_PAGES
from reverie.store.sqlite import SQLiteStore


def test_ids_made_later_sort_later_and_never_repeat():
    first = [new_id("ep") for _ in range(20_000)]
    time.sleep(0.002)  # a later millisecond
    later = [new_id("ep") for _ in range(1_000)]
    assert all(re.fullmatch(r"ep_[0-9a-f]{24}", i) for i in first + later)
    assert len(set(first + later)) == len(first) + len(later)
    assert max(first) < min(later)  # every index keyed by id takes the newer at its right edge
    # within one millisecond the order is random, but never before an earlier millisecond's
    assert first == sorted(first, key=lambda i: i[:15])


def _episode(n: int) -> Episode:
    return Episode(user="ana", thread="t", status="completed", user_text=f"turn {n}",
                   messages=[Message(role="user", content=f"I planted {n} tulips today")])


def _log_frames(path) -> tuple[int, int]:
    """(frames in the log, frames of it already copied into the file), read from outside."""
    conn = sqlite3.connect(path)
    try:
        _, log, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        conn.close()
    return log, copied


def test_a_thread_checkpoints_soon_after_commits(tmp_path):
    store = SQLiteStore(tmp_path / "reverie.db")
    conn = store._conn()
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
    for n in range(50):
        store.put_episode(_episode(n))
    deadline = time.monotonic() + 10
    while store._checkpointer.checkpoints == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store._checkpointer.checkpoints >= 1
    # the writer is idle now: once the thread's last checkpoint is done, nothing is left to copy
    while time.monotonic() < deadline:
        log, copied = _log_frames(tmp_path / "reverie.db")
        if log == copied:
            break
        time.sleep(0.02)
    assert log == copied and log > 0
    assert len(store.list_episodes("ana")) == 50
    thread = store._checkpointer._thread
    assert thread is not None and thread.is_alive()
    store.close()
    # this store's thread (another test's store, still open, may have one of the same name)
    assert not thread.is_alive()


def test_a_store_that_only_reads_starts_no_checkpoint_thread(tmp_path):
    writer = SQLiteStore(tmp_path / "reverie.db")
    writer.put_episode(_episode(1))
    writer.close()
    reader = SQLiteStore(tmp_path / "reverie.db")  # opening checks the schema in a transaction
    checkpointer = reader._checkpointer
    try:
        assert [e.user_text for e in reader.list_episodes("ana")] == ["turn 1"]
        assert reader.get_episode("nope") is None
        with reader.transaction():  # a transaction that changes nothing has nothing to copy
            reader.count_facts("ana")
        assert checkpointer._thread is None
        reader.put_episode(_episode(2))
        assert checkpointer._thread is not None
    finally:
        reader.close()


def test_a_closed_store_refuses_writes_and_its_file_opens_again(tmp_path):
    # a closed store once opened a connection (and a checkpoint thread) again behind its
    # owner's back; now it says it is closed, and a new store over the file has every write
    store = SQLiteStore(tmp_path / "reverie.db")
    store.put_episode(_episode(1))
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.put_episode(_episode(2))
    again = SQLiteStore(tmp_path / "reverie.db")
    try:
        again.put_episode(_episode(2))
        assert len(again.list_episodes("ana")) == 2
    finally:
        again.close()


def test_the_write_mark_moves_with_any_write_and_only_then(tmp_path):
    store, other = SQLiteStore(tmp_path / "reverie.db"), SQLiteStore(tmp_path / "reverie.db")
    try:
        store.put_episode(_episode(1))
        mark = store.write_mark()
        store.get_episodes([new_id("ep")])
        assert store.write_mark() == mark  # reads move nothing
        other.put_episode(_episode(2))  # another connection (another process would be the same)
        assert store.write_mark() != mark
        mark = store.write_mark()
        store.put_episode(_episode(3))  # this connection's own write
        assert store.write_mark() != mark
        mark = store.write_mark()
        with store.transaction():
            store.get_episodes([new_id("ep")])
            assert store.write_mark() == mark  # a transaction that writes nothing moves nothing
    finally:
        store.close()
        other.close()


def _counting_reads(mem, monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    reads: list[int] = []
    real = mem.store.get_episodes

    def get_episodes(ids):  # type: ignore[no-untyped-def]
        found = real(ids)
        reads.append(len(found))
        return found

    monkeypatch.setattr(mem.store, "get_episodes", get_episodes)
    return reads


def test_learning_reads_a_batch_once_when_nothing_was_written_meanwhile(mem, monkeypatch):
    mem.add([{"role": "user", "content": f"I planted {n} tulips in the garden"} for n in range(3)], user="ana",
            group="message")
    reads = _counting_reads(mem, monkeypatch)
    assert mem.flush() == 3
    assert reads == [3]  # read to learn; applied without reading again
    assert all(e.learned and e.summary for e in mem.store.list_episodes("ana"))


def test_learning_reads_again_what_another_connection_wrote_while_the_engine_worked(mem, monkeypatch):
    ep = mem.add([{"role": "user", "content": "I prefer green tea in the afternoon"}], user="ana")[0]
    engine, original = mem.engines.summarize, mem.engines.summarize.summarize

    def slow_summarize(request):  # type: ignore[no-untyped-def]
        # another thread has its own connection: only the database can tell this one of its write
        writer = threading.Thread(target=mem.feedback, args=(ep.id, "rejected"), kwargs={"reason": "wrong"})
        writer.start()
        writer.join()
        return original(request)

    reads = _counting_reads(mem, monkeypatch)
    engine.summarize = slow_summarize
    try:
        assert mem.flush() == 1
    finally:
        engine.summarize = original
    assert reads == [1, 1]
    stored = mem.episode(ep.id)
    assert stored.learned and stored.summary
    assert stored.feedback is not None and stored.feedback.status == "rejected"
