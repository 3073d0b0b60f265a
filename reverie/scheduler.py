"""The nightly run (default 23:55 local, ``settings.dream_time``): the daily flush of the
learning line first, then a dream for each user: one after another, or ``learn_threads``
users at once while the distill step waits on an endpoint.

    >>> Scheduler(mem).start()      # a daemon thread; .stop() ends it

It drives a :class:`~reverie.memory.Memory` (anything with ``flush``, ``users``,
``dream``, ``settings`` and ``store``) the way a person would, so it holds no logic of the
lines. Several processes sharing one store (replicas over PostgreSQL) each run a schedule;
the night's run happens once: the first to claim it (the store's ``nightly`` lock and the
time of the last run) runs it, the others skip it.
"""

from __future__ import annotations

import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import Protocol

from reverie.errors import Conflict, InvalidInput
from reverie.settings import Settings
from reverie.store.base import DreamRun, Store

log = logging.getLogger("reverie.scheduler")
# the time of the last nightly run some process claimed (UTC ISO), in the store's meta
NIGHTLY_META = "nightly.last"


class Nightly(Protocol):
    """What the schedule drives: the Memory facade."""

    settings: Settings
    store: Store

    def flush(self, *, user: str | None = None) -> int: ...

    def users(self) -> list[str]: ...

    def dream(self, *, user: str, now: datetime | None = None) -> DreamRun: ...


class Scheduler:
    def __init__(self, memory: Nightly, *, at: str | None = None):
        self.memory = memory
        self.at = clock(at or memory.settings.dream_time)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def next_run(self, now: datetime | None = None) -> datetime:
        """The next run time after ``now`` (local time). The day is counted on the wall clock
        and the offset taken for the day it lands on: across a change of daylight saving time a
        fixed offset would run an hour off (and twice on the night the clocks go back)."""
        now = (now or datetime.now().astimezone()).astimezone()
        wall = now.replace(tzinfo=None)
        due = wall.replace(hour=self.at[0], minute=self.at[1], second=self.at[2] if len(self.at) > 2 else 0,
                           microsecond=0)
        if due <= wall:
            due += timedelta(days=1)
        return due.astimezone()  # a naive time read as this machine's local time, its offset that day's

    def run_due(self, due: datetime) -> list[DreamRun]:
        """The run scheduled for ``due``, once across every process sharing the store: None
        is run when another process holds the night's lock or already ran this one."""
        store = self.memory.store
        release = store.try_lock("nightly")
        if release is None:
            log.info("the nightly run of %s is running in another process", due)
            return []
        try:
            slot = due.astimezone(timezone.utc).isoformat()
            if store.get_meta(NIGHTLY_META) == slot:
                log.info("the nightly run of %s was done by another process", due)
                return []
            store.set_meta(NIGHTLY_META, slot)
            return self.run_once()
        finally:
            release()

    def run_once(self, now: datetime | None = None) -> list[DreamRun]:
        """One nightly run now: flush the learning line, then dream for every user (while the
        distill step waits on an endpoint, ``learn_threads`` users at once), in user order."""
        self.memory.flush()
        users = self.memory.users()
        settings = self.memory.settings
        at_once = 1 if settings.offline("distill") else min(settings.learn_threads, len(users))

        def dream(user: str) -> DreamRun | None:
            try:
                return self.memory.dream(user=user, now=now)
            except Conflict as exc:
                log.info("nightly dream for %s skipped: %s", user, exc)
                return None

        if at_once > 1:
            with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="reverie-nightly") as pool:
                runs = list(pool.map(dream, users))
        else:
            runs = [dream(user) for user in users]
        failed = [run.user for run in runs if run is not None and run.status == "failed"]
        if failed and not settings.offline("distill"):
            # an endpoint that failed once (a learning batch of the flush, a dream) holds every
            # call for its breaker's window: try those dreams once more after it, not next night
            log.info("nightly dreams failed for %d user(s); trying again in %.0fs", len(failed),
                     settings.llm.breaker_seconds)
            if not self._stop.wait(settings.llm.breaker_seconds + 0.5):
                again = {user: dream(user) for user in failed}
                runs = [again.get(run.user, run) if run is not None else None for run in runs]
        return [run for run in runs if run is not None]

    def start(self) -> "Scheduler":
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="reverie-scheduler", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    def _loop(self) -> None:
        while True:
            due = self.next_run()
            wait = (due - datetime.now().astimezone()).total_seconds()
            if self._stop.wait(timeout=max(0.0, wait)):
                return
            try:
                self.run_due(due)
            except Exception:  # the schedule must survive a bad night
                log.exception("the nightly run failed")


def clock(value: str) -> tuple[int, ...]:
    """``"23:55"`` -> (23, 55), ``"23:55:30"`` -> (23, 55, 30); InvalidInput for anything else."""
    found = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?", value.strip())
    if found is None:
        raise InvalidInput(f"dream_time must be HH:MM (24-hour), not {value!r}", field="dream_time")
    return tuple(int(g) for g in found.groups() if g is not None)
