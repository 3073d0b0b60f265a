"""Keyphrases: the runs of content words a text is about, best first.

``keyphrases("I love pottery class")`` -> ``["pottery class"]``. A sentence is read
once (:func:`analyze`, cached): summarize, extract and perceive share the reading.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from typing import Any

from reverie.engines.heuristic import lexicon as lx
from reverie.engines.heuristic.words import YEAR, is_content, sentences
from reverie.redact import PLACEHOLDER_RE
from reverie.text import CJK_RE, stem, words

_CJK_RANGES = CJK_RE.pattern.strip("[]")
_LATIN = rf"[^\W_{_CJK_RANGES}]"
_TOKEN = re.compile(rf"[{_CJK_RANGES}]+|{_LATIN}+(?:['.+#-]{_LATIN}+)*[+#]*|[.!?;:。！？；：]")
# in ASCII text a Latin letter is [A-Za-z0-9]: the same tokens, found faster
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['.+#-][A-Za-z0-9]+)*[+#]*|[.!?;:]")
_MODIFIER_ENDINGS = ("ly", "ful", "ous", "ive", "able", "ible", "less", "ed", "est", "ish")


@dataclass(frozen=True, slots=True)
class Phrase:
    key: str  # stems joined by spaces: what makes two phrases the same
    text: str  # lower-case surface form
    weight: float


@dataclass(frozen=True, slots=True)
class Analysis:
    """One sentence, read once (and cached: summarize and extract read the same turn)."""

    phrases: tuple[Phrase, ...]
    stems: tuple[str, ...]  # every content word, for scenes
    n_words: int
    n_dates: int


def _is_cjk_char(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


_SENTENCE_END = ("", "", False, False, "end")
_MARK = ("", "", False, False, "mark")
_NOT_LATIN = ("end", "mark", "zh")


@lru_cache(maxsize=65536)
def _token_info(token: str) -> tuple[str, str, bool, bool, str]:
    """(lower-case word, its stem, is content, is a date word, kind) of one token: kind is
    "zh" for a run of Chinese characters (the run as the word), "end" or "mark" for punctuation."""
    first = token[0]
    if _is_cjk_char(first):
        return token, "", False, False, "zh"
    if not first.isalnum():
        return _SENTENCE_END if first in ".!?。！？" else _MARK
    if token.endswith("'s"):
        token = token[:-2]
    low = token.lower()
    is_date = bool(YEAR.fullmatch(low)) or low in lx.MONTHS or low in lx.WEEKDAYS
    if any(ch.isdigit() for ch in token):
        kind = "num"
    elif len(token) > 1 and token.isupper():
        kind = "acro"
    else:
        kind = "cap" if token[:1].isupper() else "word"
    return low, stem(low), is_content(low) if low else False, is_date, kind


@lru_cache(maxsize=65536)
def _cjkwords(run: str) -> tuple[tuple[str, bool], ...]:
    return tuple((w, len(w) >= 2 and is_content(w)) for w in words(run))


def _add_phrase(phrases: list[Phrase], run: list[tuple[str, str]], joiner: str) -> None:
    """Add the phrase of ``run`` without another language's function words at its ends ("und die pin" is
    "pin"); written in lower case only, as a name's part is not one ("Los Angeles", "La Paz")."""
    start, end = 0, len(run)
    while start < end and run[start][1] == "word" and run[start][0] in lx.FOREIGN_FUNCTION_WORDS:
        start += 1
    while end > start and run[end - 1][1] == "word" and run[end - 1][0] in lx.FOREIGN_FUNCTION_WORDS:
        end -= 1
    if start < end:
        phrases.append(_phrase(tuple(run[start:end]), joiner))


@lru_cache(maxsize=65536)
def _phrase(run: tuple[tuple[str, str], ...], joiner: str) -> Phrase:
    ws = [w for w, _ in run]
    entity = any(k != "word" for _, k in run)
    weight = 1.0 + 0.5 * (len(ws) - 1) + (1.0 if entity else 0.0) + (0.3 if max(map(len, ws)) >= 7 else 0.0)
    if len(ws) == 1 and not entity and ws[0].endswith(_MODIFIER_ENDINGS):
        weight -= 0.6  # "powerful", "swamped": a lone modifier locates little
    return Phrase(" ".join(stem(w) for w in ws), joiner.join(ws), weight)


@lru_cache(maxsize=8192)
def analyze(sentence: str) -> Analysis:
    """Candidate phrases: runs of content words (names kept apart from common words, 3 words at most)."""
    phrases: list[Phrase] = []
    stems: list[str] = []
    run: list[tuple[str, str]] = []
    n_words = n_dates = 0
    initial = True
    if "[" in sentence:  # "[api-key]" stands for what was taken out: no phrase, nor part of one
        sentence = PLACEHOLDER_RE.sub(" ; ", sentence)
    tokens = (_ASCII_TOKEN if sentence.isascii() else _TOKEN).findall(sentence)
    for low, stemmed, content, is_date, kind in map(_token_info, tokens):
        if kind in _NOT_LATIN:  # punctuation or Chinese: a Latin run ends
            if run:
                _add_phrase(phrases, run, " ")
                run = []
            if kind == "zh":
                for word, zh_content in _cjkwords(low):
                    n_words += 1
                    if zh_content:
                        run.append((word, "word"))
                        stems.append(word)
                    if run and (not zh_content or len(run) == 2):
                        _add_phrase(phrases, run, "")
                        run = []
                initial = False
            else:
                initial = kind == "end"
            continue
        n_words += 1
        n_dates += is_date
        if kind == "cap":
            kind = "word" if initial else "name"
        initial = False
        if not content:
            if run:
                _add_phrase(phrases, run, " ")
                run = []
            continue
        if run and ((kind == "name" and run[-1][1] == "word") or (kind == "word" and run[-1][1] == "name")):
            _add_phrase(phrases, run, " ")
            run = []
        run.append((low, kind))
        stems.append(stemmed)
        if len(run) == 3:
            _add_phrase(phrases, run, " ")
            run = []
    if run:
        _add_phrase(phrases, run, " ")
    return Analysis(tuple(phrases), tuple(stems), n_words, n_dates)


def rank(analyses: list[Analysis], limit: int) -> list[str]:
    """Best phrases first: weight, repetition, then first appearance; no phrase inside a chosen one."""
    merged: dict[str, list[Any]] = {}
    for order, p in enumerate(chain.from_iterable([a.phrases for a in analyses])):
        entry = merged.get(p.key)
        if entry is None:
            merged[p.key] = [p.text, p.weight, order, 1]
        else:
            if p.weight > entry[1]:
                entry[1] = p.weight
            entry[3] += 1
    # a heap, not a sort: a long text has thousands of phrases and only the first few are chosen
    # (the first appearance, unique, breaks every tie: the order is that of a sort)
    ranked = [(-(weight + 0.5 * (count - 1)), first, key, text) for key, (text, weight, first, count) in merged.items()]
    heapq.heapify(ranked)
    chosen: list[str] = []
    chosen_keys: list[set[str]] = []
    while ranked:
        _, _, key, text = heapq.heappop(ranked)
        parts = set(key.split())
        if any(parts <= c for c in chosen_keys):
            continue
        chosen.append(text)
        chosen_keys.append(parts)
        if len(chosen) >= limit:
            break
    return chosen


def analyze_text(text: str) -> list[Analysis]:
    return [analyze(sentence) for sentence in sentences(text)]


def keyphrases(text: str, limit: int = 4) -> list[str]:
    """The content phrases of ``text``, best first: ``keyphrases("I love pottery class")`` -> ``["pottery class"]``."""
    return rank(analyze_text(text), limit)
