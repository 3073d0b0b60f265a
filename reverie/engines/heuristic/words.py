"""What every step of the heuristic engine reads text with: sentences and content words.

``sentences("I moved. Version 3.12 is out!")`` -> ``["I moved.", "Version 3.12 is out!"]``;
``is_content("pottery")`` is True, ``is_content("thing")`` and ``is_content("prefer")`` are not.
"""

from __future__ import annotations

import re

from reverie.engines.heuristic import lexicon as lx
from reverie.text import STOPWORDS, jaccard, stem, words

# a sentence ends at . ! ? ; before a space or the end ("3.12" stays whole) and after 。！？；, not at
# the full stop of a title or an abbreviation that a sentence goes on after ("St. Mary's", "Dr. Lee", "e.g. tea")
# (read with the slower pattern only when the text holds one)
_ABBREVIATION = r"\b(?:Mrs|Mr|Ms|Dr|St|Prof|Mt|vs|e\.g|i\.e)\.\s*(?=\S)"
_ABBREVIATION_END = re.compile(r"\b(?:Mrs|Mr|Ms|Dr|St|Prof|Mt|vs|e\.g|i\.e)$")
_SENTENCE = re.compile(r"[^.!?;。！？；\n]+(?:[.!?;]+(?=[^\s.!?;])[^.!?;。！？；\n]*)*[.!?;。！？；]*")
_SENTENCE_ABBREVIATED = re.compile(rf"(?:{_ABBREVIATION}|[^.!?;。！？；\n])+(?:[.!?;]+(?=[^\s.!?;])(?:{_ABBREVIATION}"
                                   r"|[^.!?;。！？；\n])*)*[.!?;。！？；]*")
YEAR = re.compile(r"(?:19|20)\d\d")
_WEAK_STEMS = frozenset(stem(w) for w in lx.WEAK_WORDS)
_ZH_NUMERAL = re.compile(r"[零一二两三四五六七八九十百千万几个]+")
_ZH_PRONOUN_LED = re.compile(r"[我你他她它][\u4e00-\u9fff]$")  # jieba's "我用", "你说"


def sentences(text: str) -> list[str]:
    text = text.replace("’", "'")
    pattern = _SENTENCE_ABBREVIATED if _abbreviated(text) else _SENTENCE
    return [s for raw in pattern.findall(text) if (s := raw.strip())]


def _abbreviated(text: str) -> bool:
    """Whether a full stop and a space in ``text`` follow an abbreviation ("St. Mary's")."""
    at = text.find(". ")
    while at > 0:
        if _ABBREVIATION_END.search(text, max(0, at - 4), at):
            return True
        at = text.find(". ", at + 2)
    return False


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def is_content(word: str) -> bool:
    """A word that says what a line is about: no stopword, generic or weak word, number word or year."""
    if word in STOPWORDS or word in lx.GENERIC_WORDS or word in lx.WEAK_WORDS or word in lx.NUMBER_WORDS:
        return False
    if _ZH_NUMERAL.fullmatch(word) or _ZH_PRONOUN_LED.match(word):
        return False
    if word.isdigit():
        return len(word) >= 3 and not YEAR.fullmatch(word)
    if len(word) < 2:
        return False
    s = stem(word)
    return s not in _WEAK_STEMS and s not in lx.GENERIC_WORDS


def has_content(text: str) -> bool:
    return any(is_content(w) for w in words(text))


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """:func:`reverie.text.jaccard` of two term sets, except that two empty sets share nothing.

    (``jaccard`` counts two empty sets as equal, 1.0; two lines without a content word
    are no twins for the engine.)
    """
    return jaccard(a, b) if a or b else 0.0
