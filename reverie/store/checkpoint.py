"""The SQLite store's checkpoints, off the writer's path.

In WAL mode every commit appends the pages it changed to the write-ahead log, and a
checkpoint copies them back into the database file (with an fsync). SQLite's own
automatic checkpoint runs inside the COMMIT that crosses its threshold, so the writer
waits for it: at 100k episodes a learning batch changes ~4,000 pages and its COMMIT took
80 ms, 14 of them its own. Here a thread of the store's owns a connection of its own and
checkpoints soon after a commit, while the writer goes on; SQLite releases the
interpreter lock while it copies, so the copying runs on another core.

SQLite's automatic checkpoint stays as a backstop, at a higher threshold
(:data:`BACKSTOP_PAGES`): if this thread cannot keep up (or has stopped), the log still
stays bounded. A checkpoint never blocks a writer or a reader (``PASSIVE``); what it
cannot copy yet, because a reader still reads an older snapshot, the next one copies.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from reverie.store.background import Background

log = logging.getLogger("reverie.store")

# the automatic checkpoint's threshold (pages of the log) while the thread checkpoints
BACKSTOP_PAGES = 20_000
# how long the thread waits after a commit for more before it checkpoints (seconds)
SETTLE_SECONDS = 0.05


class Checkpointer(Background):
    """Checkpoints ``path``'s log from a thread, soon after each :meth:`soon` (a commit
    happened; the thread starts at the first commit, so a process that only reads never
    has one). :meth:`stop` waits for the checkpoint it may be running (the store's last
    connection to close checkpoints what is left)."""

    def __init__(self, path: Path, busy_timeout_ms: int):
        super().__init__("reverie-checkpoint")
        self.path = path
        self._busy_ms = busy_timeout_ms
        self.checkpoints = 0  # completed

    def _loop(self, halt: threading.Event) -> None:
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=self._busy_ms / 1000)
        except sqlite3.Error:
            log.exception("the checkpoint thread cannot open %s; SQLite's own checkpoints remain", self.path)
            return
        try:
            while True:
                self._wanted.wait()
                # the commits of a burst are checkpointed together
                self._wanted.clear()
                if halt.wait(SETTLE_SECONDS):
                    return
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error as exc:  # the next commit asks again; the backstop bounds the log
                    log.warning("checkpoint of %s failed: %s", self.path, exc)
        finally:
            conn.close()
