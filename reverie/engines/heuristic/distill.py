"""Distill (Deep Dream, seed 004) without an LLM: facts and note lines into one ranked plan.

Facts that hold no lasting content are removed; facts and daily-note signals that say the
same thing are clustered and merged (the most used, most confident, newest first); on a
contradiction the newer side wins and the older side's facts are removed; every kept line
stays within the words of its sources.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal

from reverie.claims import Claim, contradicts, corrects_value, different_items, fact_relation, parse_claim
from reverie.engines.base import DistillRequest, DreamPlan, PlanEntry
from reverie.engines.heuristic import lexicon as lx
from reverie.engines.heuristic.signals import (
    Clause,
    is_noise,
    is_temporary,
    line_signals,
)
from reverie.engines.heuristic.words import has_content, overlap
from reverie.models import as_utc
from reverie.text import clip_line, has_cjk, term_set

log = logging.getLogger(__name__)

_ARTIFACT = re.compile(r"^[\s\-*#>`_=|\[\]().:;,。，、~]*$")
_EPOCH = datetime.min.replace(tzinfo=timezone.utc)


def _drop_reason(content: str) -> str | None:
    """Why a line has no place in long-term memory (seed 004's "clean invalid"), or None."""
    if _ARTIFACT.match(content):
        return "empty or a formatting artifact"
    clause = Clause.of(content)
    if is_temporary(clause) or is_noise(clause):
        return "temporary state"
    if not has_content(content):
        return "too generic"
    return None


@dataclass(slots=True)
class _Item:
    id: str
    content: str
    category: str
    confidence: float
    uses: int
    when: datetime
    order: int
    is_fact: bool
    source_text: str  # the input text the content must stay within
    claim: Claim


@dataclass(slots=True)
class _Cluster:
    items: list[_Item]

    @property
    def head(self) -> _Item:
        return self.items[0]

    @property
    def when(self) -> datetime:
        return max(i.when for i in self.items)


def _note_time(day: str) -> datetime:
    try:
        return datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        return _EPOCH


def _recency(when: datetime) -> float:
    """Sort key: newer first, an unknown time last."""
    return -when.timestamp() if when > _EPOCH else 0.0


def _rank_key(item: _Item) -> tuple[int, float, float, int]:
    return (-item.uses, -item.confidence, _recency(item.when), item.order)


def _conflict(a: _Item, b: _Item) -> bool:
    """The two say another value of one thing (a correction, the opposite liking, another
    value of one slot): the newer one stands, the older one goes, never one merged line."""
    if contradicts(a.claim, b.claim) or contradicts(b.claim, a.claim):
        return True
    if (a.category == "correction" and corrects_value(a.content, b.content)) or (
            b.category == "correction" and corrects_value(b.content, a.content)):
        return True  # "The checkout launch moved to December 8" / "Decided to launch ... on December 1"
    return a.category == b.category and fact_relation(a.content, b.content, 1.0) == "conflict"


def _similar(a: _Item, b: _Item) -> bool:
    ta, tb = a.claim.tokens, b.claim.tokens
    if a.content.casefold() == b.content.casefold():
        return True
    small, large = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    if not (overlap(ta, tb) >= 0.5 or (len(small) >= 2 and small <= large)):
        return False
    # word overlap is no sameness: "Loves chess on weekends" and "Loves jazz on weekends"
    # share all but what each loves, and "Prefers tabs over spaces" says the opposite of
    # "Prefers spaces over tabs" with the same words
    return not _conflict(a, b) and not different_items(a.content, b.content)


# "User: ..." / "Caroline: ..." / "用户：..." opens a note line; "Lesson learned: ..." is no speaker
_SPEAKER_PREFIX = re.compile(r"^(?:[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2}:\s+|[\u4e00-\u9fff]{1,6}：)")
_AGENT_LINE = re.compile(r"^\s*(?:assistant|agent|bot|助手)\s*[:：]", re.IGNORECASE)


def _note_text(line: str) -> str:
    """A note line as the signal rules read it: "User: prefers tabs" (a summary) -> "The user prefers tabs"."""
    line = line.strip()
    label = _SPEAKER_PREFIX.match(line)
    if not label:
        return line
    rest = line[label.end():]
    return f"The user {rest}" if rest[:1].islower() else rest


def _dream_items(request: DistillRequest, removals: list[PlanEntry]) -> list[_Item]:
    items: list[_Item] = []
    for fact in request.facts:
        reason = _drop_reason(fact.content)
        if reason:
            removals.append(PlanEntry(action="remove", content=fact.content, category=fact.category,
                                      sources=[fact.id], reason=reason))
            continue
        when = as_utc(fact.updated_at) if fact.updated_at else _EPOCH
        negated = ""
        if fact.category == "correction":
            found = (lx.NEGATED_ZH if has_cjk(fact.content) else lx.NEGATED_EN).search(fact.content)
            negated = found["y"] if found else ""
        items.append(_Item(fact.id, fact.content.strip(), fact.category, fact.confidence, fact.uses, when,
                           len(items), True, fact.content, parse_claim(fact.content, negated)))
    for note in request.notes:
        if _AGENT_LINE.match(note.content):
            continue  # what the agent said is no fact about the user
        for sig in line_signals(_note_text(note.content)):
            items.append(_Item(note.id, sig.content, sig.category, sig.confidence, 0, _note_time(note.date),
                               len(items), False, note.content, parse_claim(sig.content, sig.negated)))
    return items


def _cluster(items: list[_Item]) -> list[_Cluster]:
    clusters: list[_Cluster] = []
    for item in sorted(items, key=_rank_key):
        home = next((c for c in clusters if _similar(item, c.head)), None)
        if home is None:
            clusters.append(_Cluster([item]))
        else:
            home.items.append(item)
    return clusters


def _supersede(clusters: list[_Cluster]) -> tuple[list[_Cluster], list[PlanEntry]]:
    """Newer wins on a same-subject conflict; every fact of the older side is removed."""
    kept: list[_Cluster] = []
    removals: list[PlanEntry] = []
    for cluster in sorted(clusters, key=lambda c: (_recency(c.when), c.head.order)):
        winner = next((k for k in kept if _conflict(k.head, cluster.head)), None)
        if winner is None:
            kept.append(cluster)
            continue
        removals.extend(PlanEntry(action="remove", content=i.content, category=i.category, sources=[i.id],
                                  reason=f"superseded by {winner.head.id}") for i in cluster.items if i.is_fact)
    return kept, removals


def _grounded(content: str, items: list[_Item]) -> str:
    """The content if every content word of it is in its sources, else the head's own words.
    A Chinese word is in a source that holds it anywhere: words run together there
    ("住在上海" from "我搬到上海了，不住在北京了", whose words are cut as "不住")."""
    allowed = frozenset().union(*(term_set(i.source_text) for i in items))
    strays = [t for t in term_set(content) - allowed
              if not (has_cjk(t) and any(t in i.source_text for i in items))]
    if not strays:
        return content
    log.debug("dream line %r strays from its sources; keeping their own words", content)
    return clip_line(_own_words(items[0]))


def _own_words(item: _Item) -> str:
    """An item's source as a line: a note's without its speaker ("User: lives in Porto" is
    "Lives in Porto", "用户：我住在上海" is "我住在上海")."""
    if item.is_fact:
        return item.source_text
    text = item.source_text.strip()
    label = _SPEAKER_PREFIX.match(text)
    rest = text[label.end():].strip() if label else text
    return (rest[:1].upper() + rest[1:]) or text


def _plan_entry(cluster: _Cluster) -> PlanEntry:
    head = cluster.head
    sources = list(dict.fromkeys(i.id for i in cluster.items))
    facts = [i for i in cluster.items if i.is_fact]
    action: Literal["keep", "merge", "add"]
    if not facts:
        action, reason = "add", "new from daily notes"
    elif len(sources) == 1:
        action, reason = "keep", "kept"
    else:
        action, reason = "merge", f"merged {len(sources)} similar entries"
    content = _grounded(head.content, cluster.items)
    return PlanEntry(action=action, content=content, category=head.category, sources=sources, reason=reason)


def _cluster_rank(cluster: _Cluster) -> tuple[int, float, float, int]:
    return (-sum(i.uses for i in cluster.items), -max(i.confidence for i in cluster.items),
            _recency(cluster.when), cluster.head.order)


def distill(request: DistillRequest) -> DreamPlan:
    """Seed 004's Deep Dream without an LLM. Facts ranked below ``max_entries`` are left out of the plan."""
    removals: list[PlanEntry] = []
    items = _dream_items(request, removals)
    kept, superseded = _supersede(_cluster(items))
    ranked = sorted(kept, key=_cluster_rank)[: max(request.max_entries, 0)]
    return DreamPlan(entries=[_plan_entry(c) for c in ranked] + removals + superseded)
