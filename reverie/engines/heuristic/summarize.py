"""Summarize: an episode told in one line, an overview of a few lines, its tags and scene.

The most informative sentence (content phrases and dates, over its length; greetings
and questions count less) becomes the summary, its first-person subject folded into the
speaker label: "I moved to Lisbon last May" said by Ana -> "Ana: moved to Lisbon last May".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


@dataclass(slots=True)
class _Unit:
    label: str
    text: str
    score: float
    order: int


def _label(message: Message, cjk: bool) -> str:
    if message.speaker:
        return message.speaker
    en, zh = _ROLE_LABELS.get(message.role, (message.role.title(), message.role))
    return zh if cjk else en


def _said(label: str, text: str) -> str:
    return f"{label}：{text}" if has_cjk(text) else f"{label}: {text}"


def _informativeness(sentence: str, analysis: Analysis) -> float:
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


def _compress(sentence: str) -> str:
    """The sentence without greeting words, its first-person subject folded into the speaker label."""
    text = _INTERJECTION.sub("", sentence).strip() or sentence
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
            units.append(_Unit(_label(message, has_cjk(sentence)), sentence,
                               _informativeness(sentence, analysis), len(units)))
    return units, analyses


def _overview(units: list[_Unit], budget: float = 60) -> str:
    chosen: list[_Unit] = []
    used = 0.0
    for unit in sorted(units, key=lambda u: (-u.score, u.order)):
        if len(chosen) == 3 or used >= budget - 3:
            break
        text = _clipwords(_INTERJECTION.sub("", unit.text).strip() or unit.text, budget - used)
        used += _length(text)
        chosen.append(_Unit(unit.label, text, unit.score, unit.order))
    pieces: list[str] = []
    last_label = None
    for unit in sorted(chosen, key=lambda u: u.order):
        pieces.append(unit.text if unit.label == last_label else _said(unit.label, unit.text))
        last_label = unit.label
    return " ".join(pieces)


def summarize(request: SummarizeRequest) -> EpisodeSummary:
    units, analyses = _units(request.messages)
    if not units:
        return EpisodeSummary()
    best = min(units, key=lambda u: (-u.score, u.order))
    compressed = _compress(best.text)
    summary = _said(best.label, _clipwords(compressed, 24))
    scene, sub = scene_of([s for a in analyses for s in a.stems])
    return EpisodeSummary(
        summary=summary, overview=_overview(units),
        tags=rank(analyses, 4), scene=scene, sub_scene=sub,
    )
