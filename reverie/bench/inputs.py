"""How recall and a turn cost with the size of the message: every step of the recall path
must be linear in the query (issue: a 1 MB message answers in under a second).

    report = run_input_sizes([1_000, 100_000, 1_000_000])
    report[0]["recall_ms"]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Sequence, TypedDict

from reverie.memory import Memory

SIZES = (1_000, 100_000, 1_000_000)
# a message that exercises every perception rule at once: dates, names, topics
_PIECE = "We met in 2023 and last week Caroline said the Lisbon trip in May was great. 去年我们去了杭州。 "


class InputSizeTiming(TypedDict):
    """One row of :func:`run_input_sizes`: medians in milliseconds."""

    chars: int
    recall_ms: float
    turn_ms: float


def message_of(size: int) -> str:
    """A message of exactly ``size`` characters."""
    return (_PIECE * (size // len(_PIECE) + 1))[:size]


def run_input_sizes(sizes: Sequence[int] = SIZES, *, repeat: int = 3) -> list[InputSizeTiming]:
    """Median recall and turn time (ms) for messages of each size, on a small learned store."""
    with tempfile.TemporaryDirectory(prefix="reverie-bench-") as tmp:
        with Memory(Path(tmp) / "home", background=False) as mem:
            start = datetime(2023, 5, 1, tzinfo=timezone.utc)
            mem.add(
                [{"speaker": "Caroline" if i % 2 else "Melanie", "content": line, "at": start + timedelta(days=i)}
                 for i, line in enumerate(_HISTORY)],
                user="bench", group="message",
            )
            mem.flush()
            out: list[InputSizeTiming] = []
            for size in sizes:
                text = message_of(size)
                recalls: list[float] = []
                turns: list[float] = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    mem.recall(text, user="bench", budget=500, track=False)
                    recalls.append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    with mem.turn(text, user="bench", thread="bench") as turn:
                        turn.complete("ok")
                    turns.append((time.perf_counter() - t0) * 1000)
                out.append({"chars": size, "recall_ms": round(statistics.median(recalls), 2),
                            "turn_ms": round(statistics.median(turns), 2)})
            return out


_HISTORY = [
    "I went to a support group for trans people yesterday, it was powerful.",
    "We took the kids camping by the lake in May.",
    "I'm training for a marathon in Lisbon next spring.",
    "Painting a sunrise over the water helped me relax.",
    "My counselling course starts in September.",
    "去年我们在杭州看了西湖。",
    "Melanie signed up for pottery classes last week.",
    "Caroline adopted a puppy named Oscar in 2023.",
]
