"""Benchmarks: how much of what a question needs does recall deliver, beside a plain BM25.

    from reverie.bench import load_locomo, run_locomo
    report = run_locomo(load_locomo("data/locomo"))
    report.as_dict()["bm25"]["recall_at_k"]["10"]

    from reverie.bench import run_scale
    run_scale([10_000], cache="/tmp/scale", recalls=300).as_dict()["sizes"][0]["recall_ms"]["p95"]
"""

from reverie.bench.bm25 import BM25, pack
from reverie.bench.locomo import (
    BUDGETS,
    KS,
    CaseRecall,
    Figures,
    LocomoCase,
    LocomoReport,
    Question,
    bm25_documents,
    evidence_ids,
    ingest_case,
    load_locomo,
    run_case,
    run_locomo,
)
from reverie.bench.scale import (
    ConversationGenerator,
    DilutionRow,
    ScaleReport,
    SizeReport,
    recall_queries,
    run_scale,
    warmup_queries,
)

__all__ = [
    "BM25",
    "BUDGETS",
    "CaseRecall",
    "ConversationGenerator",
    "DilutionRow",
    "Figures",
    "KS",
    "LocomoCase",
    "LocomoReport",
    "Question",
    "ScaleReport",
    "SizeReport",
    "bm25_documents",
    "evidence_ids",
    "ingest_case",
    "load_locomo",
    "pack",
    "recall_queries",
    "run_case",
    "run_locomo",
    "run_scale",
    "warmup_queries",
]
