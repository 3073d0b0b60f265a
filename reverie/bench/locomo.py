"""The LoCoMo benchmark: turn-level evidence recall of reverie beside a plain BM25, in one run.

    cases = load_locomo("data/locomo")
    report = run_locomo(cases)
    report.as_dict()["reverie"]["recall_at_budget"]["500"]   # a fraction in 0..1

Each conversation goes into a fresh memory (its sessions' turns with each
session's date, one user, speaker names kept) and is learned from; then every
question of categories 1-4 is asked as a recall the day after the last
session. Recalls pass ``track=False``, so the store does not change between
questions and their order does not matter.

An evidence turn counts as recalled when a delivered item carries its id
(episodes carry their turns' ids, facts and notes carry them through
provenance). Every rate is a mean over questions of the share of that
question's evidence turns recalled, for reverie and BM25 alike.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from reverie.bench.bm25 import BM25, pack
from reverie.bench.stats import percentile
from reverie.engines import STEPS
from reverie.errors import InvalidInput
from reverie.ingest import is_locomo, locomo_conversation, locomo_sessions
from reverie.memory import Memory
from reverie.store.postgres import is_postgres_url, scratch_schema
from reverie.text import load_dictionaries, terms

__all__ = [
    "BUDGETS",
    "KS",
    "CaseRecall",
    "Figures",
    "LocomoCase",
    "LocomoReport",
    "Question",
    "bm25_documents",
    "evidence_ids",
    "ingest_case",
    "load_locomo",
    "run_case",
    "run_locomo",
]

BUDGETS = (200, 500, 1000, 2000)
KS = (1, 5, 10, 20)
K_BUDGET = 2000  # recall@k and latency are taken from the recalls at this budget
CATEGORIES = frozenset({1, 2, 3, 4})  # 5 is adversarial: no evidence to find
SOURCED_KINDS = frozenset({"episode", "fact", "note"})  # the kinds that carry turn ids
EVIDENCE_ID = re.compile(r"D(\d+):(\d+)")


def evidence_ids(entries: Iterable[str]) -> list[str]:
    """Every ``D<session>:<turn>`` in the entries, in order, once each.

    >>> evidence_ids(["D1:3", "D8:6; D9:17"])
    ['D1:3', 'D8:6', 'D9:17']
    """
    found = (f"D{int(s)}:{int(t)}" for entry in entries for s, t in EVIDENCE_ID.findall(entry))
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int


@dataclass
class LocomoCase:
    """One conversation file and the questions asked about it."""

    name: str
    data: dict[str, Any]
    questions: list[Question]
    without_evidence: int = 0  # category 1-4 questions left out: no evidence id to score them by

    @property
    def steps(self) -> int:
        """Units of progress: the ingest, then one per question."""
        return 1 + len(self.questions)

    def ask_at(self) -> datetime:
        """The recall time: a day after the last session."""
        return max(when for _, when, _ in locomo_sessions(self.data)) + timedelta(days=1)


def load_locomo(directory: str | Path, *, limit_questions: int | None = None) -> list[LocomoCase]:
    """Every LoCoMo conversation (``*.json``, one conversation each) in ``directory``.

    ``limit_questions`` keeps only the first N scored questions of each conversation.
    """
    paths = sorted(Path(directory).glob("*.json"))
    if not paths:
        raise InvalidInput(f"no *.json conversation files in {directory}", field="directory")
    return [_case(path, limit_questions) for path in paths]


def _case(path: Path, limit_questions: int | None) -> LocomoCase:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path.name} is not valid JSON: {exc}", field=path.name) from exc
    if not is_locomo(data) or not isinstance(data.get("qa"), list):
        raise InvalidInput(f"{path.name} is not a LoCoMo conversation (speaker_a, session_1, qa)", field=path.name)
    questions, without = [], 0
    for qa in data["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = frozenset(evidence_ids(qa.get("evidence") or []))
        if evidence:
            questions.append(Question(qa["question"], evidence, qa["category"]))
        else:
            without += 1
    if limit_questions is not None:
        questions = questions[:limit_questions]
    return LocomoCase(path.stem, data, questions, without)


def bm25_documents(case: LocomoCase) -> list[tuple[str, str]]:
    """(dia_id, ``"[<session date>] <speaker>: <text>"``) for each turn, as ingest reads it."""
    dates = {turn["dia_id"]: when for _, when, turns in locomo_sessions(case.data) for turn in turns}
    return [
        (m["source_id"], f"[{_date(dates[m['source_id']])}] {m['speaker']}: {m['content']}")
        for m in locomo_conversation(case.data).messages
    ]


def _date(when: datetime) -> str:
    """The way LoCoMo writes a day, '8 May 2023', so that a question naming it matches."""
    return f"{when.day} {when:%B %Y}"


# --------------------------------------------------------------------- figures


@dataclass
class Figures:
    """One system's figures. Rates are fractions in 0..1."""

    recall_at_budget: dict[int, float]
    recall_at_k: dict[int, float]
    # the stricter reading: only turns whose words the delivered lines themselves show
    held_at_budget: dict[int, float]
    latency_p50_ms: float
    latency_p95_ms: float
    # budget -> (p50, p95) ms of the recalls at that budget
    latency_at_budget: dict[int, tuple[float, float]]
    ingest_turns_per_s: float
    questions: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "recall_at_budget": {str(b): round(r, 4) for b, r in self.recall_at_budget.items()},
            "recall_at_k": {str(k): round(r, 4) for k, r in self.recall_at_k.items()},
            "held_at_budget": {str(b): round(r, 4) for b, r in self.held_at_budget.items()},
            "latency_ms": {"p50": round(self.latency_p50_ms, 3), "p95": round(self.latency_p95_ms, 3)},
            "latency_ms_at_budget": {str(b): {"p50": round(p50, 3), "p95": round(p95, 3)}
                                     for b, (p50, p95) in self.latency_at_budget.items()},
            "ingest_turns_per_s": round(self.ingest_turns_per_s, 1),
            "questions": self.questions,
        }


@dataclass
class LocomoReport:
    reverie: Figures
    bm25: Figures
    conversations: int
    turns: int
    without_evidence: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        """``{"reverie": F, "bm25": F}``, the shape other tools read."""
        return {"reverie": self.reverie.as_dict(), "bm25": self.bm25.as_dict()}


@dataclass
class _Tally:
    """Per-question rates and timings of one system, summed up into :class:`Figures` at the end."""

    budgets: Sequence[int]
    at_budget: dict[int, list[float]] = field(default_factory=dict)
    at_k: dict[int, list[float]] = field(default_factory=dict)
    held: dict[int, list[float]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    timed: dict[int, list[float]] = field(default_factory=dict)  # budget -> seconds of each recall
    turns: int = 0
    ingest_seconds: float = 0.0

    def ingested(self, turns: int, seconds: float) -> None:
        self.turns += turns
        self.ingest_seconds += seconds

    def budget(
        self, budget: int, evidence: frozenset[str], delivered: Iterable[str], held: Iterable[str], seconds: float,
    ) -> None:
        """``delivered``: turns in the provenance of the delivered items (the issue's rule);
        ``held``: turns the delivered lines actually show; ``seconds``: how long the
        retrieval at this budget took."""
        self.at_budget.setdefault(budget, []).append(_share(evidence, delivered))
        self.held.setdefault(budget, []).append(_share(evidence, held))
        self.timed.setdefault(budget, []).append(seconds)

    def ranked(self, evidence: frozenset[str], ranking: Sequence[Iterable[str]], seconds: float) -> None:
        """The ids of the items delivered at :data:`K_BUDGET`, in order, and how long that took."""
        self.latencies.append(seconds)
        for k in KS:
            self.at_k.setdefault(k, []).append(_share(evidence, (i for ids in ranking[:k] for i in ids)))

    def figures(self) -> Figures:
        return Figures(
            recall_at_budget={b: _mean(self.at_budget.get(b, [])) for b in self.budgets},
            recall_at_k={k: _mean(self.at_k.get(k, [])) for k in KS},
            held_at_budget={b: _mean(self.held.get(b, [])) for b in self.budgets},
            latency_p50_ms=percentile(self.latencies, 50) * 1000,
            latency_p95_ms=percentile(self.latencies, 95) * 1000,
            latency_at_budget={b: (percentile(self.timed.get(b, []), 50) * 1000,
                                   percentile(self.timed.get(b, []), 95) * 1000) for b in self.budgets},
            ingest_turns_per_s=self.turns / self.ingest_seconds if self.ingest_seconds else 0.0,
            questions=len(self.latencies),
        )


def _share(evidence: frozenset[str], delivered: Iterable[str]) -> float:
    return len(evidence & set(delivered)) / len(evidence)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# --------------------------------------------------------------------- the run


def run_locomo(
    cases: Sequence[LocomoCase],
    *,
    budgets: Sequence[int] = BUDGETS,
    engine: str | None = None,
    group: str = "exchange",
    on_step: Callable[[str], None] | None = None,
    store: str | None = None,
) -> LocomoReport:
    """Run reverie and BM25 over ``cases``; ``on_step(label)`` is called once per
    :attr:`LocomoCase.steps` unit, for a progress bar. ``store``: a ``postgresql://`` URL to
    run reverie on PostgreSQL (a fresh schema per conversation, dropped afterwards) instead
    of SQLite in a temporary home."""
    budgets = sorted(set(budgets))
    if not budgets or any(b <= 0 for b in budgets):
        raise InvalidInput("budgets must be positive token counts", field="budget")
    step = on_step or (lambda label: None)
    reverie, bm25 = _Tally(budgets), _Tally(budgets)
    started = time.perf_counter()
    for case in cases:
        _run_bm25(case, bm25, budgets)
        _run_reverie(case, reverie, budgets, engine, group, step, store)
    return LocomoReport(
        reverie=reverie.figures(),
        bm25=bm25.figures(),
        conversations=len(cases),
        turns=reverie.turns,
        without_evidence=sum(c.without_evidence for c in cases),
        seconds=time.perf_counter() - started,
    )


def _run_reverie(
    case: LocomoCase, tally: _Tally, budgets: Sequence[int], engine: str | None, group: str,
    step: Callable[[str], None], store: str | None = None,
) -> None:
    user = f"locomo-{case.name}"
    with tempfile.TemporaryDirectory(prefix="reverie-bench-") as home, _case_store(store) as where:
        with Memory(home, background=False, engine=engine, store=where) as mem:
            tally.ingested(*ingest_case(mem, user, case, group=group))
            step(f"{case.name}: ingested")
            at = case.ask_at()
            for number, q in enumerate(case.questions, 1):
                _ask(mem, user, q, at, budgets, tally)
                step(f"{case.name}: question {number}/{len(case.questions)}")


@contextmanager
def _case_store(store: str | None) -> Iterator[str | None]:
    """Where one conversation's memory lives: SQLite in the temporary home (None), or a
    fresh schema of the PostgreSQL database ``store`` names."""
    if not is_postgres_url(store):
        yield store
        return
    with scratch_schema(str(store), prefix="reverie_bench") as url:
        yield url


def ingest_case(mem: Memory, user: str, case: LocomoCase, *, group: str = "exchange") -> tuple[int, float]:
    """Add the conversation to ``user`` of ``mem`` (its own thread, named after the case) and
    learn from it; (turns, seconds of add + learn). The engines and the text dictionaries are
    loaded first: their lazy loading (imports, lexicons) is a one-off cost per process, not per turn."""
    for name in STEPS:
        mem.engines.for_step(name)
    load_dictionaries()
    conversation = locomo_conversation(case.data, thread=case.name)
    start = time.perf_counter()
    mem.add(conversation.messages, user=user, thread=conversation.thread, group=group)
    mem.flush(user=user)
    return len(conversation.messages), time.perf_counter() - start


@dataclass
class CaseRecall:
    """One conversation asked in a given memory: evidence recall (and held) per budget."""

    turns: int
    ingest_seconds: float
    recall_at_budget: dict[int, float]
    held_at_budget: dict[int, float]
    questions: int


def run_case(
    mem: Memory, user: str, case: LocomoCase, *, budgets: Sequence[int] = BUDGETS, group: str = "exchange",
) -> CaseRecall:
    """Ingest ``case`` into ``user`` of an open memory (which may hold anything else already),
    then ask its questions at each budget, read-only, the way :func:`run_locomo` does."""
    turns, seconds = ingest_case(mem, user, case, group=group)
    return ask_case(mem, user, case, budgets=budgets, turns=turns, ingest_seconds=seconds)


def ask_case(
    mem: Memory, user: str, case: LocomoCase, *, budgets: Sequence[int] = BUDGETS, turns: int = 0,
    ingest_seconds: float = 0.0,
) -> CaseRecall:
    """Ask ``case``'s questions of a memory that already holds the conversation (ingested
    into ``user``, whatever came before or after it), at each budget, read-only."""
    budgets = sorted(set(budgets))
    tally = _Tally(budgets)
    at = case.ask_at()
    for q in case.questions:
        for budget in budgets:
            start = time.perf_counter()
            result = mem.recall(q.text, user=user, budget=budget, at=at, track=False)
            tally.budget(
                budget, q.evidence,
                [i for item in result.items for i in item.provenance_sources],
                [i for item in result.items for i in item.source_ids],
                time.perf_counter() - start,
            )
    figures = tally.figures()
    return CaseRecall(turns, ingest_seconds, figures.recall_at_budget, figures.held_at_budget, len(case.questions))


def _ask(mem: Memory, user: str, q: Question, at: datetime, budgets: Sequence[int], tally: _Tally) -> None:
    """One recall per budget; read-only, so the next question finds the same store."""
    for budget in sorted({*budgets, K_BUDGET}):
        start = time.perf_counter()
        result = mem.recall(q.text, user=user, budget=budget, at=at, track=False)
        seconds = time.perf_counter() - start
        if budget in budgets:
            tally.budget(
                budget, q.evidence,
                [i for item in result.items for i in item.provenance_sources],
                [i for item in result.items for i in item.source_ids],
                seconds,
            )
        if budget == K_BUDGET:
            ranking = [item.provenance_sources for item in result.items if item.kind in SOURCED_KINDS]
            tally.ranked(q.evidence, ranking, seconds)


def _run_bm25(case: LocomoCase, tally: _Tally, budgets: Sequence[int]) -> None:
    docs = bm25_documents(case)
    start = time.perf_counter()
    index = BM25([terms(text) for _, text in docs])
    tally.ingested(len(docs), time.perf_counter() - start)
    for q in case.questions:
        # timed like reverie's: one retrieval (ranked, then packed) per budget
        for budget in sorted({*budgets, K_BUDGET}):
            start = time.perf_counter()
            order = index.rank(terms(q.text))
            lines = [docs[i][1] for i in order]
            count = pack(lines, budget)
            seconds = time.perf_counter() - start
            if budget == K_BUDGET:
                tally.ranked(q.evidence, [[docs[i][0]] for i in order], seconds)
            if budget in budgets:
                delivered = [docs[i][0] for i in order[:count]]
                tally.budget(budget, q.evidence, delivered, delivered, seconds)
