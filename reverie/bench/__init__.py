"""Benchmarks: how much of what a question needs does recall deliver, beside a plain BM25.

    from reverie.bench import load_locomo, run_locomo
    report = run_locomo(load_locomo("data/locomo"))
    report.as_dict()["bm25"]["recall_at_k"]["10"]
"""

from reverie.bench.bm25 import BM25, pack
from reverie.bench.locomo import (
    BUDGETS,
    KS,
    Figures,
    LocomoCase,
    LocomoReport,
    Question,
    bm25_documents,
    evidence_ids,
    load_locomo,
    run_locomo,
)

__all__ = [
    "BM25",
    "BUDGETS",
    "Figures",
    "KS",
    "LocomoCase",
    "LocomoReport",
    "Question",
    "bm25_documents",
    "evidence_ids",
    "load_locomo",
    "pack",
    "run_locomo",
]
