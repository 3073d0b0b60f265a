"""The one way a fact is written: index, add (dedup / newest wins), reinforce, archive,
fold a duplicate into its twin, and keep the curated set within capacity.

Every line that writes facts (learning, dream, maintenance, sync, import, a
person's ``remember``) goes through :class:`FactWriter`, inside the caller's
transaction, so that a fact is judged, linked and indexed the same way whoever
writes it.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Iterable, Iterator, Mapping, Sequence

from reverie.claims import fact_relation, judge_keys
from reverie.journal import Journal
from reverie.models import DECAY, Fact, KnowledgeDoc, Model, Note, as_utc
from reverie.profiles import drop_outdated_parts
from reverie.redact import redact
from reverie.settings import Settings
from reverie.store.base import FactText, Store, add_tally, meta_record
from reverie.tags import TagWriter
from reverie.text import normalize_space, terms

log = logging.getLogger("reverie.facts")

# a learned fact longer than this is clipped (seed 002 advises one line under 120)
MAX_FACT_CHARS = 160
# a new fact is judged against every live fact up to this many, then against the newest
# RELATED_FACTS that share a word with it
FULL_SCAN_FACTS = 500
RELATED_FACTS = 50
OVER_CAPACITY = "over capacity"
CAPACITY_META = "capacity:{user}"
# what an engine proposed that learning did not keep as a fact, by reason (health says so)
SKIPPED_META = "facts-skipped:{user}"
# origins of facts a person vouched for: never evicted by capacity
VOUCHED = frozenset({"manual", "import", "sync"})


# a fact's meta entries of applications that address it by a key of their own (the LangGraph
# store's items): such a fact is the application's to replace or delete, never curated away
# (merged, superseded or dropped by a dream, consolidate, tidy or another fact's new value)
KEYED_META = ("langgraph",)


def keyed(fact: Fact) -> bool:
    return any(name in fact.meta for name in KEYED_META)


def fact_rank(fact: Fact, now: datetime) -> float:
    """Capacity and curation ranking: confidence, uses, recency (naive stored times read as UTC)."""
    last = as_utc(fact.last_used_at or fact.updated_at)
    age_days = max(0.0, (now - last).total_seconds() / 86400)
    return fact.confidence + 0.3 * math.log1p(fact.uses) + 0.5 * math.exp(-DECAY * age_days)


def numbers(text: str) -> set[str]:
    """The numbers a line states: where a made-up detail does the most harm."""
    return set(re.findall(r"\d+(?:[.,:]\d+)*", text))


def evictable_by_capacity(fact: Fact) -> bool:
    return fact.provenance.origin not in VOUCHED and fact.category != "correction"


def capacity_record(store: Store, user: str) -> dict[str, Any]:
    """What capacity evicted for ``user`` so far: evicted (total), last_at, last_count, last_journal."""
    return meta_record(store, CAPACITY_META.format(user=user))


def skipped_record(store: Store, user: str) -> dict[str, Any]:
    """The facts engines proposed for ``user`` that learning did not keep, so far:
    {"facts": total, "last_at", "reasons": {reason: count}}."""
    return meta_record(store, SKIPPED_META.format(user=user))


def note_skipped(store: Store, user: str, skipped: dict[str, int], now: datetime) -> None:
    """Count proposed facts not kept, by reason (inside the caller's transaction)."""
    add_tally(store, SKIPPED_META.format(user=user), skipped, now, total="facts", by="reasons")


class FactLine(Model):
    """A fact as one line of a report."""

    fact_id: str
    content: str
    uses: int = 0


def fact_line(fact: Fact) -> FactLine:
    return FactLine(fact_id=fact.id, content=fact.content, uses=fact.uses)


def clean_line(text: str) -> str:
    """A line a person or an engine wrote, as a fact's content: redacted, one line (not
    clipped: a person's line is held to ``max_fact_chars``, an engine's to :func:`clip_learned`)."""
    return normalize_space(redact(text or ""))


# what no engine takes back on its own word: corrections and constraints, and every line a
# person stored (remember) or added by hand (MEMORY.md)
PROTECTED_CATEGORIES = ("correction", "constraint")


def protected(fact: Fact) -> bool:
    """A fact tidy and the dream keep, whatever an engine proposes (a newer value that
    contradicts it still takes its place)."""
    return fact.category in PROTECTED_CATEGORIES or fact.provenance.origin in ("manual", "sync")


def clip_learned(content: str) -> str:
    """A line an engine wrote, at most :data:`MAX_FACT_CHARS` (an ellipsis says it was cut)."""
    return content if len(content) <= MAX_FACT_CHARS else content[: MAX_FACT_CHARS - 1].rstrip() + "…"


def unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def absorb(fact: Fact, facts: Iterable[Fact] = (), notes: Iterable[Note] = ()) -> None:
    """``fact`` now also stands on these facts and notes: their provenance joins its own."""
    facts, notes = [f for f in facts if f.id != fact.id], list(notes)
    p = fact.provenance
    p.facts = unique([*p.facts, *(f.id for f in facts), *(i for f in facts for i in f.provenance.facts)])
    p.notes = unique([*p.notes, *(n.id for n in notes), *(i for f in facts for i in f.provenance.notes)])
    p.episodes = unique(
        [*p.episodes, *(e for f in facts for e in f.provenance.episodes), *(e for n in notes for e in n.episodes)]
    )
    p.source_ids = unique(
        [*p.source_ids, *(s for f in facts for s in f.provenance.source_ids), *(s for n in notes for s in n.source_ids)]
    )
    p.episodes_left_out += sum(f.provenance.episodes_left_out for f in facts)
    p.sources_left_out += sum(f.provenance.sources_left_out for f in facts)
    p.bound()


class LiveTexts:
    """A user's live facts as the judge reads them, in the order they were stored, indexed by
    :func:`~reverie.claims.judge_keys`: a new fact meets only those it could duplicate or
    contradict, the same ones in the same order as a scan of all of them would judge."""

    def __init__(self, texts: Iterable[FactText] = ()):
        self._texts: dict[str, FactText] = {}
        self._order: dict[str, int] = {}  # a fact keeps its place when it is written again
        self._index: dict[str, set[str]] = {}
        for text in texts:
            self.put(text)

    def __len__(self) -> int:
        return len(self._texts)

    def put(self, text: FactText) -> None:
        self.drop(text.id)
        self._texts[text.id] = text
        self._order.setdefault(text.id, len(self._order))
        for key in judge_keys(text.content):
            self._index.setdefault(key, set()).add(text.id)

    def drop(self, fact_id: str) -> None:
        old = self._texts.pop(fact_id, None)
        if old is not None:
            for key in judge_keys(old.content):
                self._index[key].discard(fact_id)

    def related(self, content: str) -> list[FactText]:
        """The live facts that share a judge key with ``content``, oldest first."""
        found: set[str] = set()
        for key in judge_keys(content):
            found |= self._index.get(key, set())
        return [self._texts[i] for i in sorted(found, key=self._order.__getitem__)]


class FactWriter:
    """Writes facts and knowledge for every line (call inside the caller's transaction)."""

    def __init__(self, store: Store, settings: Settings):
        self.store = store
        self.settings = settings
        # per thread, while a batch is judged (:meth:`judging`): user -> their live facts,
        # or None for a user with more than FULL_SCAN_FACTS (the judge reads the store)
        self._batch = threading.local()

    @contextmanager
    def judging(self) -> Iterator[None]:
        """Within this block (one transaction that writes many facts through this writer, as
        a learning batch does) the judge keeps a user's few live facts in memory instead of
        reading all of them again for every new fact. Every fact write inside must go
        through this writer."""
        outer = getattr(self._batch, "live", None)
        self._batch.live = {}
        try:
            yield
        finally:
            self._batch.live = outer

    def _kept(self) -> dict[str, LiveTexts | None] | None:
        """This thread's batch (:meth:`judging`), or None outside one."""
        return getattr(self._batch, "live", None)

    def _live(self, user: str) -> LiveTexts | None:
        """The user's live facts kept for this batch, or None (no batch, or too many facts)."""
        batch = self._kept()
        if batch is None:
            return None
        if user not in batch:
            few = self.store.count_facts(user, up_to=FULL_SCAN_FACTS + 1) <= FULL_SCAN_FACTS
            batch[user] = LiveTexts(self.store.fact_texts(user)) if few else None
        return batch[user]

    def _put(self, fact: Fact) -> None:
        """Store ``fact``, and keep the batch's live facts in step."""
        self.store.put_fact(fact)
        batch = self._kept()
        if batch is None or (live := batch.get(fact.user)) is None:
            return
        if fact.status == "archived":
            live.drop(fact.id)
        else:
            live.put(FactText(fact.id, fact.content, fact.category, fact.agent))
            if len(live) > FULL_SCAN_FACTS:
                batch[fact.user] = None  # from now on the judge reads related facts from the store

    def add_fact(
        self, writer: TagWriter, fact: Fact, tags: list[str], *, said_at: datetime | None = None, use: bool = True,
    ) -> Fact:
        """Add a fact, unless it repeats one (then that one is reinforced and returned; with
        ``use=False`` returned as it is: a line a person wrote again in MEMORY.md is no use of
        the fact); a fact it contradicts is archived with a supersedes link (newest wins). ``said_at``:
        when what it rests on was said (its episodes' time). A fact learned from history
        older than what a contradicting fact rests on is the one archived, its newer rival
        the successor: the order of storing does not make an older value the newer."""
        conflicts: list[str] = []
        for old in self.comparable(fact):
            if old.agent != fact.agent and not (old.agent is None and fact.agent is not None):
                continue  # another agent's fact, or an agent's fact and a new one for every agent
            found = fact_relation(fact.content, old.content, self.settings.duplicate_jaccard)
            if found == "duplicate":
                twin = self.store.get_fact(old.id)
                if twin is not None:
                    self._supersede(conflicts, fact)
                    if not use:
                        return twin
                    return self.reinforce_fact(twin, fact.provenance.episodes, fact.updated_at,
                                               sources=fact.provenance.source_ids)
            # (an agent's new value does not take one every agent sees; a correction takes back
            # what it contradicts whatever that was filed under)
            if found == "conflict" and old.agent == fact.agent and fact.category in (old.category, "correction"):
                conflicts.append(old.id)
        stale = self.store.get_facts(conflicts) if conflicts else {}
        newer = self._said_later(list(stale.values()), said_at) if said_at is not None and stale else None
        if newer is not None:
            self.index_fact(fact, tags, writer=writer)
            self.archive_fact(fact, "contradicted by a newer fact", newer, fact.updated_at)
            return fact
        self._supersede(conflicts, fact, stale)
        self.index_fact(fact, tags, writer=writer)
        return fact

    def _said_later(self, facts: list[Fact], said_at: datetime) -> Fact | None:
        """Of ``facts``, the one said last, if that was after ``said_at``."""
        said = self.said_times(facts)
        latest = max(facts, key=lambda f: said[f.id], default=None)
        return latest if latest is not None and said[latest.id] > as_utc(said_at) else None

    def said_times(self, facts: Iterable[Fact]) -> dict[str, datetime]:
        """When what each fact rests on was said: its episodes' latest time, else when it was
        stored (a line a person wrote)."""
        facts = list(facts)
        episodes = self.store.get_episodes({e for f in facts for e in f.provenance.episodes})
        return {f.id: max((as_utc(episodes[e].occurred_at) for e in f.provenance.episodes if e in episodes),
                          default=as_utc(f.created_at)) for f in facts}

    def _supersede(self, ids: list[str], successor: Fact, stale: Mapping[str, Fact] | None = None) -> None:
        """Archive the facts ``successor`` contradicts, in the order the judge met them
        (``stale``: those facts, when the caller has read them)."""
        if stale is None:
            stale = self.store.get_facts(ids)
        gone = []
        for fact_id in ids:
            if fact_id in stale and not keyed(stale[fact_id]):  # an application's keyed item is its to replace
                self.archive_fact(stale[fact_id], "contradicted by a newer fact", successor, successor.updated_at)
                gone.append(stale[fact_id].content)
        # nor does the profile say it any more
        drop_outdated_parts(self.store, successor.user, gone=gone, newer=[], duplicate_at=self.settings.duplicate_jaccard,
                            now=successor.updated_at)

    def comparable(self, fact: Fact) -> list[FactText]:
        """The stored facts the judge reads a new fact against, oldest first: every live fact
        while a user has few (within :meth:`judging`, only those that share a judge key with
        it, from memory), else the newest that share a search term with it (an index read:
        the judge finds neither a duplicate nor a conflict without a shared word). Only their
        texts are read; a fact is built whole only when the judge picks it."""
        live = self._live(fact.user)
        if live is not None:
            return live.related(fact.content)
        if self.store.count_facts(fact.user, up_to=FULL_SCAN_FACTS + 1) <= FULL_SCAN_FACTS:
            return self.store.fact_texts(fact.user)
        return self.store.fact_texts(fact.user, terms(fact.content), RELATED_FACTS)

    def reinforce_fact(self, fact: Fact, episodes: list[str], now: datetime, *, sources: Sequence[str] = ()) -> Fact:
        """[Nx] + 1, remembering which episodes (and turns: ``sources``) said it again."""
        fact.uses += 1
        fact.last_used_at = fact.updated_at = now
        fact.provenance.episodes = list(dict.fromkeys(fact.provenance.episodes + episodes))
        fact.provenance.source_ids = list(dict.fromkeys([*fact.provenance.source_ids, *sources]))
        fact.provenance.bound()
        self._put(fact)
        return fact

    def archive_fact(self, fact: Fact, reason: str, successor: Fact | None, now: datetime) -> None:
        """Archive (never delete); a successor gets the supersedes link."""
        if fact.status != "archived":
            fact.archived_from = fact.status
        # a reason may quote an engine or a person: it is stored, so it is redacted
        fact.status, fact.archived_reason, fact.updated_at = "archived", redact(reason), now
        if successor is not None:
            fact.superseded_by = successor.id
            successor.supersedes = fact.id
            self._put(successor)
        self._put(fact)

    def fold(self, drop: Fact, keep: Fact, reason: str, journal: Journal, now: datetime) -> None:
        """``drop`` says what ``keep`` says: archive it with a link; ``keep`` takes its provenance,
        its tags and the higher ``[Nx]``."""
        journal.watch([drop, keep])
        keep.uses = max(keep.uses, drop.uses)
        keep.confidence = max(keep.confidence, drop.confidence)
        absorb(keep, [drop])
        self.archive_fact(drop, reason, keep, now)
        self.index_fact(keep, unique([*keep.tags, *drop.tags]))

    def index_fact(self, fact: Fact, tags: list[str], *, writer: TagWriter | None = None) -> None:
        """Store a fact with its tags."""
        writer = writer or TagWriter(self.store, fact.user)
        fact.tags = writer.ensure(tags) if tags else fact.tags
        self._put(fact)
        self.store.set_item_tags(fact.user, "fact", fact.id, {t: 1.0 for t in fact.tags})

    def index_knowledge(self, doc: KnowledgeDoc) -> None:
        writer = TagWriter(self.store, doc.user)
        doc.tags = writer.ensure(doc.tags)
        self.store.put_knowledge(doc)
        self.store.set_item_tags(doc.user, "knowledge", doc.id, {t: 1.0 for t in doc.tags})

    def enforce_capacity(self, user: str, now: datetime) -> None:
        """Keep the consolidated facts within ``fact_capacity`` by archiving the lowest-ranked
        *learned* ones. Facts a person vouched for (remember, save_memory, import, MEMORY.md
        edits) and corrections are never evicted; every eviction is journaled (undo) and
        counted for ``health``."""
        consolidated = self.store.list_facts(user, status="consolidated")
        excess = len(consolidated) - self.settings.fact_capacity
        if excess <= 0:
            return
        evictable = sorted((f for f in consolidated if evictable_by_capacity(f)), key=lambda f: fact_rank(f, now))
        chosen = evictable[:excess]
        if not chosen:
            return
        journal = Journal(user=user, action="capacity")
        journal.watch(chosen)
        for fact in chosen:
            self.archive_fact(fact, OVER_CAPACITY, None, now)
        journal.commit(self.store)
        record = capacity_record(self.store, user)
        record.update(evicted=record.get("evicted", 0) + len(chosen), last_at=now.isoformat(), last_journal=journal.id,
                      last_count=len(chosen))
        self.store.set_meta(CAPACITY_META.format(user=user), json.dumps(record))
        log.warning("%s: %d learned facts over fact_capacity=%d archived (undo: reverie undo %s)",
                    user, len(chosen), self.settings.fact_capacity, journal.id)
