"""Tag governance: candidate tags activated, related to live ones, or deprecated as generic.

"Code-Styles" next to a live "code style" is a synonym (only case, plural or hyphen
differ); "vscode" next to "vs code", or "support group" next to "lgbtq support group",
is related; "stuff" is deprecated. Each candidate is compared only with the live tags
that could relate to it.
"""

from __future__ import annotations

from typing import Literal

from reverie.engines.base import GovernRequest, RelationProposal, TagDecisions
from reverie.engines.heuristic.lexicon import GENERIC_WORDS
from reverie.tagnames import TagNeighbours, tag_features
from reverie.text import STOPWORDS, has_cjk, jaccard, stem, words


RELATIONS_PER_TAG = 3  # relations proposed for one candidate tag


def _is_generic_tag(name: str) -> bool:
    ws = words(name)
    return not ws or all(
        w in STOPWORDS or w in GENERIC_WORDS or stem(w) in GENERIC_WORDS or (len(w) < 2 and not has_cjk(w))
        for w in ws
    )


def _tag_relation(a: str, b: str) -> Literal["synonym", "related"] | None:
    """synonym (only case, plural or hyphen differ), related (near spelling or containment), or None."""
    ka, ca, ba, wa, cjk = tag_features(a)
    kb, cb, bb, wb, _ = tag_features(b)
    if ka == kb:
        return "synonym"
    # jaccard >= 0.8 needs sets of nearly one size: the length check spares most comparisons
    if 0.8 * max(len(ba), len(bb)) <= min(len(ba), len(bb)) and jaccard(ba, bb) >= 0.8:
        return "related"
    if wa < wb or wb < wa:
        return "related"
    if cjk and min(len(ca), len(cb)) >= 2 and (ca in cb or cb in ca):
        return "related"
    return None


def govern(request: GovernRequest) -> TagDecisions:
    decisions = TagDecisions()
    pool = TagNeighbours(t.name for t in request.existing if t.status not in ("deprecated", "merged"))
    live = set(pool.names)
    for candidate in request.candidates:
        name = candidate.name
        if _is_generic_tag(name):
            decisions.deprecate.append(name)
            continue
        related: list[tuple[str, Literal["synonym", "related"]]] = []
        for other in pool.neighbours(name):
            level = _tag_relation(name, other)
            if level:
                related.append((other, level))
                if len(related) == RELATIONS_PER_TAG:
                    break  # the first ones found are the ones proposed
        if related:
            decisions.relations.extend(RelationProposal(source=name, target=other, level=level)
                                       for other, level in related)
            continue
        if name not in live:
            decisions.activate.append(name)
            pool.add(name)
            live.add(name)
    return decisions
