"""The heuristic engine itself: each step hands its request to the module that knows it."""

from __future__ import annotations

from reverie.engines.base import (
    DistillRequest,
    DreamPlan,
    EpisodeSummary,
    Extraction,
    ExtractRequest,
    FactRef,
    GovernRequest,
    PerceiveRequest,
    SummarizeRequest,
    TagDecisions,
    TidyPlan,
)
from reverie.engines.heuristic.distill import distill
from reverie.engines.heuristic.extract import extract
from reverie.engines.heuristic.govern import govern
from reverie.engines.heuristic.perceive import perceive
from reverie.engines.heuristic.summarize import summarize
from reverie.engines.heuristic.tidy import tidy
from reverie.models import Perception


class HeuristicEngine:
    """The offline engine: every step is a pure function of its request."""

    name = "heuristic"
    batch_chars = None  # rules read any length: no need to split a long talk

    def perceive(self, request: PerceiveRequest) -> Perception:
        return perceive(request)

    def extract(self, request: ExtractRequest) -> Extraction:
        return extract(request)

    def summarize(self, request: SummarizeRequest) -> EpisodeSummary:
        return summarize(request)

    def distill(self, request: DistillRequest) -> DreamPlan:
        return distill(request)

    def tidy(self, facts: list[FactRef]) -> TidyPlan:
        return tidy(facts)

    def govern_tags(self, request: GovernRequest) -> TagDecisions:
        return govern(request)
