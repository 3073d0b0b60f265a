"""How fast this machine is, measured on fixed work that is not reverie's.

Benchmark figures move with the machine as much as with the code: the same commit has
recalled twice as fast on one 2-core VM as on another. So ``reverie bench scale`` first
times two fixed workloads, in a child process that does nothing else, and reports them
beside its figures. Two runs are comparable when their reference times are; when they
differ, the ratio says roughly how much of a difference in figures is the machine's.

- ``python_ms``: dictionary, string, sort and JSON work in pure Python (the interpreter
  is most of a recall's and all of the heuristic engine's time);
- ``sqlite_ms``: ranked full-text reads (FTS5, BM25, newest first) over an in-memory
  table of 20,000 rows (what a search costs, without the disk).

Each is the fastest of a few repeats (the least disturbed by whatever else the machine
does). The work is the same on every run (a fixed seed); its checksum shows that.
"""

from __future__ import annotations

import json
import random
import sqlite3
import string
import time
from dataclasses import asdict, dataclass
from typing import Any

from reverie.bench.child import run_child

SEED = 7
VOCABULARY = 2000
LINES = 15000
ROWS = 20000
WORDS_PER_ROW = 30
QUERIES = 200
REPEATS = 5


@dataclass(frozen=True)
class MachineReference:
    python_ms: float
    sqlite_ms: float
    sqlite_version: str
    checksum: int  # of the work's results: the same on every machine and run

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["python_ms"], out["sqlite_ms"] = round(self.python_ms, 1), round(self.sqlite_ms, 1)
        return out


def _vocabulary(rng: random.Random) -> list[str]:
    return ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9))) for _ in range(VOCABULARY)]


def _python_work(lines: list[str]) -> int:
    counts: dict[str, int] = {}
    for line in lines:
        for word in line.split():
            counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    records = [{"word": w, "n": n, "upper": w.upper(), "parts": [w[:2], w[2:]]} for w, n in ranked]
    back = json.loads(json.dumps(records))
    return int(sum(len(r["upper"]) * r["n"] for r in back)) % 1_000_003


def _sqlite_table(rng: random.Random, words: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    weights = [1.0 / (rank + 1) for rank in range(len(words))]  # a few frequent words, many rare ones
    conn.executemany("INSERT INTO t (text) VALUES (?)",
                     [(" ".join(rng.choices(words, weights, k=WORDS_PER_ROW)),) for _ in range(ROWS)])
    return conn


def _sqlite_work(conn: sqlite3.Connection, queries: list[str]) -> int:
    total = 0
    for query in queries:
        rows = conn.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY rowid DESC LIMIT 200",
                            (query,)).fetchall()
        total += sum(rowid for rowid, _ in rows)
    return total % 1_000_003


def measure(repeats: int = REPEATS) -> MachineReference:
    """Both workloads, each the fastest of ``repeats`` runs, in this process."""
    rng = random.Random(SEED)
    words = _vocabulary(rng)
    lines = [" ".join(rng.choice(words) for _ in range(20)) for _ in range(LINES)]
    conn = _sqlite_table(rng, words)
    queries = [f"{rng.choice(words[:200])} OR {rng.choice(words)}" for _ in range(QUERIES)]
    best_python = best_sqlite = float("inf")
    checksum = 0
    try:
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            a = _python_work(lines)
            t1 = time.perf_counter()
            b = _sqlite_work(conn, queries)
            t2 = time.perf_counter()
            best_python, best_sqlite = min(best_python, t1 - t0), min(best_sqlite, t2 - t1)
            checksum = a * 1_000_003 + b
    finally:
        conn.close()
    return MachineReference(best_python * 1000, best_sqlite * 1000, sqlite3.sqlite_version, checksum)


_CHILD = r"""
import json, sys
from reverie.bench.machine import measure
job = json.load(sys.stdin)
json.dump(measure(job["repeats"]).as_dict(), sys.stdout)
"""


def machine_reference(repeats: int = REPEATS) -> MachineReference:
    """:func:`measure` in a child process that does nothing else."""
    return MachineReference(**run_child(_CHILD, {"repeats": repeats}, what="machine reference"))
