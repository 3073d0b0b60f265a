"""The learning line: the only writer of memory content.

Completed episodes enter a debounced queue keyed by (user, agent, thread).
When a key comes due (or on ``flush()`` / exit) its episodes are summarized,
tagged and mined for facts and profile updates by the configured engines. The
engine calls happen first, outside any transaction; their answers are then
validated, redacted and applied in one transaction. An engine failure changes
nothing: the batch stays unlearned and is retried later (and at start-up).
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Iterable

from reverie.engines.base import (
    EpisodeSummary,
    ExtractRequest,
    Extraction,
    FactRef,
    GovernRequest,
    SummarizeRequest,
    TagDecisions,
    TagInfo,
)
from reverie.errors import EngineError
from reverie.models import (
    AREAS,
    PROFILE_SECTIONS,
    Episode,
    Fact,
    KnowledgeDoc,
    Message,
    Note,
    Provenance,
    utcnow,
)
from reverie.claims import fact_relation
from reverie.notes import mirror_notes
from reverie.inputs import normalize_category
from reverie.redact import redact
from reverie.journal import Journal
from reverie.store.base import EpisodeRef, Store
from reverie.tags import TagWriter, normalize_tag
from reverie.text import normalize_space, preferred_language, token_set

if TYPE_CHECKING:
    from reverie.memory import Memory

log = logging.getLogger("reverie.learn")

Key = tuple[str, str | None, str]

TRIVIAL = re.compile(
    r"^\s*(ok(ay)?|k|thanks?( you)?|thx|ty|cool|nice|great|got it|sure|yes|yep|no|nope|hi|hello|hey|bye|"
    r"好的?|好|嗯+|哦+|谢谢|多谢|收到|行|可以|对|是的|拜拜|你好)\s*[.!?。！？~～]*\s*$",
    re.IGNORECASE,
)
TEMPORARY = re.compile(
    r"\b(right now|currently running|at the moment|is (up|down|running) on|on port \d+|port \d{2,5}\b|"
    r"for now|this morning|tonight|today)\b|现在在|目前在|刚才|今天|端口",
    re.IGNORECASE,
)
MAX_FACT_CHARS = 160
AGENT_ROLES = frozenset({"assistant", "agent", "bot", "system", "tool"})
RETRY_BASE_SECONDS = 60.0
RETRY_MAX_SECONDS = 3600.0


def is_trivial(text: str) -> bool:
    return bool(TRIVIAL.match(text)) or not token_set(text)


def clip(text: str, limit: int) -> str:
    """Very long messages keep their head and tail (where the point usually is)."""
    if len(text) <= limit:
        return text
    half = max(1, (limit - 5) // 2)
    return f"{text[:half]} […] {text[-half:]}"


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


def attribute(text: str, messages: list[Message], *, bags: list[frozenset[str]] | None = None) -> list[int]:
    """Which messages a derived line (summary, overview, fact) was drawn from: each of its
    sentences goes to the message that holds at least half of its words, if any."""
    # a "Speaker:" label carries the speaker's name, which is no evidence of where a sentence came from
    names = frozenset(t for m in messages if m.speaker for t in token_set(m.speaker))
    bags = bags if bags is not None else [token_set(m.content) for m in messages]
    found: set[int] = set()
    for sentence in _SENTENCE.split(text):
        words = token_set(sentence) - names
        if not words:
            continue
        best = max(range(len(bags)), key=lambda i: len(words & bags[i]))
        if len(words & bags[best]) * 2 >= len(words):
            found.add(best)
    return sorted(found)


OVER_CAPACITY = "over capacity"
CAPACITY_META = "capacity:{user}"
# origins of facts a person vouched for: never evicted by capacity
VOUCHED = frozenset({"manual", "import", "sync"})


def evictable_by_capacity(fact: Fact) -> bool:
    return fact.provenance.origin not in VOUCHED and fact.category != "correction"


def capacity_record(store: Store, user: str) -> dict:
    """What capacity evicted for ``user`` so far: evicted (total), last_at, last_count, last_journal."""
    raw = store.get_meta(CAPACITY_META.format(user=user))
    return json.loads(raw) if raw else {}


def fact_rank(fact: Fact, now: datetime) -> float:
    """Capacity ranking: confidence, uses, recency (corrections are never evicted)."""
    age_days = max(0.0, (now - (fact.last_used_at or fact.updated_at)).total_seconds() / 86400)
    return fact.confidence + 0.3 * math.log1p(fact.uses) + 0.5 * math.exp(-0.05 * age_days)


@dataclass
class _Pending:
    ids: dict[str, None] = field(default_factory=dict)  # an ordered set
    due: float = 0.0
    attempts: int = 0


@dataclass
class _Plan:
    """Everything the engines said about one batch, before it is applied."""

    summaries: dict[str, EpisodeSummary]
    extraction: Extraction
    decisions: TagDecisions
    language: str


class Learner:
    def __init__(self, memory: "Memory", *, background: bool = True):
        self.memory = memory
        self.store = memory.store
        self.settings = memory.settings
        self._queue: dict[Key, _Pending] = {}
        self._cond = threading.Condition()
        self._busy = threading.Lock()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.background = background
        if background:
            self._thread = threading.Thread(target=self._run, name="reverie-learner", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------ queue
    def enqueue(self, episodes: Iterable[Episode | EpisodeRef], *, delay: float | None = None) -> None:
        due = time.monotonic() + (self.settings.debounce_seconds if delay is None else delay)
        with self._cond:
            for ep in episodes:
                pending = self._queue.setdefault((ep.user, ep.agent, ep.thread), _Pending())
                pending.ids.setdefault(ep.id)
                pending.due = max(pending.due, due) if pending.attempts else due
            self._cond.notify()

    def requeue_unlearned(self, user: str | None = None) -> None:
        self.enqueue(self.store.unlearned_episodes(limit=100000, user=user), delay=0.0)

    def pending(self) -> int:
        with self._cond:
            return sum(len(p.ids) for p in self._queue.values())

    def flush(self, *, user: str | None = None) -> int:
        """Learn now from everything waiting: the queue and any completed episode never
        learned from (a crashed process's, or one whose engine call failed); returns
        how many episodes were learned."""
        self.requeue_unlearned(user)
        return self._drain(user)

    def _drain(self, user: str | None = None) -> int:
        with self._cond:
            keys = [k for k in self._queue if user is None or k[0] == user]
        return sum(self._process(k, force=True) for k in keys)

    def stop(self, *, drain: bool = True) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        if drain:
            self._drain()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                now = time.monotonic()
                due = [k for k, p in self._queue.items() if p.due <= now]
                if not due:
                    wait = min((p.due for p in self._queue.values()), default=now + 60) - now
                    self._cond.wait(timeout=max(0.05, min(wait, 60)))
                    continue
            for key in due:
                try:
                    self._process(key)
                except Exception:  # the worker must survive anything; the batch stays queued
                    log.exception("learning failed for %s", key)

    def _process(self, key: Key, *, force: bool = False) -> int:
        with self._busy:
            with self._cond:
                pending = self._queue.get(key)
                if pending is None or (not force and pending.due > time.monotonic()):
                    return 0
                del self._queue[key]
            episodes = [
                ep
                for ep in self.store.get_episodes(pending.ids).values()
                if ep.status == "completed" and not ep.learned
            ]
            episodes.sort(key=lambda e: (e.occurred_at, e.created_at))
            learned = 0
            for start, chunk in _chunks(episodes, self.memory.engines.extract.batch_chars):
                try:
                    self.learn(chunk)
                except EngineError as exc:
                    self._retry_later(key, pending, episodes[start:], exc)
                    break
                learned += len(chunk)
            return learned

    def _retry_later(self, key: Key, pending: _Pending, episodes: list[Episode], exc: Exception) -> None:
        log.warning("engine failed for %d episodes of %s, will retry: %s", len(episodes), key, exc)
        self.store.mark_learned([e.id for e in episodes], learned=False, error=str(exc)[:500])
        pending.attempts += 1
        delay = min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** (pending.attempts - 1))
        with self._cond:
            current = self._queue.setdefault(key, _Pending())
            current.ids = dict.fromkeys([*(e.id for e in episodes), *current.ids])
            current.attempts = pending.attempts
            current.due = time.monotonic() + delay
            self._cond.notify()

    # ------------------------------------------------------------ learning one batch
    def learn(self, episodes: list[Episode]) -> None:
        plan = self._plan(episodes)
        user = episodes[0].user
        with self.store.transaction():
            # the engines took their time: apply to the episodes as they are now, so that
            # feedback, archiving or usage written meanwhile is kept
            current = self.store.get_episodes(e.id for e in episodes)
            episodes = [current[e.id] for e in episodes if e.id in current and not current[e.id].learned]
            if not episodes:
                return
            writer = TagWriter(self.store, user)
            self._apply_summaries(writer, episodes, plan)
            self._apply_tag_decisions(writer, plan.decisions)
            self._apply_extraction(writer, user, episodes, plan.extraction)
            self._append_notes(user, episodes)
            self.store.mark_learned([e.id for e in episodes])
        mirror_notes(self.store, self.memory.files, user, {e.occurred_at.date().isoformat() for e in episodes})

    def _plan(self, episodes: list[Episode]) -> _Plan:
        limit = self.settings.max_message_chars
        engines = self.memory.engines
        text = " ".join(m.content for e in episodes for m in e.messages)
        language = preferred_language(text)
        summaries: dict[str, EpisodeSummary] = {}
        messages: list[Message] = []
        owners: list[str] = []
        for ep in episodes:
            clipped = [
                m if len(m.content) <= limit else m.model_copy(update={"content": clip(m.content, limit)})
                for m in ep.messages
            ]
            if all(is_trivial(m.content) for m in clipped):
                summaries[ep.id] = EpisodeSummary(summary=normalize_space(ep.user_text)[:200])
                continue
            summaries[ep.id] = engines.summarize.summarize(SummarizeRequest(messages=clipped, language=language))
            messages += clipped
            owners += [ep.id] * len(clipped)
        user = episodes[0].user
        extraction = Extraction()
        if messages:
            facts = self.store.list_facts(user)
            extraction = engines.extract.extract(
                ExtractRequest(
                    messages=messages,
                    episode_ids=owners,
                    profile=self.store.get_profile(user),
                    facts=[_ref(f) for f in facts[-200:]],
                    language=language,
                    user_speakers=self._user_speakers(episodes),
                )
            )
        # the tags that will be written: the episodes' and the new facts' (a conversation-level
        # tag an engine may add lands on no item, so it is not governed either)
        names = {normalize_tag(t) for s in summaries.values() for t in s.tags}
        names |= {normalize_tag(t) for f in extraction.new_facts for t in f.tags}
        names.discard("")
        decisions = TagDecisions()
        known = self.store.get_tags(user, names)
        fresh = [n for n in names if n not in known or known[n].status == "unexamined"]
        if fresh:
            active = self.store.list_tags(user, status="active")
            decisions = engines.govern_tags.govern_tags(
                GovernRequest(
                    candidates=[TagInfo(name=n) for n in sorted(fresh)],
                    existing=[TagInfo(name=t.name, status=t.status) for t in active],
                )
            )
        return _Plan(summaries, extraction, decisions, language)

    def _user_speakers(self, episodes: list[Episode]) -> list[str]:
        """In an ingested multi-speaker talk every named speaker may say something about
        themselves; in a turn only the user's messages count."""
        return sorted({m.speaker for e in episodes for m in e.messages if m.speaker})

    def _apply_summaries(self, writer: TagWriter, episodes: list[Episode], plan: _Plan) -> None:
        live = writer.ensure_map([t for s in plan.summaries.values() for t in s.tags])
        for ep in episodes:
            s = plan.summaries[ep.id]
            ep.summary = redact(normalize_space(s.summary))
            ep.overview = redact(normalize_space(s.overview))
            bags = [token_set(m.content) for m in ep.messages]
            ep.summary_from = attribute(ep.summary, ep.messages, bags=bags)
            ep.overview_from = (
                ep.summary_from if ep.overview == ep.summary else attribute(ep.overview, ep.messages, bags=bags)
            )
            if s.scene and not ep.scene:
                ep.scene, ep.sub_scene = s.scene, s.sub_scene
            ep.tags = list(dict.fromkeys(live[n] for n in map(normalize_tag, s.tags) if n in live))
            ep.learned = True
            self.store.put_episode(ep, reindex=False)
            self.store.set_item_tags(ep.user, "episode", ep.id, {t: 1.0 for t in ep.tags})

    def _apply_tag_decisions(self, writer: TagWriter, decisions: TagDecisions) -> None:
        tags = self.store.get_tags(writer.user, [normalize_tag(n) for n in decisions.activate + decisions.deprecate])
        for name in decisions.activate:
            tag = tags.get(normalize_tag(name))
            if tag is not None and tag.status == "unexamined":
                writer.set_status(tag, "active")
        for name in decisions.deprecate:
            tag = tags.get(normalize_tag(name))
            if tag is not None and tag.status in ("unexamined", "active"):
                writer.set_status(tag, "deprecated")
        for rel in decisions.relations:
            writer.relate(rel.source, rel.target, rel.level)

    def _apply_extraction(self, writer: TagWriter, user: str, episodes: list[Episode], ex: Extraction) -> None:
        now = utcnow()
        episode_ids = {e.id for e in episodes}
        by_id = {e.id: e for e in episodes}
        for group, sections in (("user", ex.user), ("history", ex.history)):
            for key, update in sections.items():
                name = f"{group}.{key}"
                summary = redact(normalize_space(update.summary))
                if name in PROFILE_SECTIONS and update.should_update and summary:
                    self.store.put_profile_section(user, name, summary, now)
        facts = self.store.get_facts(ex.facts_to_reinforce)
        for fact in facts.values():
            if fact.user == user and fact.status != "archived":
                self.reinforce_fact(fact, list(episode_ids), now)
        removed = []
        for removal in ex.facts_to_remove:
            fact = self.store.get_fact(removal.id)
            if fact is not None and fact.user == user and fact.status != "archived":
                removed.append((fact, removal.reason))
        added: list[Fact] = []
        for new in ex.new_facts:
            if new.confidence < self.settings.fact_confidence_threshold:
                continue
            content = normalize_space(redact(new.content))
            if not content or TEMPORARY.search(content) or is_trivial(content):
                continue
            if len(content) > MAX_FACT_CHARS:
                content = content[: MAX_FACT_CHARS - 1].rstrip() + "…"
            sources = [s for s in new.sources if s in episode_ids] or list(episode_ids)
            content = _name_the_speaker(content, [by_id[e] for e in sources])
            category, original = normalize_category(new.category)
            fact = Fact(
                user=user,
                agent=episodes[0].agent,
                content=content,
                category=category,
                original_category=original,
                area=(new.area if new.area in AREAS else "General") if category == "preference" else None,
                confidence=min(1.0, max(0.0, float(new.confidence))),
                status="pending",
                provenance=Provenance(
                    origin="learned",
                    episodes=sources,
                    source_ids=_fact_sources(content, [by_id[e] for e in sources]),
                ),
                created_at=now,
                updated_at=now,
            )
            if self.add_fact(writer, fact, new.tags) is fact:
                added.append(fact)
        for fact, reason in removed:
            successor = next((f for f in added if f.category == fact.category), added[0] if added else None)
            self.archive_fact(fact, reason or "removed by the learning line", successor, now)
        self._enforce_capacity(user, now)

    def add_fact(self, writer: TagWriter, fact: Fact, tags: list[str]) -> Fact:
        """Add a fact, unless it repeats one (then that one is reinforced and returned);
        a fact it contradicts is archived with a supersedes link (newest wins)."""
        for old in self.store.list_facts(fact.user):
            relation = fact_relation(fact.content, old.content, self.settings.duplicate_jaccard)
            if relation == "duplicate":
                return self.reinforce_fact(old, fact.provenance.episodes, fact.updated_at)
            if relation == "conflict" and old.category == fact.category:
                self.archive_fact(old, "contradicted by a newer fact", fact, fact.updated_at)
        self.index_fact(fact, tags, writer=writer)
        return fact

    def reinforce_fact(self, fact: Fact, episodes: list[str], now: datetime) -> Fact:
        """[Nx] + 1, remembering which episodes said it again (inside the caller's transaction)."""
        fact.uses += 1
        fact.last_used_at = fact.updated_at = now
        fact.provenance.episodes = list(dict.fromkeys(fact.provenance.episodes + episodes))
        self.store.put_fact(fact)
        return fact

    def archive_fact(self, fact: Fact, reason: str, successor: Fact | None, now: datetime) -> None:
        """Archive (never delete); a successor gets the supersedes link (inside the caller's transaction)."""
        fact.status, fact.archived_reason, fact.updated_at = "archived", reason, now
        if successor is not None:
            fact.superseded_by = successor.id
            successor.supersedes = fact.id
            self.store.put_fact(successor)
        self.store.put_fact(fact)

    def _enforce_capacity(self, user: str, now: datetime) -> None:
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

    def index_fact(self, fact: Fact, tags: list[str], *, writer: TagWriter | None = None) -> None:
        """Store a fact with its tags (inside the caller's transaction)."""
        writer = writer or TagWriter(self.store, fact.user)
        fact.tags = writer.ensure(tags) if tags else fact.tags
        self.store.put_fact(fact)
        self.store.set_item_tags(fact.user, "fact", fact.id, {t: 1.0 for t in fact.tags})

    def index_knowledge(self, doc: KnowledgeDoc) -> None:
        writer = TagWriter(self.store, doc.user)
        doc.tags = writer.ensure(doc.tags)
        self.store.put_knowledge(doc)
        self.store.set_item_tags(doc.user, "knowledge", doc.id, {t: 1.0 for t in doc.tags})

    def _append_notes(self, user: str, episodes: list[Episode]) -> None:
        for ep in episodes:
            if not ep.summary or is_trivial(ep.user_text):
                continue
            content, drawn = ep.summary, ep.summary_from
            first = next((i for i, m in enumerate(ep.messages) if m.role not in AGENT_ROLES), None)
            if first is not None and drawn and all(ep.messages[i].role in AGENT_ROLES for i in drawn):
                # the day's notes tell what the user said and did, not the agent's answer
                message = ep.messages[first]
                content = f"{message.speaker or 'User'}: {clip(normalize_space(message.content), 240)}"
                drawn = [first]
            self.store.put_note(
                Note(
                    user=user,
                    date=ep.occurred_at.date().isoformat(),
                    content=content,
                    episodes=[ep.id],
                    source_ids=ep.sources_of(drawn),
                )
            )


def _name_the_speaker(content: str, episodes: list[Episode]) -> str:
    """In a talk between several named people, a fact says whose it is ("Melanie: loves
    camping"); with one speaker, or unnamed roles, it stays as it is."""
    messages = [m for e in episodes for m in e.messages]
    speakers = {m.speaker for m in messages if m.speaker}
    if len(speakers) < 2:
        return content
    drawn = attribute(content, messages)
    speaker = messages[drawn[0]].speaker if drawn else None
    if not speaker or speaker.casefold() in content.casefold():
        return content
    return f"{speaker}: {content}"


def _fact_sources(content: str, episodes: list[Episode]) -> list[str]:
    """The turns a learned fact rests on: those it was drawn from, else its episodes' turns."""
    drawn = [sid for e in episodes for sid in e.sources_of(attribute(content, e.messages))]
    return drawn or [sid for e in episodes for sid in e.source_ids]


def _chunks(episodes: list[Episode], max_chars: int | None):
    """(start index, episodes) batches of at most ``max_chars`` of text each (one episode at
    least), so that a long ingested talk reaches a model in prompts it can read."""
    if max_chars is None:
        yield 0, episodes
        return
    start, size = 0, 0
    for i, ep in enumerate(episodes):
        length = sum(len(m.content) for m in ep.messages)
        if i > start and size + length > max_chars:
            yield start, episodes[start:i]
            start, size = i, 0
        size += length
    if start < len(episodes):
        yield start, episodes[start:]


def _ref(fact: Fact) -> FactRef:
    return FactRef(
        id=fact.id, content=fact.content, category=fact.category, confidence=fact.confidence,
        uses=fact.uses, status=fact.status, updated_at=fact.updated_at,
    )
