"""When Python's cyclic garbage collector runs: not in the middle of a recall or a batch.

A recall or a learning batch makes many short-lived objects, which reference counting
frees. If the collector runs meanwhile it walks them, promotes the survivors of the moment
into its older generations, and now and then makes a full pass over the whole long-lived
heap (the engines' lexicons, the tag index): at LoCoMo scale a full pass took 36 ms and
came every ~50 recalls, and the collector as a whole cost ~1 ms a recall, a tenth of it.
:func:`paused_gc` holds the collector while the work runs; it runs again, as configured,
when the last pause ends.

Pauses nest and may overlap across threads (a server's recalls, the learning line). So that
a process whose pauses never all end at once (a busy server) still collects, a pause that
ends while others hold on runs the young generations itself once a second, and a full pass
when the collector's own count says one is due.
"""

from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager
from typing import Iterator

# while pauses overlap, how often the one ending runs the collector itself
OVERLAP_COLLECT_SECONDS = 1.0

_lock = threading.Lock()
_pauses = 0
_collecting = True  # whether the collector ran before the first pause
_collected = 0.0  # when the collector last ran, or the pauses began


@contextmanager
def paused_gc() -> Iterator[None]:
    """The collector waits while the block runs (see the module)."""
    global _pauses, _collecting, _collected
    with _lock:
        if _pauses == 0:
            _collecting = gc.isenabled()
            gc.disable()
            _collected = time.monotonic()
        _pauses += 1
    try:
        yield
    finally:
        generation = -1
        with _lock:
            _pauses -= 1
            if _pauses == 0:
                if _collecting:
                    gc.enable()
            elif _collecting and time.monotonic() - _collected >= OVERLAP_COLLECT_SECONDS:
                _collected = time.monotonic()
                # each collection of generation 1 counts one towards generation 2, as when
                # the collector runs on its own
                full = gc.get_threshold()[2]
                generation = 2 if full and gc.get_count()[2] >= full else 1
        if generation >= 0:
            gc.collect(generation)
