"""The scale targets (docs/scale.md), read off one run of ``reverie bench scale``.

Each target that the run measured becomes a :class:`Target`: what is bounded, where (which
store and size), the figure, the bound and whether the figure meets it. A target the run
did not measure (a size not asked for, a check skipped) is left out, not reported as missed.
The figures are the run's own; on another machine, or another minute of a busy one, they
differ: the machine reference printed beside them says how fast this one was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# recall p95 at budget 500, explain off, by the store's size in episodes: one user of 100k,
# and 1M (one user, or a heavy user of 200k among 800 users of 1k)
RECALL_P95_MS = {100_000: 25.0, 1_000_000: 50.0}
RECALL_RSS_MB_AT_1M = 200.0  # peak RSS of a recall-only process
FRESH_TURNS_PER_S = 5_000.0  # add + learn, heuristic engine, SQLite, from an empty store
FRESH_EPISODES = 10_000  # ... read off a one-user build of at most this many episodes: a larger one learns
#                          most of its turns beside thousands stored
FULL_TURNS_PER_S = 2_000.0  # ... with 100k episodes already stored (the last tenth of that build)
DILUTION_LOSS = 0.03  # each conversation's evidence recall at 500 beside 100k episodes, against alone
SERVE_RATIO = 1.6  # 2 workers and 8 clients against 1 worker and 1 client (SQLite, 10k store)
SERVE_P95_MS = 100.0  # ... with this p95
REPLICAS_RATIO = 1.6  # 2 replicas against 1 over one PostgreSQL store, 8 clients


@dataclass(frozen=True)
class Target:
    name: str  # what is bounded
    where: str  # which store, size or conversation
    value: float
    bound: float
    unit: str
    at_least: bool  # True: the figure must reach the bound; False: stay within it

    @property
    def met(self) -> bool:
        return self.value >= self.bound if self.at_least else self.value <= self.bound

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "where": self.where, "value": self.value, "bound": self.bound,
                "unit": self.unit, "at_least": self.at_least, "met": self.met}


_STORE = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def targets(report: dict[str, Any]) -> list[Target]:
    """The targets a scale report (:meth:`ScaleReport.as_dict`, before its own ``targets``)
    measured, in the order docs/scale.md lists them."""
    out: list[Target] = []
    sizes: list[dict[str, Any]] = report.get("sizes") or []
    for s in sizes:
        bound = RECALL_P95_MS.get(s["episodes"])
        if bound is None or (s["episodes"] < 1_000_000 and s["others"]):
            continue
        where = _where(s)
        out.append(Target("recall p95 at budget 500", where, s["recall_ms"]["p95"], bound, "ms", False))
        if s["episodes"] >= 1_000_000:
            out.append(Target("peak RSS of a recall-only process", where, s["peak_rss_mb"], RECALL_RSS_MB_AT_1M,
                              "MB", False))
    one_user = [s for s in sizes if s["store"] == "sqlite" and not s["others"] and not s["copied_from"]]
    small = [s for s in one_user if s["episodes"] <= FRESH_EPISODES]
    if small:
        fresh = min(small, key=lambda s: s["episodes"])
        out.append(Target("learning (add + learn) from an empty store", f"SQLite, the {fresh['episodes']:,}-episode build",
                          fresh["ingest_turns_per_s"], FRESH_TURNS_PER_S, "turns/s", True))
    full = [s for s in one_user if s["episodes"] == 100_000]
    if full:
        out.append(Target("learning (add + learn) with 100k stored", "SQLite, the last tenth of the 100,000-episode build",
                          full[0]["tail"]["ingest_turns_per_s"], FULL_TURNS_PER_S, "turns/s", True))
    dilution = report.get("dilution")
    if dilution:
        beside = f"beside {dilution['store_episodes']:,} episodes"
        for row in dilution["conversations"]:
            out.append(Target("evidence recall at 500, diluted against alone", f"conversation {row['conversation']}, {beside}",
                              row["difference"], -DILUTION_LOSS, "", True))
    serve = report.get("serve") or {}
    if "workers_ratio" in serve:
        where = f"reverie serve, SQLite, {serve['store_episodes']:,} episodes"
        out.append(Target("throughput, 2 workers and 8 clients against 1 and 1", where, serve["workers_ratio"],
                          SERVE_RATIO, "x", True))
        out.append(Target("recall p95, 2 workers and 8 clients", where, serve["workers_p95_ms"], SERVE_P95_MS, "ms", False))
    if "replicas_ratio" in serve:
        out.append(Target("throughput, 2 replicas against 1, 8 clients",
                          f"reverie serve, PostgreSQL, {serve['store_episodes']:,} episodes", serve["replicas_ratio"],
                          REPLICAS_RATIO, "x", True))
    return out


def _where(size: dict[str, Any]) -> str:
    who = (f"heavy user of {size['user_episodes']:,} among {size['others']['users']:,} users"
           if size["others"] else "one user")
    return f"{_STORE.get(size['store'], size['store'])}, {size['episodes']:,} episodes ({who})"
