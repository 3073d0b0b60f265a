"""Writes that stay cheap as a store grows: ids that sort by the time they were made, and
SQLite checkpoints taken by a thread instead of inside the writer's COMMIT."""

from __future__ import annotations

import re
import sqlite3
import threading
import time

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
    store.close()
    assert not [t for t in threading.enumerate() if t.name == "reverie-checkpoint" and t.is_alive()]


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


def test_a_store_used_again_after_close_still_checkpoints(tmp_path):
    store = SQLiteStore(tmp_path / "reverie.db")
    store.put_episode(_episode(1))
    store.close()
    before = store._checkpointer.checkpoints
    store.put_episode(_episode(2))
    deadline = time.monotonic() + 10
    while store._checkpointer.checkpoints == before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store._checkpointer.checkpoints >= 1
    assert store._checkpointer.checkpoints > before  # a thread of its own again, after close
    assert len(store.list_episodes("ana")) == 2
    store.close()
