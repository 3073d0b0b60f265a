"""The heuristic engine: offline, deterministic rules for English and Chinese.

It is the embedded default and runs on every ingested turn, so every regex is
compiled once, jieba is touched only by text that holds CJK, and nothing here
reads the clock, the network or a random source: the same input always gives
the same plan.

Usage::

    from reverie.engines.heuristic import HeuristicEngine
    engine = HeuristicEngine()
    engine.perceive(PerceiveRequest(message="What happened last week?", now=now)).route  # "medium"

One module per concept; imports only point down this list:

    lexicon     the word lists and signal rules (data only)
    words       sentences and content words, shared by every step
    phrases     keyphrases: runs of content words, ranked
    timerefs    dates a message refers to ("last week", "去年三月")
    tagkeys     tag names folded to keys; phrases mapped onto known tags
    person      English person and verbs ("I use vim" -> "Uses vim")
    signals     the durable signal a user's clause carries (lexicon rules)
    perceive    scene, intent, emotion, route: the perceive step
    extract     facts and profile sections: the extract step
    summarize   one-line summary, overview, tags, scene: the summarize step
    distill     Deep Dream's plan without an LLM: the distill step
    tidy        exact duplicates and filler words: the tidy step
    govern      tag relations and generic tags: the govern_tags step
    engine      HeuristicEngine, handing each step to its module

Whether two lines repeat or contradict each other is decided by the one judge,
:mod:`reverie.claims` (``fact_relation``, ``parse_claim``, ``contradicts``).
"""

from __future__ import annotations

from reverie.engines.heuristic.engine import HeuristicEngine
from reverie.engines.heuristic.lexicon import GENERIC_WORDS
from reverie.engines.heuristic.perceive import detect_route
from reverie.engines.heuristic.phrases import keyphrases
from reverie.timerefs import resolve_time_refs

__all__ = ["GENERIC_WORDS", "HeuristicEngine", "detect_route", "keyphrases", "resolve_time_refs"]
