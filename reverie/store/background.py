"""A helper thread that starts when it is first asked for work, once per process.

The SQLite store's checkpoints (:mod:`reverie.store.checkpoint`) and the PostgreSQL
store's vacuum and statistics (:mod:`reverie.store.pg_upkeep`) both run beside the
writer, in a thread of the store's; recall's usage counts left waiting are written by one
of the recaller's (``reverie.recall``). The thread starts at the first :meth:`soon`, starts
again in a forked child (which inherits no threads) and after :meth:`stop` (a store used
after close).
"""

from __future__ import annotations

import os
import threading


class Background:
    """Runs :meth:`_loop` in a daemon thread named ``name``, started by :meth:`soon`.
    The loop waits on :attr:`_wanted` and returns once its ``halt`` event is set."""

    def __init__(self, name: str):
        self._name = name
        self._wanted = threading.Event()
        self._lock = threading.Lock()  # starts and stops the thread
        # the running thread, the event that halts it, and the process it runs in
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._pid = 0

    def _running_here(self) -> bool:
        return self._thread is not None and self._pid == os.getpid()

    def soon(self) -> None:
        """Work is waiting: wake the thread (starting it if this process has none)."""
        if not self._running_here():
            with self._lock:
                if not self._running_here():
                    self._halt, self._pid = threading.Event(), os.getpid()
                    self._thread = threading.Thread(target=self._loop, args=(self._halt,), name=self._name,
                                                    daemon=True)
                    self._thread.start()
        self._wanted.set()

    def stop(self, timeout: float = 30) -> None:
        """Halt the thread and wait for it (at most ``timeout`` seconds), after :meth:`_interrupt`."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._halt.set()
        self._wanted.set()
        if thread is None or thread is threading.current_thread():
            return
        self._interrupt()
        thread.join(timeout=timeout)

    def _interrupt(self) -> None:
        """Cut short the work under way, if it can be (the thread is halting)."""

    def _loop(self, halt: threading.Event) -> None:
        raise NotImplementedError
