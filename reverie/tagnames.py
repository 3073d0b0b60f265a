"""Tag names as governance compares them, and which live tags could relate to a name.

``tag_key("Code-Styles") == tag_key("code style")``. Two tags can relate (synonym or
related) only if they share a relation key: the same folded key, a word, the first
four letters, or (Chinese) a character bigram. :class:`TagNeighbours` indexes the live
tags by those keys, so a new tag is compared with the few that could relate, not with
every tag a user has (the learning line keeps one per user between batches).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

from reverie.text import has_cjk, stem, words

# at most this many live tags per relation key are offered for comparison: a word shared
# by thousands of tags ("trip", a speaker's name) says little about any one of them
NEIGHBOURS_PER_KEY = 200


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tag_key(name: str) -> str:
    """Case, hyphens, plurals and -ing/-ed folded: "Code-Styles" and "code style" share a key."""
    return " ".join(stem(_singular(w)) for w in words(name))


def compact(name: str) -> str:
    return re.sub(r"[\s_\-./]+", "", name.casefold())


def bigrams(text: str) -> frozenset[str]:
    return frozenset(text[i:i + 2] for i in range(len(text) - 1)) or frozenset({text})


@lru_cache(maxsize=65536)
def tag_features(name: str) -> tuple[str, str, int, int, frozenset[str], bool]:
    """(key, compact spelling, how many bigrams it has, their mask, key words, has CJK): what
    pairwise checks compare. The bigrams themselves (:func:`bigrams`) are made again where a
    check needs them, which the mask makes rare: a cache of tens of thousands of tag names
    holding a set of bigrams each was as many more objects for every full pass of the
    cyclic garbage collector to walk."""
    key = tag_key(name)
    flat = compact(name)
    grams = bigrams(flat)
    mask = 0
    for g in grams:
        mask |= 1 << (hash(g) & 127)  # any bit per bigram does: a bound on how many two names share
    return key, flat, len(grams), mask, frozenset(key.split()), has_cjk(flat)


@lru_cache(maxsize=65536)
def relation_keys(name: str) -> tuple[str, ...]:
    """The keys two tags must share to be compared at all, sorted (a tuple of strings, which
    the collector stops tracking)."""
    key, flat, _, _, word_set, cjk = tag_features(name)
    keys = {f"k:{key}", f"p:{flat[:4]}"} | {f"w:{w}" for w in word_set}
    if cjk:
        keys |= {f"b:{b}" for b in bigrams(flat)}
    return tuple(sorted(keys))


class TagNeighbours:
    """Live tag names indexed by relation key, in the order they were added."""

    def __init__(self, names: Iterable[str] = ()):
        self.names: dict[str, None] = {}
        self._index: dict[str, list[str]] = {}
        for name in names:
            self.add(name)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def add(self, name: str) -> None:
        if name in self.names:
            return
        self.names[name] = None
        for k in relation_keys(name):
            self._index.setdefault(k, []).append(name)

    def discard(self, name: str) -> None:
        """``name`` is no longer live (deprecated, merged)."""
        if name not in self.names:
            return
        del self.names[name]
        for k in relation_keys(name):
            self._index[k].remove(name)

    def neighbours(self, name: str, *, per_key: int | None = None) -> list[str]:
        """Live tags that share a relation key with ``name`` (at most ``per_key`` of each key's,
        the first added), in a stable order."""
        seen: dict[str, None] = {}
        for k in relation_keys(name):  # (sorted)
            found = self._index.get(k, ())
            for other in found if per_key is None else found[:per_key]:
                if other != name:
                    seen.setdefault(other)
        return list(seen)

    def near(self, names: Iterable[str], *, per_key: int | None = None) -> set[str]:
        """Every live tag that is a neighbour of one of ``names`` (as :meth:`neighbours`
        finds them, in no order)."""
        found: set[str] = set()
        for name in names:
            mine: set[str] = set()
            for k in relation_keys(name):
                listed = self._index.get(k)
                if listed:
                    mine.update(listed if per_key is None else listed[:per_key])
            mine.discard(name)
            found |= mine
        return found
