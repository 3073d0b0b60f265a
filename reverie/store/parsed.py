"""Items parsed from their rows, kept for readers that will not change them.

Recall reads the same episodes, facts and notes again and again (a conversation's
messages ask about the same things), and turning a row's JSON into a model was a
quarter of a recall at LoCoMo scale. A store keeps the models it parsed for such
readers here, each beside the very row it came from: a row read again that is
equal to the kept one (every column, the JSON body included) gives back the kept
model, any other row is parsed anew. So nothing is ever stale, whoever wrote the
row meanwhile (another thread, another process, another replica), and no write
path has to remember to forget anything.

A row is kept only when it is read the second time (the first read remembers its
id): recalls that each read different items (a large store asked about everything)
would otherwise churn the kept models through the garbage collector's oldest
generation, whose full passes walk every kept object (measured: 24 ms a pass over
~2,000 episodes, the p99 of such recalls doubled). Kept models that are read again
and again stay put and cost the collector nothing new.

The models handed out are shared between readers: a caller that asks for them
(``shared=True`` on the store's getters) promises not to change them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterable, TypeVar

_T = TypeVar("_T")

# the JSON characters of the rows kept, all kinds together (a parsed episode takes about
# five times its JSON in memory: 2M characters is ~12 MB, ~1,000 episodes of a long chat)
PARSED_CHARS = 2_000_000
# rows read once, remembered by id only: a row is kept when it is read a second time
SEEN_ONCE = 50_000


class ParsedRows:
    """A bounded map of (kind, id) -> (the row, its model), oldest out first."""

    def __init__(self, max_chars: int = PARSED_CHARS, seen_once: int = SEEN_ONCE) -> None:
        if max_chars < 0 or seen_once < 0:
            raise ValueError(f"max_chars and seen_once must be >= 0, not {max_chars} and {seen_once}")
        self.max_chars = max_chars
        self.seen_once = seen_once
        self._once: OrderedDict[tuple[str, Hashable], None] = OrderedDict()
        self._items: OrderedDict[tuple[str, Hashable], tuple[tuple[Any, ...], Any, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def chars(self) -> int:
        return self._chars

    def parse(
        self, kind: str, rows: Iterable[Any], *, key: Callable[[Any], Hashable], size: Callable[[Any], int],
        parse: Callable[[Any], _T],
    ) -> dict[Any, _T]:
        """key(row) -> model for every row: the kept model when its row is equal to this one,
        else ``parse(row)``, kept when the row was read before (and is at most a tenth of
        the bound)."""
        out: dict[Any, _T] = {}
        for row in rows:
            values, item_id = tuple(row), key(row)
            with self._lock:
                kept = self._items.get((kind, item_id))
            if kept is not None and kept[0] == values:
                self.hits += 1
                out[item_id] = kept[1]
                continue
            self.misses += 1
            model = out[item_id] = parse(row)
            self._keep((kind, item_id), values, model, size(row))
        return out

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._once.clear()
            self._chars = 0

    def _keep(self, at: tuple[str, Hashable], values: tuple[Any, ...], model: Any, chars: int) -> None:
        if chars * 10 > self.max_chars:
            return
        with self._lock:
            if at not in self._items:
                if at in self._once:  # read a second time: kept from now on
                    del self._once[at]
                else:  # read for the first time: remembered, not kept
                    self._once[at] = None
                    if len(self._once) > self.seen_once:
                        self._once.popitem(last=False)
                    return
            old = self._items.pop(at, None)
            if old is not None:
                self._chars -= old[2]
            self._items[at] = (values, model, chars)
            self._chars += chars
            while self._chars > self.max_chars and self._items:
                _, (_, _, gone) = self._items.popitem(last=False)
                self._chars -= gone
