"""``Memory``: the one object an agent holds. Every front door (CLI, REST, MCP) calls it.

    >>> from reverie import Memory
    >>> mem = Memory(home="./mem")
    >>> with mem.turn("I always want the conclusion first", user="ana", thread="t1") as turn:
    ...     prompt_context = turn.context      # the <memory> block for this message
    ...     turn.complete("Noted.")

The facade composes the lines (recall, learning, dream, maintenance, import,
turns) over one :class:`~reverie.context.Context` and delegates to them; it
checks the caller's arguments and holds no logic of its own.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from reverie import curation, dream, maintenance, memory_md, migrate, notes, portability
from reverie.curation import EpisodeDeleted
from reverie.context import Context
from reverie.dream import ChatReply
from reverie.errors import InvalidInput, NotFound, StoreError
from reverie.files import UserFiles, private_dirs
from reverie.ingest import Added, IngestReport, add_messages, ingest, store_messages
from reverie.inputs import (
    check_budget,
    check_date,
    check_flag,
    check_messages,
    check_query,
    check_text,
    check_moment,
    check_time,
    check_user,
    clean_id,
)
from reverie.learn import Learner
from reverie.learn_claims import ClaimingLearner
from reverie.maintenance import (
    ChangeSet,
    CleanReport,
    ConsolidateReport,
    HealthReport,
    StoreCheck,
    TidyReport,
    UndoReport,
)
from reverie.memory_md import SyncReport
from reverie.migrate import MigrateReport
from reverie.messages import Messages
from reverie.models import Episode, Fact, KnowledgeDoc, Message, Note, Profile, Tag
from reverie.recall import Recall, Recaller
from reverie.settings import Settings
from reverie.store import Store, is_postgres_url, open_store
from reverie.store.base import DreamRun, Page
from reverie.turn import Turn, recover_turns

log = logging.getLogger("reverie")

# the longest a close waits for learning what waits (then it waits in the store for the next start)
CLOSE_LEARN_SECONDS = 60.0


class Memory:
    """Long-term memory for one home (a folder with ``reverie.db`` and markdown views)."""

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        settings: Settings | None = None,
        store: Store | str | None = None,
        background: bool = True,
        learn: str = "here",
        **overrides: Any,
    ):
        """``learn``: "here" (this process learns what it is handed, the default), "elsewhere"
        (a server worker: completed episodes wait in the store for the learning process), or
        "poll" (that learning process: also takes up what other processes completed).

        ``store``: a Store, or where one is (a ``postgresql://`` URL or a SQLite file; the
        setting ``store``); by default SQLite at ``<home>/reverie.db``."""
        if learn not in ("here", "elsewhere", "poll"):
            raise InvalidInput("learn must be 'here', 'elsewhere' or 'poll'", field="learn")
        if isinstance(store, str):
            overrides["store"] = store
            store = None
        if settings is not None and (overrides or (home is not None and Path(home) != Path(settings.home))):
            # a settings object is used whole: what is given beside it would be dropped unread
            given = sorted(overrides) + (["home"] if home is not None and Path(home) != Path(settings.home) else [])
            raise InvalidInput(f"{', '.join(given)} given beside settings=: put them in the settings "
                               "(Settings.load(home, ...)) instead", field=given[0])
        self.settings = settings or Settings.load(home, **overrides)
        self.home = Path(self.settings.home)
        if store is None and not is_postgres_url(self.settings.store):
            private_dirs(self.home)
        self.store = store or open_store(self.settings.store or self.home / "reverie.db",
                                         durability=self.settings.durability, pool_size=self.settings.store_pool_size)
        # a shared store holds the markdown documents; files then only in the mirror folder
        self.files = UserFiles(self.home, store=self.store if self.store.shared else None,
                               mirror=self.settings.mirror_dir)
        if moved := self.files.upgrade_layout(self.store):
            log.info("renamed %d user folders to names no case-blind file system confuses", moved)
        self.ctx = Context.build(self.store, self.settings, self.files)
        self.engines = self.ctx.engines
        self.recaller = Recaller(self.ctx)
        # over a shared store the learning queue is the store's rows, claimed by any replica
        self.learner = (ClaimingLearner if self.store.shared else Learner)(
            self.ctx, background=background and learn != "elsewhere", queue=learn != "elsewhere",
            poll=self.settings.debounce_seconds if learn == "poll" else None,
        )
        self._closed = False
        recover_turns(self.store)
        self.learner.close_unanswered()
        if self.learner.background:
            self.learner.requeue_unlearned()
        self._finalizer = weakref.finalize(self, Memory._atexit_close, weakref.ref(self))
        atexit.register(self._finalizer)

    # ------------------------------------------------------------ lifecycle
    @staticmethod
    def _atexit_close(ref: "weakref.ref[Memory]") -> None:
        mem = ref()
        if mem is not None:
            mem.close()

    def close(self) -> None:
        """Drain the learning queue, let running background dreams finish, then close the store."""
        if self._closed:
            return
        self._closed = True
        try:
            if waiting := self.recaller.close():
                log.error("usage counts of %d delivered items could not be written at close and are lost "
                          "(see the warning before this)", waiting)
            self._stop_learning()
            if not dream.wait(self.ctx.files.home, timeout=dream.CLOSE_WAIT):
                left = dream.abandon(self.ctx)
                log.warning("%d background dream(s) still running at close were recorded as failed", left)
        finally:
            self.store.close()

    def _stop_learning(self) -> None:
        """Learn what waits, for at most CLOSE_LEARN_SECONDS: a close that waited on a store or
        an endpoint that accepts and never answers (a frozen database proxy, a statement stuck
        behind a lock, an LLM that hangs) never ended, and a server's SIGTERM with it. Past the
        limit the learning is left running in the background and the store is closed under it:
        its transaction rolls back, and what it had not learned waits in the store for the
        next start (a replica's claims for another replica, once their lease runs out)."""
        failed: list[BaseException] = []

        def stop() -> None:
            try:
                self.learner.stop(drain=True)
            except BaseException as exc:  # said below, in the closing thread
                failed.append(exc)

        worker = threading.Thread(target=stop, name="reverie-close-learning", daemon=True)
        worker.start()
        worker.join(CLOSE_LEARN_SECONDS)
        if worker.is_alive():
            log.warning("learning what waited did not finish within %g s of closing (the store or an engine does "
                        "not answer); what it has not learned waits in the store for the next start",
                        CLOSE_LEARN_SECONDS)
        elif failed and isinstance(failed[0], StoreError):  # the store out of reach: nothing is lost,
            # what was not learned waits in the store, learned at the next start
            log.warning("learning what waited could not finish at close: %s (it waits in the store for the "
                        "next start)", failed[0])
        elif failed:
            raise failed[0]

    def __enter__(self) -> "Memory":
        return self

    def _id(self, value: object, field: str) -> str | None:
        """A thread or agent id as it is stored and looked up (see :func:`reverie.inputs.clean_id`)."""
        return clean_id(value, field, self.store.salt)

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ turns
    def turn(
        self,
        message: str,
        *,
        user: str,
        thread: str = "default",
        agent: str | None = None,
        budget: int | None = None,
        at: datetime | None = None,
    ) -> Turn:
        """Open a turn: store it as pending, then recall context for ``message``.

        Use it as a context manager and call ``turn.complete(reply)``; leaving the
        block without it marks the turn interrupted, an exception marks it failed.
        """
        return Turn.open(
            self.store, self.recaller, self.learner, message, user=check_user(user),
            thread=self._id(thread, "thread") or "default", agent=self._id(agent, "agent"),
            budget=check_budget(budget) or self.settings.budget, at=check_moment(at, "at"),
        )

    def complete_turn(self, turn_id: str, reply: str, *, user: str | None = None) -> Episode:
        """Phase two of a turn opened elsewhere (the REST and MCP doors use this)."""
        return Turn.resume(self.store, self.learner, check_text(turn_id, "turn_id") or "", user=user).complete(reply)

    # ------------------------------------------------------------ conversation in
    def add(
        self,
        messages: Messages,
        *,
        user: str,
        thread: str = "default",
        agent: str | None = None,
        at: datetime | None = None,
        source: str | None = None,
        group: str = "exchange",
    ) -> Added:
        """Ingest past conversation as completed episodes and queue it for learning.

        ``messages`` are ``{role|speaker, content|text, at?, source_id?}`` dicts (or
        Message objects, or plain strings from the user). Messages are grouped into
        exchanges (a message and the replies to it); ``group="message"`` keeps one
        episode per message. One transaction for the whole call.

        Adding the same input again stores nothing new: a message whose ``source_id`` is
        already stored in this user's thread is left out, and so is an exchange with the
        same occurred time and content as a stored one (see :func:`reverie.ingest.skip_known`).
        Returns the stored episodes as an :class:`~reverie.ingest.Added` list, whose
        ``skipped`` (episodes) and ``skipped_messages`` say what was recognised and left out.
        A live turn (:meth:`turn`) is always a new exchange, even with the same words.
        """
        episodes = add_messages(
            self.store, check_messages(messages), user=check_user(user),
            thread=self._id(thread, "thread") or "default", agent=self._id(agent, "agent"),
            at=check_time(at, "at"), source=source, grouping=group,
        )
        self.learner.enqueue(episodes)
        return episodes

    def ingest(
        self, source: str | Path | Messages, *, user: str, thread: str | None = None, learn: bool = True,
        on_progress: Callable[[str], None] | None = None,
    ) -> IngestReport:
        """Ingest a file (JSON / JSONL messages, ``Speaker: text`` lines, LoCoMo) or a list of
        messages, then learn from it (``learn=False`` leaves it to the debounce). Input stored
        before is skipped and counted. ``on_progress(step)`` is called after each conversation
        and before learning."""
        user = check_user(user)
        learned = 0

        def add(messages: list[Message], thread_of: str, counts: dict[str, int]) -> Added:
            episodes = store_messages(
                self.store, messages, user=user, thread=self._id(thread or thread_of, "thread") or "default",
                agent=None, source=None, grouping="exchange", counts=counts,
            )
            self.learner.enqueue(episodes)
            return episodes

        parts = 0

        def learn_part() -> None:
            nonlocal learned, parts
            parts += 1
            learned += self.flush(user=user)

        # a large file streams in: each part is learned before the next is read, so neither
        # the messages nor the learning queue grow with the file
        report = ingest(source, add=add, on_progress=on_progress, after_part=learn_part if learn else None)
        if learn:
            if not parts:  # each part was learned as it came: a flush again would only retry
                if on_progress is not None:  # a failing endpoint's batches once more
                    on_progress("learning")
                learned += self.flush(user=user)
            report.learned = learned
            report.waiting, report.learning_error = self.store.learning_backlog(user)
        counts = self.stats(user=user)["users"][user]
        report.facts, report.tags = counts["facts"], counts["tags"]
        return report

    def trim(
        self, messages: Messages, *, user: str, thread: str = "default", at: datetime | None = None,
    ) -> list[Note]:
        """The host agent dropped these messages from its context window: they become
        daily-note lines (summarized, redacted) for the day they happened."""
        return notes.trim(self.ctx, check_messages(messages), user=check_user(user),
                          thread=self._id(thread, "thread") or "default", at=check_time(at, "at"))

    # ------------------------------------------------------------ facts
    def remember(
        self,
        content: str,
        *,
        user: str,
        category: str = "other",
        area: str | None = None,
        agent: str | None = None,
        confidence: float = 1.0,
        tags: list[str] | None = None,
    ) -> Fact:
        """Store a fact a person vouches for (consolidated at once, never evicted by capacity).
        A near-duplicate reinforces the stored fact; a new value of the same thing ("Takes
        10 mg" after "Takes 5 mg") archives the older with a ``supersedes`` link."""
        return curation.remember(self.ctx, content, user=check_user(user), category=category, area=area,
                                 agent=agent, confidence=confidence, tags=tags)

    def facts(
        self, *, user: str, status: str | None = None, category: str | None = None, agent: str | None = None,
    ) -> list[Fact]:
        """Facts, most used first. ``status`` is pending, consolidated or archived
        (default: pending and consolidated)."""
        return curation.list_facts(self.ctx, user=check_user(user), status=status, category=category, agent=agent)

    def fact(self, fact_id: str, *, user: str | None = None) -> Fact:
        return curation.get_fact(self.ctx, fact_id, user=user)

    def update_fact(self, fact_id: str, *, user: str | None = None, **changes: Any) -> Fact:
        """Edit a fact's content, category, area, confidence or status."""
        return curation.update_fact(self.ctx, fact_id, user=user, **changes)

    def forget(self, fact_id: str, *, user: str | None = None, hard: bool = False, purge: bool = False) -> Fact:
        """Archive a fact (reversible: ``restore_fact(id)``); ``hard=True`` deletes it for
        good, and ``purge=True`` then rewrites the store so that no byte of it stays in its
        files (see :meth:`delete_user`)."""
        if purge and not hard:
            raise InvalidInput("purge rewrites the store after a deletion: pass hard=True with it", field="purge")
        fact = curation.forget(self.ctx, fact_id, user=user, hard=hard)
        if purge:
            self.store.purge()
        return fact

    def delete_episode(self, episode_id: str, *, user: str | None = None, purge: bool = False) -> EpisodeDeleted:
        """Delete one conversation's episode for good, with the daily-note lines drawn from it;
        the facts learned from it stay and are listed (forget each by id if it should go too).
        ``purge=True`` then rewrites the store so that no byte of it stays in its files."""
        deleted = curation.delete_episode(self.ctx, episode_id, user=user)
        if purge:
            self.store.purge()
            deleted.purged = True
        return deleted

    def restore_fact(self, fact_id: str, *, user: str | None = None) -> Fact:
        """Bring back an archived fact (forgotten, evicted, superseded, folded) in the tier it
        left; a live fact is refused."""
        return curation.restore_fact(self.ctx, fact_id, user=user)

    def reinforce(self, fact_id: str, *, user: str | None = None) -> Fact:
        """``[Nx]`` + 1 (seed 002); a pending fact reinforced by hand is promoted."""
        return curation.reinforce(self.ctx, fact_id, user=user)

    # ------------------------------------------------------------ profile, episodes, knowledge
    def profile(self, *, user: str) -> Profile:
        return self.store.get_profile(check_user(user))

    def set_profile(self, section: str, summary: str, *, user: str) -> Profile:
        """Set one profile section by hand, e.g. ``set_profile("user.cognitiveStyle", ...)``."""
        return curation.set_profile(self.ctx, section, summary, user=check_user(user))

    def episodes(
        self, *, user: str, thread: str | None = None, status: str | None = None, limit: int | None = 50,
        archived: bool | None = False,
    ) -> list[Episode]:
        """Episodes of a user, newest first."""
        return curation.list_episodes(self.ctx, user=check_user(user), thread=thread, status=status, limit=limit,
                                      archived=archived)

    def threads(self, *, user: str, limit: int = 200) -> list[str]:
        """The user's most recently active threads, newest first (at most ``limit``, 1-1000;
        those of the newest 5,000 episodes: a bounded read however many threads there are)."""
        return self.store.recent_threads(check_user(user), curation.check_limit(limit, 1000))

    def episode(self, episode_id: str, *, user: str | None = None) -> Episode:
        return curation.get_episode(self.ctx, episode_id, user=user)

    def feedback(self, episode_id: str, status: str, *, reason: str = "", user: str | None = None) -> Episode:
        """How a recalled episode worked out: confirmed (ranked up), rejected (never
        recalled again), ignored or partial."""
        return curation.feedback(self.ctx, episode_id, status, reason=reason, user=user)

    def add_knowledge(
        self, title: str, body: str, *, user: str, tags: list[str] | None = None, scope: str = "global",
        agent: str | None = None, project: str | None = None,
    ) -> KnowledgeDoc:
        """A whole markdown document (a reusable pattern), recalled when matched (see
        :func:`reverie.curation.add_knowledge`: scopes, limits, the same document again)."""
        return curation.add_knowledge(self.ctx, title, body, user=check_user(user), tags=tags, scope=scope,
                                      agent=agent, project=project)

    def delete_knowledge(self, doc_id: str, *, user: str) -> KnowledgeDoc:
        """Delete one of the user's knowledge documents for good; returns it (NotFound for
        another user's or none). A new version is a document of its own: delete the old one."""
        return curation.delete_knowledge(self.ctx, doc_id, user=check_user(user))

    def knowledge(self, *, user: str) -> list[KnowledgeDoc]:
        """Every knowledge document of the user, oldest first (:meth:`knowledge_page` reads
        them a page at a time)."""
        return self.store.list_knowledge(check_user(user))

    # ------------------------------------------------------------ tags
    def tags(self, *, user: str, status: str | None = None) -> list[dict[str, Any]]:
        """The tag dictionary with item counts and relations."""
        return curation.describe_tags(self.ctx, user=check_user(user), status=status)

    def merge_tags(self, old: str, new: str, *, user: str) -> int:
        """A person's explicit merge: OLD's items move to NEW; OLD stays as a redirect."""
        return curation.merge_tags(self.ctx, old, new, user=check_user(user))

    def set_tag_status(self, name: str, status: str, *, user: str) -> Tag:
        """Deprecate a tag (it never matches again) or make it active again; undoable."""
        return curation.set_tag_status(self.ctx, name, status, user=check_user(user))

    # ------------------------------------------------------------ pages (keyset: pass a page's ``next`` as ``after``)
    def episode_page(
        self, *, user: str, thread: str | None = None, status: str | None = None, archived: bool | None = False,
        until: datetime | None = None, after: str | None = None, limit: int = 50,
    ) -> Page[Episode]:
        """Episodes newest first, ``limit`` at a time: as fast at page 2,000 as at page 1."""
        return curation.episode_page(self.ctx, user=check_user(user), thread=thread, status=status,
                                     archived=archived, until=check_time(until, "until"), after=after, limit=limit)

    def fact_page(
        self, *, user: str, status: str | None = None, category: str | None = None, contains: str | None = None,
        order: str = "uses", after: str | None = None, limit: int = 50,
    ) -> Page[Fact]:
        """Facts ordered by uses, recent, last_used or confidence (highest first), ``limit`` at a
        time; ``contains`` filters on the text; ``status="all"`` includes the archived. A fact
        used while the pages are read can move to a page already read in the orders that use
        moves (uses, last_used); ``order="recent"`` (newest first) meets every fact once."""
        return curation.fact_page(self.ctx, user=check_user(user), status=status, category=category,
                                  contains=contains, order=order, after=after, limit=limit)

    def note_page(self, *, user: str, date: str | None = None, after: str | None = None, limit: int = 100) -> Page[Note]:
        """Daily-note lines, newest day first (a day's lines in the order written)."""
        return curation.note_page(self.ctx, user=check_user(user), date=check_date(date) if date is not None else None,
                                  after=after, limit=limit)

    def knowledge_page(self, *, user: str, after: str | None = None, limit: int = 20) -> Page[KnowledgeDoc]:
        """Knowledge documents, the newest first, ``limit`` at a time (1-100: each may hold
        100,000 characters)."""
        return curation.knowledge_page(self.ctx, user=check_user(user), after=after, limit=limit)

    def tag_page(
        self, *, user: str, status: str | None = None, after: str | None = None, limit: int = 100,
    ) -> Page[dict[str, Any]]:
        """The tag dictionary by name (as :meth:`tags` describes each tag), ``limit`` at a time."""
        return curation.tag_page(self.ctx, user=check_user(user), status=status, after=after, limit=limit)

    def change_page(self, *, user: str, after: str | None = None, limit: int = 50) -> Page[ChangeSet]:
        """:meth:`changes` one page at a time."""
        return maintenance.change_page(self.ctx, user=check_user(user), after=after, limit=limit)

    # ------------------------------------------------------------ recall and learning
    def recall(
        self,
        query: str,
        *,
        user: str,
        budget: int | None = None,
        thread: str | None = None,
        agent: str | None = None,
        at: datetime | None = None,
        explain: bool = False,
        track: bool = True,
    ) -> Recall:
        """The ``<memory>`` block for ``query`` within ``budget`` tokens, and why each item is in it.

        ``at`` is the moment of asking (default now): the times a query names ("yesterday",
        "last week") are read from it, in its zone (UTC for a naive one), and recency is
        measured from it. It is not a view of the memory as it was then: what was learned
        later is still recalled, and an event after ``at`` counts as far from it as one as
        long before. ``track=False`` leaves the usage counts as they are."""
        return self.recaller.recall(
            check_query(query), user=check_user(user), budget=check_budget(budget) or self.settings.budget,
            thread=self._id(thread, "thread"), agent=self._id(agent, "agent"), at=check_moment(at, "at"),
            explain=explain, track=track,
        )

    def flush(self, *, user: str | None = None) -> int:
        """Learn from everything queued now instead of after the debounce; returns episodes learned.
        What an engine failure left unlearned stays queued: see :meth:`learning_backlog`."""
        user = check_user(user) if user is not None else None
        learned = self.learner.flush(user=user)
        for someone in [user] if user is not None else self.store.users():
            # notes files an earlier try could not write (the notes are in the store)
            if notes.unwritten_notes(self.store, someone):
                notes.mirror_notes(self.store, self.files, someone, [])
        return learned

    def learning_backlog(self, *, user: str | None = None) -> tuple[int, str]:
        """(completed episodes not learned yet, the newest learning error among them or "")."""
        return self.store.learning_backlog(check_user(user) if user is not None else None)

    # ------------------------------------------------------------ export / import, counts
    def export(self, *, user: str) -> dict[str, Any]:
        """The whole memory of the user as one JSON envelope (held in memory: for a large
        memory, :meth:`export_to` writes the same envelope a page at a time)."""
        return portability.export_user(self.ctx, check_user(user))

    def export_to(self, out: IO[str], *, user: str) -> None:
        """Write the user's export envelope (the JSON of :meth:`export`) to a text file, read
        and written a page at a time: bounded memory whatever the memory holds."""
        for chunk in self.export_chunks(user=user):
            out.write(chunk)

    def export_chunks(self, *, user: str) -> Iterator[str]:
        """The user's export envelope (the JSON of :meth:`export`) as pieces of text, read a
        page at a time as they are asked for (what a server streams). The first piece, the
        head, reads the store: a store that fails fails there."""
        return portability.export_chunks(self.ctx, check_user(user))

    def import_(self, data: dict[str, Any] | str, *, user: str, strict: bool = True) -> dict[str, int]:
        """Import an export envelope (or a deer-flow memory.json), all or nothing: missing
        values are filled, a wrong one (a confidence outside 0..1, a date that is no date) is
        refused naming its path. Into another user, items whose ids another user's items hold
        take ids of their own, the same on every run: importing a file again replaces what
        the first import wrote (counted in ``replaced``) instead of adding copies.
        ``strict=False`` corrects a wrong value or skips an unusable item instead, each with
        a warning, counted in ``corrected`` and ``skipped`` (a profile section past
        max_profile_chars keeps its newest part)."""
        return portability.import_user(self.ctx, data, check_user(user), strict=check_flag(strict, "strict"))

    def import_file(
        self, path: str | Path, *, user: str, on_progress: Callable[[dict[str, int]], None] | None = None,
        strict: bool = True,
    ) -> dict[str, int]:
        """:meth:`import_` of a file. An export envelope is read and written a page of items
        at a time, in one transaction: bounded memory whatever the file's size.
        ``on_progress(counts)`` is told the counts so far after each page (not yet committed:
        the import is all or nothing)."""
        return portability.import_file(self.ctx, Path(path), check_user(user), strict=check_flag(strict, "strict"),
                                       on_page=on_progress)

    def stats(self, *, user: str | None = None) -> dict[str, Any]:
        """Counts per user (every user without ``user``)."""
        return curation.stats(self.ctx, [check_user(user)] if user else self.store.users())

    def delete_user(self, *, user: str, confirm: str, purge: bool = False) -> dict[str, int]:
        """Delete everything of ``user``: every row (facts, episodes, notes, knowledge, profile,
        tags, journals, API keys, dream runs) and every file of their folder. Irreversible,
        so ``confirm`` must repeat the user id. Returns what was deleted, by kind.
        ``purge=True`` then rewrites the store so that no byte of what was deleted stays in
        its files (the search index's segments, free pages): slow on a large store, and
        other writers wait meanwhile."""
        user = check_user(user)
        if confirm != user:
            raise InvalidInput(f"confirm must repeat the user id ({user!r}) to delete a whole memory", field="confirm")
        self.learner.forget_user(user)
        deleted = self.store.delete_user(user)
        files = self.files.remove_user(user)
        if files:
            deleted["files"] = files
        if purge:  # last: a purge that cannot finish says so, and the deletion stands
            self.store.purge()
        return deleted

    def users(self) -> list[str]:
        """Every user with something stored."""
        return self.store.users()

    # ------------------------------------------------------------ dream line
    def dream(
        self, *, user: str, days: int | None = None, force: bool = False, background: bool = False,
        on_done: Callable[[DreamRun], Any] | None = None, now: datetime | None = None,
    ) -> DreamRun:
        """Deep Dream: distill the last ``days`` (1..30, default 3) of notes and the facts into
        MEMORY.md and a dream diary. ``background=True`` returns the queued run at once and
        calls ``on_done(run)`` when it ends; poll ``dream_status(run.id)``."""
        return dream.run_dream(self.ctx, check_user(user), days=days, force=force, background=background,
                               on_done=on_done, now=now)

    def dream_status(self, run_id: str | None = None, *, user: str) -> DreamRun:
        """A dream run by id (or the user's latest): status queued/running/done/skipped/failed."""
        run = dream.dream_status(self.ctx, check_user(user), run_id)
        if run is None:
            raise NotFound(f"no dream run {run_id!r} for user {user!r}" if run_id else f"{user!r} has not dreamed yet")
        return run

    def chat_command(
        self, text: str, *, user: str, on_done: Callable[[DreamRun], Any] | None = None
    ) -> ChatReply | None:
        """Handle ``/memory dream [N]`` typed in a chat (in the background); None for other text."""
        return dream.chat_command(self.ctx, text, user=check_user(user), on_done=on_done)

    def notes(
        self, *, user: str, date: str | None = None, since: str | None = None, until: str | None = None
    ) -> list[Note]:
        """Daily-note lines, oldest first: one day, or a range of YYYY-MM-DD dates."""
        first = date if date is not None else since
        last = date if date is not None else until
        return self.store.list_notes(
            check_user(user),
            since=check_date(first, "date" if date is not None else "since") if first is not None else None,
            until=check_date(last, "date" if date is not None else "until") if last is not None else None,
        )

    def diaries(self, *, user: str, date: str | None = None) -> dict[str, str]:
        """Dream diaries by date (YYYY-MM-DD -> markdown), oldest first (:meth:`diary_page`
        reads them a page at a time)."""
        return dream.diaries(self.ctx, check_user(user), check_date(date) if date is not None else None)

    def diary_page(self, *, user: str, after: str | None = None, limit: int = 30) -> Page[tuple[str, str]]:
        """Dream diaries as (date, markdown), the newest day first, ``limit`` (1-366) at a time."""
        return dream.diary_page(self.ctx, check_user(user), after=check_text(after, "after"),
                                limit=curation.check_limit(limit, dream.DIARY_PAGE_LIMIT))

    def memory_md(self, *, user: str) -> str:
        """The text of the user's MEMORY.md ("" before the first dream)."""
        user = check_user(user)
        return self.files.read(user, self.files.memory_md(user)) or ""

    def memory_md_view(self, *, user: str) -> str:
        """MEMORY.md, or before the first dream the profile and consolidated facts rendered
        as it would hold them (nothing is written)."""
        return memory_md.memory_md_view(self.ctx, check_user(user))

    # ------------------------------------------------------------ maintenance
    def consolidate(self, *, user: str, dry_run: bool = False) -> ConsolidateReport:
        """Rule-based dedup (exact + Jaccard); the highest [Nx] stays, the rest is archived."""
        return maintenance.consolidate(self.ctx, user=check_user(user), dry_run=dry_run)

    def tidy(self, *, user: str, dry_run: bool = False, proposal: TidyReport | None = None) -> TidyReport:
        """The engine's cleanup, checked in code; ``dry_run`` returns it (``.diff()``) unapplied."""
        return maintenance.tidy(self.ctx, user=check_user(user), dry_run=dry_run, proposal=proposal)

    def clean(self, *, user: str, dry_run: bool = False, now: datetime | None = None) -> CleanReport:
        """Archive episodes whose weight decayed under the threshold (restorable)."""
        return maintenance.clean(self.ctx, user=check_user(user), dry_run=dry_run, now=now)

    def restore(self, episode_id: str, *, user: str | None = None) -> Episode:
        """Bring back an episode that clean archived."""
        return maintenance.restore(self.ctx, episode_id, user=user)

    def health(self, *, user: str) -> HealthReport:
        """Seed 002's signs of healthy memory and a verdict with reasons."""
        return maintenance.health(self.ctx, user=check_user(user))

    def check_store(self) -> StoreCheck:
        """Read the whole store for damage and for derived data (full-text index, counts) that
        disagrees with the items; what to do if any. Its time grows with the store: run it
        when in doubt (after a crash, a full disk, a copied file), not per request."""
        return maintenance.check_store(self.ctx)

    def sync(self, *, user: str) -> SyncReport:
        """Take hand edits of MEMORY.md (edited, added, deleted lines) into the store. An added
        line that repeats a fact is no new fact: the report's ``duplicates`` names the fact it was merged into."""
        return memory_md.sync(self.ctx, user=check_user(user))

    def migrate_to(
        self, url: str, *, dry_run: bool = False, on_progress: Callable[[str], None] | None = None,
    ) -> MigrateReport:
        """Copy this SQLite home (every user, key, journal and document) into the empty
        PostgreSQL database ``url`` and check the copy (counts, and each user's export);
        ``dry_run`` only counts what would be copied. ``on_progress(step)`` is told each step."""
        return migrate.migrate_home(self.ctx, url, dry_run=dry_run, on_progress=on_progress)

    def save_memory_md(self, text: str, *, user: str, base: str | None = None) -> SyncReport:
        """Write an edited MEMORY.md and :meth:`sync` it. ``base``: the sha256 of the text the
        edit started from; if MEMORY.md changed since, Conflict (nothing is written)."""
        return memory_md.save_memory_md(self.ctx, user=check_user(user), text=text, base=check_text(base, "base"))

    def changes(self, *, user: str, limit: int = 50) -> list[ChangeSet]:
        """Journaled operations (dream, consolidate, tidy, sync, clean, capacity), newest first."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInput("limit must be a positive whole number", field="limit")
        return maintenance.list_changes(self.ctx, user=check_user(user), limit=limit)

    def undo(self, change_id: str, *, user: str) -> UndoReport:
        """Take back a dream, consolidate, tidy, sync, clean or capacity eviction by the id it reported."""
        return maintenance.undo(self.ctx, change_id, user=check_user(user))
