"""A plain Okapi BM25 in pure Python: the baseline every benchmark figure is set against.

    >>> index = BM25([["red", "apple"], ["green", "pear"]])
    >>> index.rank(["pear"])
    [1]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from reverie.tokens import count_tokens

__all__ = ["BM25", "pack"]


class BM25:
    """Okapi BM25 over pre-tokenized documents (k1 = 1.2, b = 0.75 by default)."""

    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75):
        lengths = [len(doc) for doc in documents]
        avg_len = sum(lengths) / len(lengths) if any(lengths) else 1.0
        self._size = len(lengths)
        # (document, weight without idf) for each term, so that a query touches only its postings
        self._postings: dict[str, list[tuple[int, float]]] = {}
        for i, doc in enumerate(documents):
            norm = k1 * (1 - b + b * lengths[i] / avg_len)
            for term, f in Counter(doc).items():
                self._postings.setdefault(term, []).append((i, f * (k1 + 1) / (f + norm)))
        # the Lucene idf: never negative, so a term in most documents still counts a little
        n = self._size
        self._idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self._postings.items()}

    def __len__(self) -> int:
        return self._size

    def scores(self, query: Sequence[str]) -> list[float]:
        """The score of every document for ``query`` (a repeated query term counts once per repeat)."""
        out = [0.0] * self._size
        for term in query:
            idf = self._idf.get(term, 0.0)
            for i, weight in self._postings.get(term, ()):
                out[i] += idf * weight
        return out

    def rank(self, query: Sequence[str]) -> list[int]:
        """Indices of the documents that share a term with ``query``, best first (ties in document order)."""
        scores = self.scores(query)
        return sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])


def pack(lines: Sequence[str], budget: int) -> int:
    """How many of ``lines``, taken in order, fit in ``budget`` tokens (each line costs its tokens + 1)."""
    used = 0
    for taken, line in enumerate(lines):
        used += count_tokens(line) + 1
        if used > budget:
            return taken
    return len(lines)
