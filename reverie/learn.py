"""The learning line: the only writer of memory content.

Completed episodes enter a debounced queue keyed by (user, agent, thread).
When a key comes due (or on ``flush()`` / exit) its episodes are summarized,
tagged and mined for facts and profile updates by the configured engines. The
engine calls happen first, outside any transaction; their answers are then
validated, redacted and applied in one transaction. An engine failure changes
nothing: the batch stays unlearned and is retried later (and at start-up).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Hashable, Iterable, Iterator

from reverie.claims import is_temporary
from reverie.context import Context
from reverie.engines.base import (
    EpisodeSummary,
    Extraction,
    ExtractRequest,
    FactRef,
    GovernRequest,
    NewFact,
    SummarizeRequest,
    TagDecisions,
    TagInfo,
)
from reverie.errors import EngineError, StoreBusy
from reverie.facts import clip_learned, keyed, note_skipped
from reverie.heap import paused_gc
from reverie.inputs import fit_label, normalize_category
from reverie.messages import clip, is_trivial
from reverie.models import (
    AGENT_ROLES,
    AREAS,
    PROFILE_SECTIONS,
    Episode,
    Fact,
    Message,
    Provenance,
    as_utc,
    speaks_for_profile,
    utcnow,
)
from reverie.notes import mirror_notes, put_episode_notes
from reverie.observe import LEARNING_FAILURES, watch_queue
from reverie.profiles import drop_outdated_parts, fit_section, note_trimmed, rewrite_new_parts
from reverie.redact import redact
from reverie.store.base import EpisodeRef
from reverie.tagnames import NEIGHBOURS_PER_KEY, TagNeighbours
from reverie.tags import TagWriter, normalize_tag
from reverie.text import normalize_space, preferred_language, token_set
from reverie.timerefs import anchored
from reverie.unanswered import close_unanswered

log = logging.getLogger("reverie.learn")

Key = tuple[str, str | None, str]

# episodes taken up per poll of a learning process that serves several workers
POLL_BATCH = 5000
# the newest live facts an engine sees beside a batch (to reinforce or contradict them)
ENGINE_FACTS = 200
LOAD_PAGE = 1000  # queued episodes read from the store at a time
RETRY_BASE_SECONDS = 60.0
RETRY_MAX_SECONDS = 3600.0
# a batch the store turned away as busy (another writer held it) is tried again this much later
BUSY_RETRY_SECONDS = 5.0
# what an engine's answer may put on one item, whatever it says: a summary is a line, an
# overview a few sentences (both feed the day's notes and every dream's prompt), a few tags
MAX_SUMMARY_CHARS = 1000
MAX_OVERVIEW_CHARS = 4000
MAX_ITEM_TAGS = 16
# an engine's removal of a fact with no new fact in its place, in a batch that does not talk
# about it: refused, and counted with the proposed facts not kept
REMOVAL_REFUSED = "removal of a fact the conversation does not talk about"
SAID_LATER = "removal of a fact said after the conversation"


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


def attribute(text: str, messages: list[Message], *, bags: list[frozenset[str]] | None = None) -> list[int]:
    """Which messages a derived line (summary, overview, fact) was drawn from: each of its
    sentences goes to the message that holds at least half of its words, if any."""
    # a "Speaker:" label carries the speaker's name, which is no evidence of where a sentence came from
    names = frozenset(t for m in messages if m.speaker for t in token_set(m.speaker))
    bags = bags if bags is not None else [token_set(m.content) for m in messages]
    if not bags:  # an imported episode may hold its text without its messages
        return []
    found: set[int] = set()
    for sentence in _SENTENCE.split(text):
        words = token_set(sentence) - names
        if not words:
            continue
        best = max(range(len(bags)), key=lambda i: len(words & bags[i]))
        if len(words & bags[best]) * 2 >= len(words):
            found.add(best)
    return sorted(found)


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
    """The debounced learning queue and the learning of one batch of episodes."""

    def __init__(self, ctx: Context, *, background: bool = True, queue: bool = True, poll: float | None = None):
        """``background``: a thread learns what comes due. ``queue=False``: this process never
        learns on its own (a ``reverie serve`` worker): completed episodes wait in the store
        for the process that polls. ``poll``: every that many seconds, take up the episodes
        other processes completed (the one learning process of ``reverie serve --workers``)."""
        self.ctx = ctx
        self.store = ctx.store
        self.settings = ctx.settings
        self.facts = ctx.facts
        self._tag_index: dict[str, TagNeighbours] = {}
        watch_queue(self)
        self._queue: dict[Key, _Pending] = {}
        self._cond = threading.Condition()
        # one batch of a user at a time (each plans on what the one before it wrote); one
        # batch applied at a time, whoever's
        self._user_locks: dict[str, threading.Lock] = {}
        self._apply_lock = threading.Lock()
        # users whose batch the pool has (see _dispatch)
        self._pool: ThreadPoolExecutor | None = None
        self._in_flight: set[str] = set()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.background = background
        self.queue = queue
        self.poll = poll
        self._polled = time.monotonic()
        self._swept = float("-inf")
        # how often the background loop looks for turns that got no reply in time
        self._sweep_every = min(60.0, max(0.05, self.settings.reply_timeout_seconds / 4))
        if background:
            self._thread = threading.Thread(target=self._run, name="reverie-learner", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------ queue
    def enqueue(self, episodes: Iterable[Episode | EpisodeRef], *, delay: float | None = None) -> None:
        if not self.queue:
            return
        due = time.monotonic() + (self.settings.debounce_seconds if delay is None else delay)
        with self._cond:
            for ep in episodes:
                pending = self._queue.setdefault((ep.user, ep.agent, ep.thread), _Pending())
                pending.ids.setdefault(ep.id)
                pending.due = max(pending.due, due) if pending.attempts else due
            self._cond.notify()

    def forget_user(self, user: str) -> None:
        """Drop what is queued for ``user`` (their memory is being deleted)."""
        with self._cond:
            for key in [k for k in self._queue if k[0] == user]:
                del self._queue[key]
        self._tag_index.pop(user, None)

    def requeue_unlearned(self, user: str | None = None) -> None:
        self.enqueue(self.store.unlearned_episodes(limit=100000, user=user), delay=0.0)

    def pending(self) -> int:
        with self._cond:
            return sum(len(p.ids) for p in self._queue.values())

    def close_unanswered(self, *, now: float | None = None) -> int:
        """Close the turns that got no reply within ``reply_timeout_seconds`` and queue them
        for learning (:mod:`reverie.unanswered`); at most once every ``_sweep_every`` seconds
        unless ``now`` is None (a flush, start-up). A process that does not learn closes none."""
        timeout = self.settings.reply_timeout_seconds
        if not self.queue or timeout <= 0:
            return 0
        with self._cond:
            if now is not None and now - self._swept < self._sweep_every:
                return 0
            self._swept = time.monotonic() if now is None else now
        closed = close_unanswered(self.store, timeout)
        self.enqueue(closed, delay=0.0)
        return len(closed)

    def _close_unanswered_logged(self) -> None:
        try:
            self.close_unanswered(now=time.monotonic())
        except Exception:  # the worker must survive anything; the turns wait for the next sweep
            log.exception("closing turns that got no reply failed")

    def flush(self, *, user: str | None = None) -> int:
        """Learn now from everything waiting: the queue, any completed episode never learned
        from (a crashed process's, or one whose engine call failed) and the turns that got
        no reply in time; returns how many episodes were learned."""
        self.close_unanswered()
        self.requeue_unlearned(user)
        return self._drain(user)

    def _drain(self, user: str | None = None, *, retrying: bool = True) -> int:
        """Learn everything queued now (``retrying=False``: but what waits for a retry after
        a failure). The threads of one user and agent are learned as one batch: a flush after
        ingesting many threads makes a few engine calls, not one each."""
        with self._cond:
            keys = [k for k in self._queue if (user is None or k[0] == user)
                    and (retrying or not self._queue[k].attempts)]
            first: dict[tuple[str, str | None], Key] = {}
            for key in keys:
                lead = first.setdefault((key[0], key[1]), key)
                if lead != key:
                    merged, pending = self._queue[lead], self._queue.pop(key)
                    merged.ids.update(pending.ids)
                    merged.attempts = max(merged.attempts, pending.attempts)
        by_user: dict[str, list[Key]] = {}
        for key in first.values():
            by_user.setdefault(key[0], []).append(key)
        if len(by_user) > 1 and self._parallel():  # users at once, each user's keys in turn
            with ThreadPoolExecutor(max_workers=min(self.settings.learn_threads, len(by_user)),
                                    thread_name_prefix="reverie-flush") as pool:
                return sum(pool.map(self._process_all, by_user.values()))
        return self._process_all(list(first.values()))

    def _process_all(self, keys: list[Key]) -> int:
        return sum(self._process(k, force=True) for k in keys)

    def stop(self, *, drain: bool = True) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if drain:
            # what failed and waits for its retry stays in the store, unlearned, for the next
            # start: closing does not call a failing endpoint once more
            self._drain(retrying=False)

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                now = time.monotonic()
                polling = self.poll is not None and now - self._polled >= self.poll
            if polling:
                self._polled = now
                try:  # what other processes completed (a key retrying after a failure keeps its wait)
                    self.enqueue(self.store.unlearned_episodes(limit=POLL_BATCH), delay=0.0)
                except Exception:
                    log.exception("polling for unlearned episodes failed")
            self._close_unanswered_logged()
            with self._cond:
                if self._stopped:
                    return
                # a user whose batch is in the pool waits for it (their next batch plans on it)
                due = [k for k, p in self._queue.items() if p.due <= now and k[0] not in self._in_flight]
                if not due:
                    # (a finished batch of the pool's wakes this loop for its user's next key)
                    wait = min((p.due for k, p in self._queue.items() if k[0] not in self._in_flight),
                               default=now + 60) - now
                    if self.poll is not None:
                        wait = min(wait, self.poll)
                    if self.settings.reply_timeout_seconds > 0:
                        wait = min(wait, self._sweep_every)
                    self._cond.wait(timeout=max(0.05, min(wait, 60)))
                    continue
            if self._parallel():
                self._dispatch(due)
                continue
            for key in due:
                self._process_logged(key)

    def _process_logged(self, key: Key) -> None:
        try:
            self._process(key)
        except Exception:  # the worker must survive anything; the batch waits in the queue again
            log.exception("learning failed for %s", key)

    def _parallel(self) -> bool:
        """Whether several users' batches may be learned at once: when a learning step waits
        on an endpoint. The in-process engine keeps the interpreter busy, which runs one
        thread at a time: there batches go one after another."""
        return self.settings.learn_threads > 1 and not self.ctx.engines.offline("summarize", "extract", "govern_tags")

    def _dispatch(self, due: list[Key]) -> None:
        """Hand each due user's first key to the pool (up to ``learn_threads`` learn at once);
        the user's other keys wait until that batch is done."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.settings.learn_threads, thread_name_prefix="reverie-learn")
        for key in due:
            with self._cond:
                if self._stopped or key[0] in self._in_flight:
                    continue  # (once stopped, what is queued waits for the final drain)
                self._in_flight.add(key[0])
            self._pool.submit(self._pooled, key)

    def _pooled(self, key: Key) -> None:
        try:
            self._process_logged(key)
        finally:
            with self._cond:
                self._in_flight.discard(key[0])
                self._cond.notify()  # the loop may hand this user's next key out now

    def _user_lock(self, user: str) -> threading.Lock:
        with self._cond:
            return self._user_locks.setdefault(user, threading.Lock())

    def _process(self, key: Key, *, force: bool = False) -> int:
        with self._user_lock(key[0]):
            with self._cond:
                pending = self._queue.get(key)
                if pending is None or (not force and pending.due > time.monotonic()):
                    return 0
                del self._queue[key]
            ids = list(pending.ids)
            learned = 0
            # a page of episodes at a time: a long queue (a large ingest left to the
            # debounce) is never read into memory whole
            for page_start in range(0, len(ids), LOAD_PAGE):
                read_at = self.store.write_mark()
                episodes = [
                    ep
                    for ep in self.store.get_episodes(ids[page_start : page_start + LOAD_PAGE]).values()
                    if ep.status == "completed" and not ep.learned
                ]
                episodes.sort(key=lambda e: (e.occurred_at, e.created_at))
                for start, chunk in _chunks(episodes, self.ctx.engines.extract.batch_chars):
                    try:
                        applied = self.learn(chunk, read_at=read_at)
                    except EngineError as exc:
                        failed = [e.id for e in episodes[start:]]
                        self._retry_later(key, pending, failed, exc, later=ids[page_start + LOAD_PAGE :])
                        return learned
                    except StoreBusy:
                        # another writer held the store: nothing was written, and the batch
                        # waits in the queue again (the caller of a flush hears of it)
                        busy = [e.id for e in episodes[start:]] + ids[page_start + LOAD_PAGE :]
                        log.warning("the store was busy learning %d episodes of %s; they wait in the queue "
                                    "again", len(busy), key)
                        self._requeue(key, busy, BUSY_RETRY_SECONDS, pending.attempts)
                        raise
                    except Exception as exc:
                        # what no check foresaw (a fault of ours, say): the batch keeps its place
                        # and its error, which health shows, and is tried again later, as after
                        # an engine's failure; the caller of a flush hears of it
                        failed = [e.id for e in episodes[start:]]
                        self._retry_later(key, pending, failed, exc, later=ids[page_start + LOAD_PAGE :])
                        raise
                    learned += applied  # not those another process learned meanwhile
            return learned

    def _requeue(self, key: Key, ids: list[str], delay: float, attempts: int) -> None:
        """``ids`` wait in the queue again, ahead of what was queued meanwhile, due in ``delay``."""
        with self._cond:
            current = self._queue.setdefault(key, _Pending())
            current.ids = dict.fromkeys([*ids, *current.ids])
            current.attempts = attempts
            current.due = time.monotonic() + delay
            self._cond.notify()

    def _retry_later(
        self, key: Key, pending: _Pending, ids: list[str], exc: Exception, *, later: list[str] | None = None,
    ) -> None:
        """``ids`` failed (their error is recorded); they and the ``later`` ones not tried
        yet wait in the queue again, with a growing delay."""
        said = failed(exc, len(ids), key)
        self.store.mark_learned(ids, learned=False, error=said[:500])
        pending.attempts += 1
        delay = min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** (pending.attempts - 1))
        self._requeue(key, [*ids, *(later or [])], delay, pending.attempts)

    # ------------------------------------------------------------ learning one batch
    def learn(self, episodes: list[Episode], *, read_at: Hashable | None = None) -> int:
        """Learn one batch; returns how many of ``episodes`` this call learned (not those
        learned meanwhile elsewhere). ``read_at``: the store's
        :meth:`~reverie.store.base.Store.write_mark` taken before ``episodes`` were read, if
        the caller has it."""
        if not episodes:
            return 0
        # the engines' answers, while the collector waits if they run here (not on an endpoint)
        offline = self.ctx.engines.offline("summarize", "extract", "govern_tags")
        with paused_gc() if offline else nullcontext():
            plan = self._plan(episodes)
        with self._apply_lock, paused_gc():
            return self._apply(episodes, plan, read_at)

    def _apply(self, episodes: list[Episode], plan: _Plan, read_at: Hashable | None = None) -> int:
        user = episodes[0].user
        with self.store.transaction(batch=True), self.facts.judging():
            # the engines took their time: apply to the episodes as they are now, so that
            # feedback, archiving or usage written meanwhile is kept (read again unless the
            # store says nothing was written since they were read)
            if read_at is None or self.store.write_mark() != read_at:
                current = self.store.get_episodes(e.id for e in episodes)
                episodes = [current[e.id] for e in episodes if e.id in current and not current[e.id].learned]
            if not episodes:
                return 0
            writer = TagWriter(self.store, user)
            self._apply_summaries(writer, episodes, plan)
            self._apply_tag_decisions(writer, plan.decisions)
            self._apply_extraction(writer, user, episodes, plan.extraction)
            put_episode_notes(self.store, user, episodes)
            self.store.mark_learned([e.id for e in episodes])
        live = self._tag_index.get(user)
        if live is not None:  # the index of live tags follows what this batch activated or retired
            for name, status in writer.restated.items():
                if status == "active":
                    live.add(name)
                else:
                    live.discard(name)
        mirror_notes(self.store, self.ctx.files, user, {e.occurred_at.date().isoformat() for e in episodes})
        return len(episodes)

    def _plan(self, episodes: list[Episode]) -> _Plan:
        limit = self.settings.max_message_chars
        engines = self.ctx.engines
        text = " ".join(m.content for e in episodes for m in e.messages)
        language = preferred_language(text)
        trivial: dict[str, EpisodeSummary] = {}
        requests: dict[str, SummarizeRequest] = {}
        messages: list[Message] = []
        owners: list[str] = []
        for ep in episodes:
            clipped = [
                m if len(m.content) <= limit else m.model_copy(update={"content": clip(m.content, limit)})
                for m in ep.messages
            ]
            if all(is_trivial(m.content) for m in clipped):
                trivial[ep.id] = EpisodeSummary(summary=normalize_space(ep.user_text)[:200])
                continue
            requests[ep.id] = SummarizeRequest(messages=clipped, language=language)
            messages += clipped
            owners += [ep.id] * len(clipped)
        user = episodes[0].user
        extraction = Extraction()
        with engines.summarizing(requests) as summarized:
            if messages:
                # the facts this batch's agent sees: its own and those of every agent
                agent = episodes[0].agent
                facts = [f for f in self.store.recent_facts(user, ENGINE_FACTS) if f.agent in (None, agent)]
                extraction = engines.extract.extract(
                    ExtractRequest(
                        messages=messages,
                        episode_ids=owners,
                        profile=self.store.get_profile(user),
                        facts=[_ref(f) for f in facts],
                        language=language,
                        user_speakers=self._user_speakers(episodes),
                    )
                )
            done = summarized()
        summaries = {ep.id: _bounded(trivial[ep.id] if ep.id in trivial else done[ep.id]) for ep in episodes}
        for new in extraction.new_facts:
            new.tags = new.tags[:MAX_ITEM_TAGS]
        # the tags that will be written: the episodes' and the new facts' (a conversation-level
        # tag an engine may add lands on no item, so it is not governed either)
        names = {normalize_tag(t) for s in summaries.values() for t in s.tags}
        names |= {normalize_tag(t) for f in extraction.new_facts for t in f.tags}
        names.discard("")
        decisions = TagDecisions()
        known = self.store.tag_states(user, names)
        fresh = [n for n in names if n not in known or known[n].status == "unexamined"]
        if fresh:
            # only the live tags that could relate to a candidate (a shared relation key),
            # from an index kept between batches: not every tag the user ever had
            live = self._live_tags(user)
            near = sorted(live.near(fresh, per_key=NEIGHBOURS_PER_KEY))
            decisions = _within(engines.govern_tags.govern_tags(
                GovernRequest(
                    candidates=[TagInfo(name=n) for n in sorted(fresh)],
                    existing=[TagInfo(name=name, status="active") for name in near],
                )
            ), set(fresh), set(near))
        return _Plan(summaries, extraction, decisions, language)

    def _live_tags(self, user: str) -> TagNeighbours:
        """The user's active tags, indexed by relation key; read again only when the store
        holds another number of active tags than the index (another process, a merge)."""
        count = self.store.count_tags(user, status="active")
        index = self._tag_index.get(user)
        if index is None or len(index) != count:
            index = TagNeighbours(t.name for t in self.store.list_tags(user, status="active"))
            self._tag_index[user] = index
        return index

    def _user_speakers(self, episodes: list[Episode]) -> list[str]:
        """In an ingested multi-speaker talk every named speaker may say something about
        themselves; in a turn only the user's messages count."""
        return sorted({m.speaker for e in episodes for m in e.messages if m.speaker and m.role not in AGENT_ROLES})

    def _apply_summaries(self, writer: TagWriter, episodes: list[Episode], plan: _Plan) -> None:
        tagged: dict[str, dict[str, float]] = {}
        each = writer.ensure_each([plan.summaries[ep.id].tags for ep in episodes])
        for ep, tags in zip(episodes, each, strict=True):
            s = plan.summaries[ep.id]
            ep.summary, ep.overview = s.summary, s.overview  # redacted and bounded (_bounded)
            bags = [token_set(m.content) for m in ep.messages]
            ep.summary_from = attribute(ep.summary, ep.messages, bags=bags)
            ep.overview_from = (
                ep.summary_from if ep.overview == ep.summary else attribute(ep.overview, ep.messages, bags=bags)
            )
            if s.scene and not ep.scene:
                ep.scene, ep.sub_scene = s.scene, s.sub_scene
            ep.tags = tags
            ep.learned = True
            self.store.put_episode(ep, reindex=False)
            tagged[ep.id] = {t: 1.0 for t in ep.tags}
        self.store.set_items_tags(writer.user, "episode", tagged)

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
        writer.relate_all((rel.source, rel.target, rel.level) for rel in decisions.relations)

    def _apply_extraction(self, writer: TagWriter, user: str, episodes: list[Episode], ex: Extraction) -> None:
        now = utcnow()
        episode_ids = {e.id for e in episodes}
        by_id = {e.id: e for e in episodes}
        trimmed: dict[str, int] = {}
        speakers = len(self._user_speakers(episodes))
        # the user's profile describes one person: whatever an engine says, a talk among
        # several named people, none marked as the user, does not write it (their facts do)
        profiled = any(speaks_for_profile(m, speakers) for e in episodes for m in e.messages)
        before = self.store.get_profile(user).sections()
        # a section's "last weekend" is the batch's, as a fact's without sources
        latest = max(e.occurred_at for e in episodes)
        rewritten: dict[str, tuple[str, str]] = {}  # section -> (its text before, the batch's)
        for group, sections in (("user", ex.user if profiled else {}), ("history", ex.history)):
            for key, update in sections.items():
                name = f"{group}.{key}"
                summary = redact(normalize_space(update.summary))
                if name in PROFILE_SECTIONS and update.should_update and summary:
                    # a part this batch says has its times as dates, as its facts do
                    summary = rewrite_new_parts(summary, before[name].summary if name in before else "",
                                                lambda part: anchored(part, latest.astimezone()))
                    # a section stays a short paragraph: its newest parts, the older give way
                    summary = fit_section(name, summary, self.settings.max_profile_chars, trimmed)
                    self.store.put_profile_section(user, name, summary, now)
                    rewritten[name] = (before[name].summary if name in before else "", summary)
        note_trimmed(self.store, user, trimmed, now)
        agent = episodes[0].agent
        facts = self.store.get_facts(ex.facts_to_reinforce)
        bags: _Bags = {}  # the episodes' words, read once a batch
        for fact in facts.values():
            # an agent's talk says again its own facts and those every agent sees, no other agent's
            if fact.user == user and fact.status != "archived" and fact.agent in (None, agent):
                # the episodes and turns that say it again (none found: the batch's episodes,
                # as an engine names no lines for a reinforcement)
                saying = _said_again(fact.content, episodes, bags)
                self.facts.reinforce_fact(fact, [e.id for e, _ in saying] or list(episode_ids), now,
                                          sources=[sid for e, drawn in saying for sid in e.sources_of(drawn)])
        # proposed facts not kept, by reason (the engine's own drops first): counted for health
        skipped: dict[str, int] = dict(ex.facts_dropped)
        removed = []
        for removal in ex.facts_to_remove:
            found = self.store.get_fact(removal.id)
            # ... and takes back only its own (one every agent sees stays for the others)
            if (found is not None and found.user == user and found.status != "archived" and found.agent == agent
                    and not keyed(found)):  # an application's keyed item is its to delete
                removed.append((found, removal.reason))
        # an older talk than the one a fact rests on does not take it back (history stored out of order)
        said = self.facts.said_times(f for f, _ in removed) if removed else {}
        later = [f for f, _ in removed if said[f.id] > as_utc(latest)]
        if later:
            skipped[SAID_LATER] = skipped.get(SAID_LATER, 0) + len(later)
            removed = [(f, reason) for f, reason in removed if f not in later]
        # an engine cites the lines it read: an episode id, or a message's own id where it has
        # one ("[D1:3] ..."); each leads to its episode, and a message id is the turn itself
        lines = {sid: e.id for e in reversed(episodes) for sid in e.source_ids} | {e.id: e.id for e in episodes}
        added: list[Fact] = []
        for new in ex.new_facts:
            content = normalize_space(redact(new.content))
            reason = _not_kept(new, content, self.settings.fact_confidence_threshold)
            if reason:
                skipped[reason] = skipped.get(reason, 0) + 1
                continue
            content = clip_learned(content)
            sources, turns = _rests_on(content, [s for s in new.sources if s in lines], lines, episodes, bags)
            # when it was said: a backfill of old history does not make an older value the newer,
            # and "last weekend" is the weekend before that
            said_at = max((by_id[e].occurred_at for e in sources if e in by_id), default=latest)
            # (a day where the speaker is: in this machine's zone, as the nightly dream reads days)
            content = clip_learned(anchored(content, said_at.astimezone()))
            content = _name_the_speaker(content, [by_id[e] for e in sources], several=speakers > 1)
            category, original = normalize_category(new.category)
            fact = Fact(
                user=user,
                agent=agent,
                content=content,
                category=category,
                original_category=original,
                area=(new.area if new.area in AREAS else "General") if category == "preference" else None,
                confidence=min(1.0, max(0.0, float(new.confidence))),
                status="pending",
                provenance=Provenance(
                    origin="learned",
                    episodes=sources,
                    source_ids=turns,
                ),
                created_at=now,
                updated_at=now,
            )
            if self.facts.add_fact(writer, fact, new.tags, said_at=said_at) is fact:
                added.append(fact)
        # a fact older than the value it contradicts was archived as it came (history stored out
        # of order): the profile says what is true now, so what this older talk rewrote in it
        # is left as it was (its facts keep what it said)
        outdated = [f.content for f in added if f.status == "archived"]
        added = [f for f in added if f.status != "archived"]
        if outdated or later:
            for name, (was, _wrote) in rewritten.items():
                self.store.put_profile_section(user, name, was, now)
        said_words: frozenset[str] | None = None
        taken_back: list[str] = [*outdated]
        for fact, reason in removed:
            successor = _successor(fact, added)
            if successor is None:
                said_words = said_words if said_words is not None else frozenset().union(
                    *(token_set(m.content) for e in episodes for m in e.messages))
                if not _talked_about(fact, said_words):
                    skipped[REMOVAL_REFUSED] = skipped.get(REMOVAL_REFUSED, 0) + 1
                    continue
            self.facts.archive_fact(fact, reason or "removed by the learning line", successor, now)
            taken_back.append(fact.content)
        # the profile says what is true now: not what was taken back, nor what a newer fact
        # of this batch contradicts (a correction; a new city)
        replaced = {f.supersedes for f in added}  # an older value of this same batch is no newer fact
        drop_outdated_parts(self.store, user, gone=taken_back, newer=[f.content for f in added if f.id not in replaced],
                            duplicate_at=self.settings.duplicate_jaccard, now=now)
        note_skipped(self.store, user, skipped, now)
        self.facts.enforce_capacity(user, now)


# the placeholders redaction leaves for a credential (a password, a key, a token)
_CREDENTIAL = re.compile(r"\[(?:password|api-key|token|private-key)\]")


def _not_kept(new: NewFact, content: str, threshold: float) -> str:
    """Why an engine's proposed fact is not kept ("" when it is)."""
    if new.confidence < threshold:
        return "below fact_confidence_threshold"
    if not content:
        return "empty once redacted"
    if _CREDENTIAL.search(content):
        # "Prefers the slack token [api-key] for the bot": a line that exists to carry a
        # secret says nothing once the secret is gone
        return "held a credential"
    if is_temporary(content):
        return "temporary state"
    if is_trivial(content):
        return "trivial"
    return ""


def _talked_about(fact: Fact, said: frozenset[str]) -> bool:
    """Whether a batch whose messages hold the words ``said`` talks about ``fact``: half its
    words at least. A fact removed with nothing in its place must be ("I moved away from
    Berlin" takes back "Lives in Berlin"; a talk about lunch does not take back "Allergic to
    peanuts", whatever a model answers)."""
    words = token_set(fact.content)
    return bool(words) and 2 * len(words & said) >= len(words)


def _successor(removed: Fact, added: list[Fact]) -> Fact | None:
    """The new fact that takes a removed one's place: the one that says it supersedes it (a
    take-back, a correction), else of its category and sharing the most words with it, else
    the one sharing the most words; none when no new fact relates to it. ("Is allergic to
    peanuts" had been linked to "Is pescatarian now", of its category, learned in the same
    batch as "Is not allergic to peanuts", which names it.)"""
    named = next((f for f in added if f.supersedes == removed.id), None)
    if named is not None:
        return named
    words = token_set(removed.content)
    best = max(added, key=lambda f: (f.category == removed.category, len(words & token_set(f.content))), default=None)
    if best is None or (best.category != removed.category and not words & token_set(best.content)):
        return None
    return best


# an episode id -> the words of each of its messages, and all of them
_Bags = dict[str, tuple[list[frozenset[str]], frozenset[str]]]


def _rests_on(
    content: str, cited: list[str], lines: dict[str, str], episodes: list[Episode], bags: _Bags,
) -> tuple[list[str], list[str]]:
    """The episode ids and turns (source ids) a new fact rests on: the lines an engine
    ``cited`` (``lines``: an episode id or a message's own id -> its episode; a message id is
    the turn itself); else, within the cited episodes or else the batch, those its words are
    drawn from; else all of them."""
    by_id = {e.id: e for e in episodes}
    named = [by_id[i] for i in dict.fromkeys(lines[s] for s in cited)]
    turns = list(dict.fromkeys(s for s in cited if s not in by_id))
    if named and turns:
        return [e.id for e in named], turns
    saying = _said_again(content, named or episodes, bags)
    among = named or [e for e, _ in saying] or episodes
    drawn = [sid for e, lines_drawn in saying for sid in e.sources_of(lines_drawn)]
    return [e.id for e in among], drawn or [sid for e in among for sid in e.source_ids]


def _said_again(content: str, episodes: list[Episode], bags: _Bags) -> list[tuple[Episode, list[int]]]:
    """The episodes with messages ``content`` is drawn from (:func:`attribute`), and those messages."""
    words = token_set(content)
    found = []
    for episode in episodes:
        each, every = _bags(episode, bags)
        if words & every:  # no message holds a line without a word of it
            drawn = attribute(content, episode.messages, bags=each)
            if drawn:
                found.append((episode, drawn))
    return found


def _bags(episode: Episode, bags: _Bags) -> tuple[list[frozenset[str]], frozenset[str]]:
    """The words of each of ``episode``'s messages, and all of them, kept in ``bags`` for the batch."""
    if episode.id not in bags:
        each = [token_set(m.content) for m in episode.messages]
        bags[episode.id] = each, frozenset().union(*each)
    return bags[episode.id]


def _name_the_speaker(content: str, episodes: list[Episode], *, several: bool = False) -> str:
    """In a talk between several named people, a fact says whose it is ("Melanie: loves
    camping"); with one speaker, or unnamed roles, it stays as it is. ``several``: the batch
    holds several named people, though the fact's own episodes hold one (a person's turn
    of several lines is an episode of its own)."""
    messages = [m for e in episodes for m in e.messages]
    speakers = {m.speaker for m in messages if m.speaker}
    if not speakers or (len(speakers) < 2 and not several):
        return content
    drawn = attribute(content, messages)
    speaker = messages[drawn[0]].speaker if drawn else None
    if not speaker or speaker.casefold() in content.casefold():
        return content
    return f"{speaker}: {content}"


def _within(decisions: TagDecisions, candidates: set[str], shown: set[str]) -> TagDecisions:
    """What tag governance decided about the tags it was asked about: only a candidate is
    activated or deprecated, and a relation joins a candidate to a candidate or to a tag it
    was shown (a model may name any tag it likes: "deprecate billing" in a batch about tea)."""
    known = candidates | shown
    return TagDecisions(
        activate=[n for n in decisions.activate if normalize_tag(n) in candidates],
        deprecate=[n for n in decisions.deprecate if normalize_tag(n) in candidates],
        relations=[r for r in decisions.relations
                   if {normalize_tag(r.source), normalize_tag(r.target)} <= known
                   and (normalize_tag(r.source) in candidates or normalize_tag(r.target) in candidates)],
    )


def failed(exc: Exception, episodes: int, whose: object) -> str:
    """A learning batch failed: counted, logged, and its error as it may be kept (redacted:
    what an endpoint answered may echo a key)."""
    LEARNING_FAILURES.inc()
    said = redact(str(exc))
    log.warning("learning failed for %d episodes of %s, will retry: %s", episodes, whose, said)
    return said


def _bounded(summary: EpisodeSummary) -> EpisodeSummary:
    """An engine's summary within :data:`MAX_SUMMARY_CHARS` / :data:`MAX_OVERVIEW_CHARS` and
    :data:`MAX_ITEM_TAGS`, its scene labels redacted and short (an endpoint may answer
    anything: a scene holding an email, a 600,000-character summary, 500 tags)."""
    return summary.model_copy(update={
        # redacted before it is cut: a cut through a secret leaves a part no detector knows
        "summary": clip(redact(normalize_space(summary.summary)), MAX_SUMMARY_CHARS),
        "overview": clip(redact(normalize_space(summary.overview)), MAX_OVERVIEW_CHARS),
        "tags": summary.tags[:MAX_ITEM_TAGS],
        "scene": fit_label(summary.scene) or "general",
        "sub_scene": fit_label(summary.sub_scene),
    })


def _chunks(episodes: list[Episode], max_chars: int | None) -> Iterator[tuple[int, list[Episode]]]:
    """(start index, episodes) batches of at most ``max_chars`` of text each (one episode at
    least), so that a long ingested talk reaches a model in prompts it can read."""
    if max_chars is None:
        if episodes:  # another learner may have learned them all meanwhile: nothing to do
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
