"""The PostgreSQL store's vacuum and statistics, where the server's autovacuum does not keep them.

PostgreSQL plans each statement from statistics that ``ANALYZE`` gathers, and reclaims
the rows that updates and deletes leave dead with ``VACUUM``; its autovacuum daemon runs
both as tables change. A server may run without it (``autovacuum = off``, or
``autovacuum_enabled = false`` on a table). Then a store that grows from empty is planned
as if it were still empty. psycopg prepares a statement after its fifth run, and the
server's generic plan, made while the table was small, stays cached until the table's
statistics change; on a server without autovacuum they never do. On this project's
machines a 10,000-episode build read 50 million index entries that way: the episode
upsert found the row it replaces by scanning the user's every episode (the (user_id, pk)
index, filtered by id), so each write cost as much as the store held.

So the store does what autovacuum would, for its own tables and only for those that
autovacuum leaves alone: after its transactions and the statements that write, at most every
:data:`CHECK_SECONDS`, a thread of the store's reads the tables' counters
(``pg_stat_user_tables``) and vacuums or analyzes the tables past the server's own
autovacuum thresholds (``autovacuum_*_threshold`` plus ``*_scale_factor`` times the rows).
A new plan follows: an ``ANALYZE`` invalidates the cached ones. ``SKIP_LOCKED`` leaves a
table that another replica is vacuuming to it.
Where autovacuum runs, the thread reads the counters (a catalog read of a few
milliseconds at most every few seconds) and does nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from reverie.store.background import Background

log = logging.getLogger("reverie.store")

# how often, at most, the counters are read while writes go on (seconds)
CHECK_SECONDS = 5.0

# the store's tables (of ``tables``) that autovacuum leaves alone and that are past its
# thresholds: what autovacuum would do to each (thresholds and scale factors are the server's)
DUE = """
SELECT c.relname,
  s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8
      + current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0)
    OR s.n_ins_since_vacuum > current_setting('autovacuum_vacuum_insert_threshold')::float8
      + current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * greatest(c.reltuples, 0),
  s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
      + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0),
  s.schemaname
FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
WHERE s.schemaname = current_schema() AND c.relname = ANY(%s)
  AND (current_setting('autovacuum') = 'off' OR coalesce(c.reloptions, '{}') @> ARRAY['autovacuum_enabled=false'])
ORDER BY c.relname
"""


class Upkeep(Background):
    """Vacuums and analyzes a store's tables that autovacuum leaves alone, from a thread,
    after the store's transactions and writes (:meth:`soon`: the thread starts at the
    first and looks at the counters within :attr:`every` seconds), or at once (:meth:`run`).
    ``connect`` lends a connection in autocommit mode (VACUUM cannot run inside a
    transaction). :meth:`stop` cancels a VACUUM or ANALYZE under way (the next
    write of any process that shares the store finds the table due again), so closing a
    store never waits for a large table's vacuum."""

    def __init__(self, connect: Callable[[], AbstractContextManager[Any]], tables: Sequence[str], *,
                 every: float = CHECK_SECONDS):
        super().__init__("reverie-pg-upkeep")
        self._connect = connect
        self.tables = list(tables)  # the store's own (another application's in its schema are left alone)
        self.every = every
        self._running = threading.Lock()  # one pass at a time, the thread's or a caller's
        self._busy: Any = None  # the connection of a pass under way
        self.done: list[tuple[str, str]] = []  # (table, "vacuum" | "analyze"), the newest 100
        self._warned = False  # a failed pass was logged as a warning

    def _interrupt(self) -> None:
        busy = self._busy
        if busy is not None:
            try:
                busy.cancel_safe(timeout=5)
            except Exception:  # it ended meanwhile, or the server is gone: the join is short either way
                pass

    def run(self, halt: threading.Event | None = None) -> list[tuple[str, str]]:
        """One pass now: vacuum or analyze each due table (until ``halt``); what was done, in order."""
        did: list[tuple[str, str]] = []
        with self._running, self._connect() as conn:
            self._busy = conn
            due: list[tuple[str, bool, bool]] = []
            try:
                rows = conn.execute(DUE, (self.tables,)).fetchall()
                due = [(str(t), bool(v), bool(a)) for t, v, a, _ in rows if v or a]
                schemas = {str(t): str(n) for t, _, _, n in rows}
                if due:
                    # at autovacuum's pace (its cost delay; a manual VACUUM's default is none), so
                    # that a writer beside it is not starved of the server's I/O
                    conn.execute("SELECT set_config('vacuum_cost_delay', current_setting("
                                 "'autovacuum_vacuum_cost_delay'), false) "
                                 "WHERE current_setting('autovacuum_vacuum_cost_delay') NOT IN ('-1', '-1ms')")
                for table, vacuum, analyze in due:
                    if halt is not None and halt.is_set():
                        break
                    # named in the store's schema: never another schema's table of the same name
                    name = ".".join('"' + part.replace('"', '""') + '"' for part in (schemas[table], table))
                    # VACUUM (ANALYZE) when both are due; a table being vacuumed elsewhere is skipped
                    statement = f"VACUUM (SKIP_LOCKED{', ANALYZE' if analyze else ''}) {name}" if vacuum else \
                        f"ANALYZE (SKIP_LOCKED) {name}"
                    conn.execute(statement)
                    did.append((table, "vacuum" if vacuum else "analyze"))
            finally:
                self._busy = None
                if due:
                    conn.execute("RESET vacuum_cost_delay")  # the connection goes back to the pool
        self.done = (self.done + did)[-100:]
        return did

    def _loop(self, halt: threading.Event) -> None:
        last = 0.0
        while True:
            self._wanted.wait()
            wait = last + self.every - time.monotonic()
            if halt.wait(max(wait, 0.0)):
                return
            self._wanted.clear()  # the writes of the wait are looked at in this pass
            last = time.monotonic()
            try:
                self.run(halt)
            except Exception as exc:  # the next transaction asks again; the store works without it
                if halt.is_set():
                    return  # cancelled by stop()
                # said once a process at warning level (a server that refuses it refuses it every time)
                log.log(logging.DEBUG if self._warned else logging.WARNING,
                        "vacuum or analyze of the PostgreSQL store's tables failed: %s", exc)
                self._warned = True
