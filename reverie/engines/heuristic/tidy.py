"""Tidy: exact duplicates removed, and the filler an automatic writer wraps around a fact.

"The user said that they prefer tabs" -> "Prefers tabs"; of facts that differ only in
spacing, case and a final full stop the most used (then most confident) one stays.
"""

from __future__ import annotations

import re

from reverie.engines.base import FactRef, TidyAction, TidyPlan
from reverie.engines.heuristic import lexicon as lx
from reverie.engines.heuristic.person import conjugate_first, third_verb
from reverie.engines.heuristic.words import cap
from reverie.text import exact_key, has_cjk, normalize_space, stem, term_set

_FILLER_STEMS = frozenset(stem(w) for w in lx.FILLER_TERMS) | lx.FILLER_TERMS
_ZH_PRONOUN = re.compile(r"^[他她我](?!们)")
_LEADING_PRONOUN = re.compile(r"^(?:(?P<they>they)|he|she)\s+(?P<v>[\w']+)(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)


def _defluff(content: str) -> str:
    """Without "The user said that" and its pronoun: "they prefer tabs" -> "Prefers tabs"."""
    text = normalize_space(content)
    stripped = lx.FILLER_PREFIX.sub("", text)
    if stripped == text:
        return text
    if has_cjk(stripped):
        return _ZH_PRONOUN.sub("", stripped)
    m = _LEADING_PRONOUN.match(stripped)
    if m:
        if not m["they"]:
            stripped = m["v"] + m["rest"]
        elif third_verb(m["v"]) == m["v"] and m["rest"][:1].isspace():
            stripped = conjugate_first(m["v"] + m["rest"])  # "they only drink decaf": past the adverb
        else:
            stripped = third_verb(m["v"]) + m["rest"]
    return cap(stripped)


def tidy(facts: list[FactRef]) -> TidyPlan:
    actions: list[TidyAction] = []
    groups: dict[str, list[tuple[int, FactRef]]] = {}
    for i, fact in enumerate(facts):
        groups.setdefault(exact_key(fact.content), []).append((i, fact))
    survivors: list[tuple[int, FactRef]] = []
    for group in groups.values():
        keep = min(group, key=lambda p: (-p[1].uses, -p[1].confidence, p[0]))
        survivors.append(keep)
        actions.extend(TidyAction(op="remove", fact_id=f.id, category=f.category,
                                  reason=f"exact duplicate of {keep[1].id}") for _, f in group if f is not keep[1])
    kept = {exact_key(f.content): f.id for _, f in survivors}
    for _, fact in sorted(survivors, key=lambda p: p[0]):
        new = _defluff(fact.content)
        needed = term_set(fact.content) - _FILLER_STEMS
        if not new or new == fact.content or len(new) >= len(fact.content) or not needed <= term_set(new):
            continue
        twin = kept.get(exact_key(new))
        if twin and twin != fact.id:
            actions.append(TidyAction(op="remove", fact_id=fact.id, category=fact.category,
                                      reason=f"same as {twin} once filler words are removed"))
        else:
            actions.append(TidyAction(op="rewrite", fact_id=fact.id, content=new, category=fact.category,
                                      reason="removed filler words"))
    return TidyPlan(actions=actions)
