"""``reverie bench ingest``: a large JSONL export streamed into a fresh home.

Issue 11 asks that ingest streams: peak memory stays flat whatever the file's size.
This benchmark writes a JSONL file of ``turns`` conversation turns with the scale
benchmark's seeded generator (cached, so a rerun does not write it again), then, in a
child process that does nothing else, opens a fresh home and runs
``Memory.ingest(file, learn=...)`` on it: the figures are the turns per second (add
and, with learning, learn) and the child's peak RSS (``VmHWM`` on Linux).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reverie.bench.child import run_child
from reverie.bench.scale import ConversationGenerator
from reverie.errors import InvalidInput

DEFAULT_CACHE = Path("~/.cache/reverie-bench/ingest")
USER = "stream"
TURNS_PER_EPISODE = 2.6  # what the generator makes on average: enough episodes for the turns asked

_CHILD = r"""
import json, sys, time
job = json.load(sys.stdin)
from reverie.memory import Memory
from reverie.bench.child import peak_rss_bytes
t0 = time.perf_counter()
with Memory(job["home"], background=False, engine="heuristic") as mem:
    report = mem.ingest(job["file"], user=job["user"], learn=job["learn"])
json.dump({"seconds": time.perf_counter() - t0, "rss_bytes": peak_rss_bytes(), "episodes": report.episodes,
           "learned": report.learned, "facts": report.facts}, sys.stdout)
"""


def write_jsonl(path: Path, turns: int) -> int:
    """``turns`` generated turns, one JSON message a line (written to a temporary name and
    moved into place, so an interrupted write is never taken for a finished file)."""
    if turns <= 0:
        raise InvalidInput("turns must be positive", field="turns")
    path.parent.mkdir(parents=True, exist_ok=True)
    gen = ConversationGenerator(int(turns / TURNS_PER_EPISODE) + 100)
    written = 0
    part = path.with_suffix(".part")
    with part.open("w", encoding="utf-8") as out:
        for session in gen.sessions():
            for m in session.messages:
                out.write(json.dumps({"speaker": m["speaker"], "content": m["content"], "at": m["at"].isoformat()}) + "\n")
                written += 1
                if written == turns:
                    break
            if written == turns:
                break
    part.replace(path)
    return written


@dataclass
class IngestBench:
    turns: int
    file_bytes: int
    learn: bool
    seconds: float
    rss_bytes: int
    episodes: int
    learned: int
    facts: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "file_mb": round(self.file_bytes / 1e6, 1),
            "learn": self.learn,
            "seconds": round(self.seconds, 1),
            "turns_per_s": round(self.turns / self.seconds, 1) if self.seconds else 0.0,
            "peak_rss_mb": round(self.rss_bytes / 1e6, 1),
            "episodes": self.episodes,
            "learned": self.learned,
            "facts": self.facts,
        }


def run_ingest_bench(turns: int, *, cache: Path = DEFAULT_CACHE, learn: bool = True) -> IngestBench:
    """Write (or reuse) the file of ``turns`` turns and ingest it into a fresh home in a child."""
    cache = cache.expanduser()
    path = cache / f"turns-{turns}.jsonl"
    if not path.is_file():
        write_jsonl(path, turns)
    home = Path(tempfile.mkdtemp(prefix="reverie-bench-ingest-")) / "home"
    try:
        job = {"home": str(home), "file": str(path), "user": USER, "learn": learn}
        result = run_child(_CHILD, job, what="ingest")
    finally:
        shutil.rmtree(home.parent, ignore_errors=True)
    return IngestBench(turns, path.stat().st_size, learn, result["seconds"], result["rss_bytes"],
                       result["episodes"], result["learned"], result["facts"])
