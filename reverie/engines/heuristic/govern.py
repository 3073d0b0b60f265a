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
from reverie.tagnames import TagNeighbours, bigrams, tag_features
from reverie.text import STOPWORDS, has_cjk, jaccard, stem, words


RELATIONS_PER_TAG = 3  # relations proposed for one candidate tag


def _is_generic_tag(name: str) -> bool:
    ws = words(name)
    return not ws or all(
        w in STOPWORDS or w in GENERIC_WORDS or stem(w) in GENERIC_WORDS or (len(w) < 2 and not has_cjk(w))
        for w in ws
    )


def _near_spelling(a: frozenset[str], b: frozenset[str]) -> bool:
    """Bigram Jaccard >= 0.8 (which needs sets of nearly one size: the length check comes first)."""
    return 0.8 * max(len(a), len(b)) <= min(len(a), len(b)) and jaccard(a, b) >= 0.8


def _relations(name: str, others: list[str]) -> list[tuple[str, Literal["synonym", "related"]]]:
    """The first :data:`RELATIONS_PER_TAG` of ``others`` that ``name`` relates to, in their order:
    a synonym when only case, plural or hyphen differ; related when one's words hold the
    other's, when the spellings are near, or (Chinese) when one spelling holds the other."""
    key, flat, size, mask, word_set, cjk = tag_features(name)
    related: list[tuple[str, Literal["synonym", "related"]]] = []
    for other in others:
        b_key, b_flat, b_size, b_mask, b_words, _ = tag_features(other)
        if b_key == key:
            related.append((other, "synonym"))
        # near spelling last, and only where the masks allow it: the bigrams' union has at least
        # as many bigrams as the masks' union has bits (u), so the Jaccard of n and m bigrams is
        # at most (n + m - u) / u, under 0.8 when 5 (n + m) < 9 u
        elif word_set < b_words or b_words < word_set or (
                5 * (size + b_size) >= 9 * (mask | b_mask).bit_count()
                and _near_spelling(bigrams(flat), bigrams(b_flat))) or (
                cjk and min(len(flat), len(b_flat)) >= 2 and (flat in b_flat or b_flat in flat)):
            related.append((other, "related"))
        else:
            continue
        if len(related) == RELATIONS_PER_TAG:
            break  # the first ones found are the ones proposed
    return related


def govern(request: GovernRequest) -> TagDecisions:
    decisions = TagDecisions()
    pool = TagNeighbours(t.name for t in request.existing if t.status not in ("deprecated", "merged"))
    live = set(pool.names)
    for candidate in request.candidates:
        name = candidate.name
        if _is_generic_tag(name):
            decisions.deprecate.append(name)
            continue
        related = _relations(name, pool.neighbours(name))
        if related:
            decisions.relations.extend(RelationProposal(source=name, target=other, level=level)
                                       for other, level in related)
            continue
        if name not in live:
            decisions.activate.append(name)
            pool.add(name)
            live.add(name)
    return decisions
