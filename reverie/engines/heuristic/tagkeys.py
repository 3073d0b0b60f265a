"""Tag names as the engine compares them: a folded key, and phrases mapped onto known tags.

``tag_key("Code-Styles") == tag_key("code style")``; ``map_tags(["lgbtq support group"],
["Support Group"])`` -> ``["Support Group"]``. Perceive maps keyphrases with it, and
tag governance (govern.py) compares names by their keys.
"""

from __future__ import annotations

from functools import lru_cache

from reverie.tagnames import tag_key
from reverie.text import stem, words


@lru_cache(maxsize=64)
def _tag_index(known: tuple[str, ...]) -> dict[str, str]:
    index: dict[str, str] = {}
    for name in known:
        index.setdefault(tag_key(name), name)
    return index


def map_tags(phrases: list[str], known: list[str], limit: int = 4) -> list[str]:
    """Known tags that the phrases name, whole or in part; never a tag that is not known."""
    if not known:
        return []
    index = _tag_index(tuple(known))
    tags: list[str] = []
    for phrase in phrases:
        parts = [stem(w) for w in words(phrase)]
        # the whole phrase first, then its shorter runs: "lgbtq support group" -> "support group", "lgbtq"
        spans = [" ".join(parts[i:i + n]) for n in range(len(parts), 0, -1) for i in range(len(parts) - n + 1)]
        for span in spans:
            tag = index.get(span)
            if tag and tag not in tags:
                tags.append(tag)
                if len(tags) >= limit:
                    return tags
    return tags

