"""Perceive: what a message is about before recall - scene, intent, emotion, route, dates, tags.

``perceive(PerceiveRequest(message="What happened last week?", now=now)).route`` -> ``"medium"``.
The scene (work / coding, life / food, ...) is also what summarize files an episode under.
"""

from __future__ import annotations

import re

from reverie.engines.base import PerceiveRequest
from reverie.engines.heuristic import lexicon as lx
from reverie.engines.heuristic.phrases import analyze_text, rank
from reverie.engines.heuristic.tagkeys import map_tags
from reverie.models import Perception, Route
from reverie.text import has_cjk, stem
from reverie.timerefs import names_a_time, resolve_time_refs

_SCENE_INDEX: dict[str, tuple[str, str]] = {}
for _scene_name, _subs in lx.SCENES.items():
    for _sub_name, _keywords in _subs.items():
        for _kw in _keywords:
            _SCENE_INDEX.setdefault(stem(_kw), (_scene_name, _sub_name))
_SCENE_ORDER = {scene: i for i, scene in enumerate(lx.SCENES)}
_SUB_SCENE_ORDER = {(scene, sub): i for scene, subs in lx.SCENES.items() for i, sub in enumerate(subs)}


def scene_of(stems: list[str]) -> tuple[str, str]:
    counts: dict[tuple[str, str], int] = {}
    for hit in map(_SCENE_INDEX.get, stems):
        if hit:
            counts[hit] = counts.get(hit, 0) + 1
    if not counts:
        return "general", ""
    totals: dict[str, int] = {}
    for (scene, _), n in counts.items():
        totals[scene] = totals.get(scene, 0) + n
    scene = min(totals, key=lambda s: (-totals[s], _SCENE_ORDER[s]))
    sub = min((k for k in counts if k[0] == scene), key=lambda k: (-counts[k], _SUB_SCENE_ORDER[k]))[1]
    return scene, sub


def _emotion_re(alternation: str) -> re.Pattern[str]:
    parts = alternation.split("|")
    latin = "|".join(p for p in parts if not has_cjk(p))
    cjk = "|".join(p for p in parts if has_cjk(p))
    return re.compile(rf"\b(?:{latin})\b" + (f"|{cjk}" if cjk else ""), re.IGNORECASE)


_EMOTION_RES = {label: _emotion_re(alt) for label, alt in lx.EMOTIONS.items()}


def _emotion(text: str) -> str:
    best, best_n = "neutral", 0
    for label, rx in _EMOTION_RES.items():
        n = len(rx.findall(text))
        if n > best_n:
            best, best_n = label, n
    return best


def _intent(text: str) -> str:
    t = text.strip()
    if lx.GREETING.match(t) and (len(t.split()) <= 6 if not has_cjk(t) else len(t) <= 12):
        return "greeting"
    for intent, rx in (("correction", lx.CORRECTION_CUE), ("feedback", lx.FEEDBACK_CUE),
                       ("request", lx.REQUEST_CUE), ("question", lx.QUESTION_CUE)):
        if rx.search(t):
            return intent
    return "statement"


def detect_route(text: str) -> Route:
    """``shallow`` (profile and facts), ``medium`` (+ overviews, notes) or ``deep`` (+ full text)."""
    if lx.DEEP_CUES.search(text):
        return "deep"
    if lx.MEDIUM_CUES.search(text) or names_a_time(text):
        return "medium"
    return "shallow"


def perceive(request: PerceiveRequest) -> Perception:
    text = request.message
    analyses = analyze_text(text)
    phrases = rank(analyses, 6)
    scene, sub = scene_of([s for a in analyses for s in a.stems])
    return Perception(
        route=detect_route(text), scene=scene, sub_scene=sub, intent=_intent(text), emotion=_emotion(text),
        time_refs=resolve_time_refs(text, request.now), keyphrases=phrases,
        tags=map_tags(phrases, request.known_tags),
    )
