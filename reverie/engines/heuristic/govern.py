"""Tag governance: candidate tags activated, related to live ones, or deprecated as generic.

"Code-Styles" next to a live "code style" is a synonym (only case, plural or hyphen
differ); "vscode" next to "vs code", or "support group" next to "lgbtq support group",
is related; "stuff" is deprecated. Each candidate is compared only with the live tags
that could relate to it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from reverie.engines.base import GovernRequest, RelationProposal, TagDecisions
from reverie.engines.heuristic.lexicon import GENERIC_WORDS
from reverie.engines.heuristic.tagkeys import tag_key
from reverie.text import STOPWORDS, has_cjk, jaccard, stem, words


def _compact(name: str) -> str:
    return re.sub(r"[\s_\-./]+", "", name.casefold())


def _bigrams(text: str) -> frozenset[str]:
    return frozenset(text[i:i + 2] for i in range(len(text) - 1)) or frozenset({text})


def _is_generic_tag(name: str) -> bool:
    ws = words(name)
    return not ws or all(
        w in STOPWORDS or w in GENERIC_WORDS or stem(w) in GENERIC_WORDS or (len(w) < 2 and not has_cjk(w))
        for w in ws
    )


@lru_cache(maxsize=65536)
def _tag_features(name: str) -> tuple[str, str, frozenset[str], frozenset[str], bool]:
    """What the pairwise checks compare, computed once per tag name (govern is pairwise)."""
    key = tag_key(name)
    compact = _compact(name)
    return key, compact, _bigrams(compact), frozenset(key.split()), has_cjk(compact)


def _tag_relation(a: str, b: str) -> Literal["synonym", "related"] | None:
    """synonym (only case, plural or hyphen differ), related (near spelling or containment), or None."""
    ka, ca, ba, wa, cjk = _tag_features(a)
    kb, cb, bb, wb, _ = _tag_features(b)
    if ka == kb:
        return "synonym"
    if jaccard(ba, bb) >= 0.8:
        return "related"
    if wa < wb or wb < wa:
        return "related"
    if cjk and min(len(ca), len(cb)) >= 2 and (ca in cb or cb in ca):
        return "related"
    return None


class _TagPool:
    """The live tags, indexed so a candidate is compared only with tags that could relate
    to it (same key, a shared word, a shared spelling prefix, a shared CJK bigram)."""

    def __init__(self, names: list[str]):
        self.names: list[str] = []
        self._index: dict[str, list[str]] = {}
        for name in names:
            self.add(name)

    @staticmethod
    def _keys(name: str) -> set[str]:
        key, compact, bigrams, word_set, cjk = _tag_features(name)
        keys = {f"k:{key}", f"p:{compact[:4]}"} | {f"w:{w}" for w in word_set}
        if cjk:
            keys |= {f"b:{b}" for b in bigrams}
        return keys

    def add(self, name: str) -> None:
        self.names.append(name)
        for k in self._keys(name):
            self._index.setdefault(k, []).append(name)

    def neighbours(self, name: str) -> list[str]:
        seen: dict[str, None] = {}
        for k in sorted(self._keys(name)):
            for other in self._index.get(k, ()):
                if other != name:
                    seen.setdefault(other)
        return list(seen)


def govern(request: GovernRequest) -> TagDecisions:
    decisions = TagDecisions()
    pool = _TagPool([t.name for t in request.existing if t.status not in ("deprecated", "merged")])
    live = set(pool.names)
    for candidate in request.candidates:
        name = candidate.name
        if _is_generic_tag(name):
            decisions.deprecate.append(name)
            continue
        related = [(other, level) for other in pool.neighbours(name) if (level := _tag_relation(name, other))]
        if related:
            decisions.relations.extend(RelationProposal(source=name, target=other, level=level)
                                       for other, level in related[:3])
            continue
        if name not in live:
            decisions.activate.append(name)
            pool.add(name)
            live.add(name)
    return decisions
