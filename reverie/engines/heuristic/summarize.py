"""Summarize: an episode told in one line, an overview of a few lines, its tags and scene.

The most informative sentence (content phrases and dates, over its length; greetings
and questions count less) becomes the summary, its first-person subject folded into the
speaker label: "I moved to Lisbon last May" said by Ana -> "Ana: moved to Lisbon last May".
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from reverie.engines.base import EpisodeSummary, SummarizeRequest
from reverie.engines.heuristic import lexicon as lx
from reverie.engines.heuristic.perceive import scene_of
from reverie.engines.heuristic.person import CLAUSE_SUBJECT, third_clause
from reverie.engines.heuristic.phrases import Analysis, analyze, rank
from reverie.engines.heuristic.words import sentences
from reverie.models import Message
from reverie.text import CJK_RE, has_cjk

_INTERJECTION = re.compile(r"^(?:(?:hey|hi|hello|wow|oh|well|so|yeah|yes|haha|lol|omg|ok|okay|um|uh|hmm|btw|"
                           r"anyway|aw+|ah)\b[\s,!.~]*)+", re.IGNORECASE)
_ROLE_LABELS = {"user": ("User", "用户"), "assistant": ("Assistant", "助手")}


class _Unit(NamedTuple):
    """A sentence of the episode; sorting units puts the most informative first, then the earliest."""

    neg_score: float  # minus its informativeness
    order: int
    label: str  # who said it
    text: str


def _label(message: Message, cjk: bool) -> str:
    if message.speaker:
        return message.speaker
    en, zh = _ROLE_LABELS.get(message.role, (message.role.title(), message.role))
    return zh if cjk else en


def _said(label: str, text: str) -> str:
    return f"{label}：{text}" if has_cjk(text) else f"{label}: {text}"


@lru_cache(maxsize=8192)
def _informativeness(sentence: str) -> float:
    """Cached like the analysis it weighs (a float: nothing more for the garbage collector to scan)."""
    analysis = analyze(sentence)
    base = sum(p.weight for p in analysis.phrases) + 0.5 * analysis.n_dates
    score: float = base / max(analysis.n_words, 6) ** 0.3
    if lx.GREETING.match(sentence):
        score *= 0.3
    if sentence.endswith(("?", "？")):
        score *= 0.6
    return score


def _length(text: str) -> float:
    """Words, counting 2.5 Chinese characters as one."""
    if not has_cjk(text):
        return len(text.split())
    cjk = len(CJK_RE.findall(text))
    return len(CJK_RE.sub(" ", text).split()) + cjk / 2.5


def _clipwords(text: str, limit: float) -> str:
    if _length(text) <= limit:
        return text
    if has_cjk(text):
        return text[: int(limit * 2.5)].rstrip("，,、 ") + "…"
    return " ".join(text.split()[: int(limit)]).rstrip(",;: ") + "…"


@lru_cache(maxsize=8192)
def _bare(sentence: str) -> str:
    """The sentence without its greeting words (cached: the best sentence is both summary and overview)."""
    return _INTERJECTION.sub("", sentence).strip() or sentence


def _compress(sentence: str) -> str:
    """The sentence without greeting words, its first-person subject folded into the speaker label."""
    text = _bare(sentence)
    if not has_cjk(text) and CLAUSE_SUBJECT.match(text):
        clause = third_clause(text)
        text = clause[:1].lower() + clause[1:]
    return text.rstrip(" .!。！")


def _units(messages: list[Message]) -> tuple[list[_Unit], list[Analysis]]:
    units: list[_Unit] = []
    analyses: list[Analysis] = []
    for message in messages:
        for sentence in sentences(message.content):
            analysis = analyze(sentence)
            analyses.append(analysis)
            units.append(_Unit(-_informativeness(sentence), len(units),
                               _label(message, has_cjk(sentence)), sentence))
    return units, analyses


def _overview(ranked: list[_Unit], budget: float = 60) -> str:
    """The best units (``ranked`` best first), in the order they were said, within ``budget`` words."""
    chosen: list[tuple[int, str, str]] = []
    used = 0.0
    for unit in ranked:
        if len(chosen) == 3 or used >= budget - 3:
            break
        text = _clipwords(_bare(unit.text), budget - used)
        used += _length(text)
        chosen.append((unit.order, unit.label, text))
    pieces: list[str] = []
    last_label = None
    for _, label, text in sorted(chosen):
        pieces.append(text if label == last_label else _said(label, text))
        last_label = label
    return " ".join(pieces)


def summarize(request: SummarizeRequest) -> EpisodeSummary:
    units, analyses = _units(request.messages)
    if not units:
        return EpisodeSummary()
    ranked = sorted(units)
    best = ranked[0]
    summary = _said(best.label, _clipwords(_compress(best.text), 24))
    scene, sub = scene_of([s for a in analyses for s in a.stems])
    return EpisodeSummary(
        summary=summary, overview=_overview(ranked),
        tags=rank(analyses, 4), scene=scene, sub_scene=sub,
    )
