"""``Memory``: the one object an agent holds. Every front door (CLI, REST, MCP) calls it.

    >>> from reverie import Memory
    >>> mem = Memory(home="./mem")
    >>> with mem.turn("I always want the conclusion first", user="ana", thread="t1") as turn:
    ...     prompt_context = turn.context      # the <memory> block for this message
    ...     turn.complete("Noted.")
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import weakref
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from reverie import redact as _redact
from reverie.engines import Engines
from reverie.errors import InvalidInput, NotFound
from reverie.files import UserFiles
from reverie.ingest import Added, skip_known
from reverie.inputs import (
    check_date,
    check_messages,
    check_tags,
    check_text,
    check_time,
    check_unicode,
    check_user,
    clean_fact,
    clean_label,
    clean_text,
    normalize_category,
)
from reverie.learn import Learner
from reverie.models import (
    AREAS,
    FEEDBACK_STATUSES,
    PROFILE_SECTIONS,
    Episode,
    Fact,
    Feedback,
    KnowledgeDoc,
    Message,
    Profile,
    Provenance,
    utcnow,
)
from reverie.recall import Recall, Recaller
from reverie.settings import Settings
from reverie.store import SQLiteStore, Store
from reverie.tags import TagWriter
from reverie.turn import Turn

log = logging.getLogger("reverie")

def frame_owner() -> str:
    """Who holds a pending frame: this host and process (asked each time: a fork has its own pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_alive(owner: str | None) -> bool:
    if not owner or ":" not in owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine's frame: not ours to judge
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return True


class Memory:
    """Long-term memory for one home (a folder with ``reverie.db`` and markdown views)."""

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        settings: Settings | None = None,
        store: Store | None = None,
        background: bool = True,
        **overrides: Any,
    ):
        self.settings = settings or Settings.load(home, **overrides)
        self.home = Path(self.settings.home)
        self.home.mkdir(parents=True, exist_ok=True)
        self.files = UserFiles(self.home)
        self.store = store or SQLiteStore(self.home / "reverie.db", durability=self.settings.durability)
        self.engines = Engines(self.settings)
        self.recaller = Recaller(self)
        self.learner = Learner(self, background=background)
        self._closed = False
        self._recover()
        self._finalizer = weakref.finalize(self, Memory._atexit_close, weakref.ref(self))
        atexit.register(self._finalizer)

    # ------------------------------------------------------------ lifecycle
    def _recover(self) -> None:
        """Frames left pending by a dead process become interrupted; unlearned episodes re-queue."""
        stale = [ep for ep in self.store.pending_frames() if not _owner_alive(ep.owner)]
        if stale:
            with self.store.transaction():
                for ep in stale:
                    ep.status = "interrupted"
                    self.store.put_episode(ep)
            log.info("marked %d frames from a crashed process as interrupted", len(stale))
        if self.learner.background:
            self.learner.requeue_unlearned()

    @staticmethod
    def _atexit_close(ref: "weakref.ref[Memory]") -> None:
        mem = ref()
        if mem is not None:
            mem.close()

    def close(self) -> None:
        """Drain the learning queue, let running background dreams finish, then close the store."""
        from reverie.dream import wait

        if self._closed:
            return
        self._closed = True
        try:
            self.learner.stop(drain=True)
            if not wait(self, timeout=60):
                log.warning("a background dream was still running at close; it will fail")
        finally:
            self.store.close()

    def __enter__(self) -> "Memory":
        return self

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
        """Open a turn: store the pending frame, then recall context for ``message``.

        Use it as a context manager and call ``turn.complete(reply)``; leaving the
        block without it marks the episode interrupted, an exception marks it failed.
        """
        return Turn.open(
            self, message, user=check_user(user), thread=clean_label(thread, "thread") or "default",
            agent=clean_label(agent, "agent"), budget=budget, at=check_time(at, "at"),
        )

    def complete_turn(self, frame_id: str, reply: str, *, user: str | None = None) -> Episode:
        """Phase two of a turn opened elsewhere (the REST and MCP doors use this)."""
        return Turn.resume(self, frame_id, user=user).complete(reply)

    # ------------------------------------------------------------ ingest
    def add(
        self,
        messages: Iterable[dict | Message | str],
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
        user = check_user(user)
        thread, agent = clean_label(thread, "thread") or "default", clean_label(agent, "agent")
        at = check_time(at, "at")
        msgs = [self._message(m, i, at) for i, m in enumerate(check_messages(messages))]
        if not msgs:
            raise InvalidInput("messages is empty: nothing to add", field="messages")
        groups = _group(msgs, group)
        now = utcnow()
        with self.store.transaction():
            fresh = skip_known(self.store, user, thread, groups)
            episodes = Added(skipped=fresh.skipped, skipped_messages=fresh.skipped_messages)
            for group_msgs, keys in zip(fresh.groups, fresh.keys):
                first = group_msgs[0]
                ids = [m.source_id for m in group_msgs if m.source_id]
                ep = Episode(
                    user=user,
                    agent=agent,
                    thread=thread,
                    created_at=now,
                    completed_at=now,
                    occurred_at=first.at or now,
                    status="completed",
                    user_text=first.content,
                    reply_text="\n".join(_line(m) for m in group_msgs[1:]),
                    messages=group_msgs,
                    source_ids=ids + ([source] if source else []),
                )
                self.store.put_episode(ep)
                self.store.put_inputs(user, thread, ep.id, keys)
                episodes.append(ep)
        if fresh.skipped_messages:
            log.info("add: %d episodes (%d messages) of %s/%s were stored already", fresh.skipped,
                     fresh.skipped_messages, user, thread)
        self.learner.enqueue(episodes)
        return episodes

    def _message(self, raw: Any, index: int, at: datetime | None) -> Message:
        field = f"messages[{index}]"
        if isinstance(raw, Message):
            data = raw.model_dump()
        elif isinstance(raw, str):
            data = {"role": "user", "content": raw}
        elif isinstance(raw, dict):
            data = dict(raw)
            data.setdefault("content", data.pop("text", None))
            if "source_id" not in data:
                data["source_id"] = data.pop("dia_id", None) or data.pop("id", None)
        else:
            raise InvalidInput(f"{field} must be an object with content, not {type(raw).__name__}", field=field)
        content = data.get("content")
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput(f"{field}.content is missing or empty", field=f"{field}.content")
        role = data.get("role") or ("user" if not data.get("speaker") else "speaker")
        when = check_time(data.get("at"), f"{field}.at") or at
        return Message(
            role=clean_label(str(role), f"{field}.role"),
            speaker=clean_label(data.get("speaker"), f"{field}.speaker"),
            content=clean_text(content, f"{field}.content"),
            at=when,
            source_id=str(data["source_id"]) if data.get("source_id") else None,
        )

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
        """Store a fact a person vouches for (consolidated at once). A near-duplicate of an
        existing fact reinforces that fact instead of adding a second."""
        user = check_user(user)
        content = clean_fact(content, "content", self.settings.max_fact_chars)
        category, original = normalize_category(category)
        if area is not None and area not in AREAS:
            raise InvalidInput(f"area must be one of {', '.join(AREAS)}", field="area")
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
            raise InvalidInput("confidence must be a number between 0 and 1", field="confidence")
        fact = Fact(
            user=user,
            agent=clean_label(agent, "agent"),
            content=content,
            category=category,
            original_category=original,
            area=area or ("General" if category == "preference" else None),
            confidence=float(confidence),
            status="consolidated",
            provenance=Provenance(origin="manual"),
        )
        with self.store.transaction():
            stored = self.learner.add_fact(TagWriter(self.store, user), fact, check_tags(tags))
            if stored is not fact and stored.status == "pending":
                stored.status = "consolidated"  # a person vouched for it: promote
                self.store.put_fact(stored)
        return stored

    def facts(
        self,
        *,
        user: str,
        status: str | None = None,
        category: str | None = None,
        agent: str | None = None,
    ) -> list[Fact]:
        """Facts, most used first. ``status`` is pending, consolidated or archived
        (default: pending and consolidated)."""
        if status is not None and status not in ("pending", "consolidated", "archived"):
            raise InvalidInput("status must be pending, consolidated or archived", field="status")
        facts = self.store.list_facts(
            check_user(user), status=status, category=check_text(category, "category"), agent=check_text(agent, "agent")
        )
        return sorted(facts, key=lambda f: (-f.uses, -f.confidence, f.created_at))

    def fact(self, fact_id: str, *, user: str | None = None) -> Fact:
        fact = self.store.get_fact(check_text(fact_id, "id") or "")
        if fact is None or (user is not None and fact.user != user):
            raise NotFound(f"no fact {fact_id!r}" + (f" for user {user!r}" if user else ""))
        return fact

    def update_fact(self, fact_id: str, *, user: str | None = None, **changes: Any) -> Fact:
        """Edit a fact's content, category, area, confidence or status."""
        fact = self.fact(fact_id, user=user)
        allowed = {"content", "category", "area", "confidence", "status"}
        unknown = set(changes) - allowed
        if unknown:
            raise InvalidInput(f"cannot change {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
        if changes.get("content") is not None:
            fact.content = clean_fact(changes["content"], "content", self.settings.max_fact_chars)
        if changes.get("category") is not None:
            fact.category, fact.original_category = normalize_category(changes["category"])
        if changes.get("area") is not None:
            if changes["area"] not in AREAS:
                raise InvalidInput(f"area must be one of {', '.join(AREAS)}", field="area")
            fact.area = changes["area"]
        if changes.get("confidence") is not None:
            value = changes["confidence"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise InvalidInput("confidence must be a number between 0 and 1", field="confidence")
            fact.confidence = float(changes["confidence"])
        if changes.get("status") is not None:
            if changes["status"] not in ("pending", "consolidated", "archived"):
                raise InvalidInput("status must be pending, consolidated or archived", field="status")
            fact.status = changes["status"]
        fact.updated_at = utcnow()
        with self.store.transaction():
            self.learner.index_fact(fact, fact.tags)
        return fact

    def forget(self, fact_id: str, *, user: str | None = None, hard: bool = False) -> Fact:
        """Archive a fact (reversible: ``update_fact(id, status="consolidated")``);
        ``hard=True`` deletes it for good."""
        fact = self.fact(fact_id, user=user)
        with self.store.transaction():
            if hard:
                self.store.delete_fact(fact.id)
            else:
                self.learner.archive_fact(fact, "forgotten", None, utcnow())
        return fact

    def reinforce(self, fact_id: str, *, user: str | None = None) -> Fact:
        """``[Nx]`` + 1 (seed 002); a pending fact reinforced by hand is promoted."""
        fact = self.fact(fact_id, user=user)
        if fact.status == "archived":
            raise InvalidInput(f"fact {fact_id} is archived; restore it before reinforcing", field="id")
        with self.store.transaction():
            fact.status = "consolidated"
            return self.learner.reinforce_fact(fact, [], utcnow())

    # ------------------------------------------------------------ profile, episodes, knowledge
    def profile(self, *, user: str) -> Profile:
        return self.store.get_profile(check_user(user))

    def set_profile(self, section: str, summary: str, *, user: str) -> Profile:
        """Set one profile section by hand, e.g. ``set_profile("user.cognitiveStyle", ...)``."""
        user = check_user(user)
        if section not in PROFILE_SECTIONS:
            raise InvalidInput(f"unknown profile section {section!r}; one of {', '.join(PROFILE_SECTIONS)}", field="section")
        if not isinstance(summary, str):
            raise InvalidInput("summary must be text", field="summary")
        check_unicode(summary, "summary")
        with self.store.transaction():
            self.store.put_profile_section(user, section, _redact.redact(summary.strip()), utcnow())
        return self.store.get_profile(user)

    def episodes(
        self,
        *,
        user: str,
        thread: str | None = None,
        status: str | None = None,
        limit: int | None = 50,
        archived: bool | None = False,
    ) -> list[Episode]:
        """Episodes of a user, newest first."""
        if status is not None and status not in ("pending", "completed", "interrupted", "failed"):
            raise InvalidInput("status must be pending, completed, interrupted or failed", field="status")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidInput("limit must be a positive whole number", field="limit")
        return self.store.list_episodes(
            check_user(user), thread=check_text(thread, "thread"), status=status, limit=limit, archived=archived
        )

    def episode(self, episode_id: str, *, user: str | None = None) -> Episode:
        ep = self.store.get_episode(check_text(episode_id, "id") or "")
        if ep is None or (user is not None and ep.user != user):
            raise NotFound(f"no episode {episode_id!r}" + (f" for user {user!r}" if user else ""))
        return ep

    def feedback(self, episode_id: str, status: str, *, reason: str = "", user: str | None = None) -> Episode:
        """How a recalled episode worked out: confirmed (ranked up), rejected (never
        recalled again), ignored or partial."""
        if status not in FEEDBACK_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(FEEDBACK_STATUSES)}", field="status")
        with self.store.transaction():
            ep = self.episode(episode_id, user=user)
            ep.feedback = Feedback(status=status, reason=_redact.redact(check_text(reason, "reason") or ""))
            self.store.put_episode(ep, reindex=False)
        return ep

    def add_knowledge(
        self, title: str, body: str, *, user: str, tags: list[str] | None = None, scope: str = "global",
        agent: str | None = None, project: str | None = None,
    ) -> KnowledgeDoc:
        """A whole markdown document (a reusable pattern), recalled when matched."""
        if scope not in ("global", "agent", "project"):
            raise InvalidInput("scope must be global, agent or project", field="scope")
        tags = check_tags(tags)
        doc = KnowledgeDoc(
            user=check_user(user), title=clean_text(title, "title"), body=clean_text(body, "body"),
            tags=tags or [], scope=scope, agent=clean_label(agent, "agent"), project=clean_label(project, "project"),
        )
        with self.store.transaction():
            self.learner.index_knowledge(doc)
        return doc

    def knowledge(self, *, user: str) -> list[KnowledgeDoc]:
        return self.store.list_knowledge(check_user(user))

    # ------------------------------------------------------------ tags
    def tags(self, *, user: str, status: str | None = None) -> list[dict[str, Any]]:
        """The tag dictionary with item counts and relations."""
        user = check_user(user)
        tags = self.store.list_tags(user, status=status)
        counts = self.store.tag_counts(user)
        relations: dict[str, list[dict[str, str]]] = {}
        for rel in self.store.relations(user, [t.name for t in tags]):
            relations.setdefault(rel.source, []).append({"target": rel.target, "level": rel.level})
        return [
            {
                "name": t.name, "status": t.status, "dimension": t.dimension, "merged_to": t.merged_to,
                "items": counts.get(t.name, 0), "relations": relations.get(t.name, []),
            }
            for t in tags
        ]

    def merge_tags(self, old: str, new: str, *, user: str) -> int:
        """A person's explicit merge: OLD's items move to NEW; OLD stays as a redirect."""
        for name, field in ((old, "old"), (new, "new")):
            if not isinstance(name, str) or not name.strip():
                raise InvalidInput(f"{field} must be a tag name", field=field)
        return TagWriter(self.store, check_user(user)).merge(old, new)

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
        """The ``<memory>`` block for ``query`` within ``budget`` tokens, and why each item is in it."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty: recall needs the new message", field="query")
        check_unicode(query, "query")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise InvalidInput("budget must be a positive number of tokens", field="budget")
        return self.recaller.recall(
            query, user=check_user(user), budget=budget or self.settings.budget, thread=check_text(thread, "thread"),
            agent=check_text(agent, "agent"), at=check_time(at, "at"), explain=explain, track=track,
        )

    def flush(self, *, user: str | None = None) -> int:
        """Learn from everything queued now instead of after the debounce; returns episodes learned."""
        return self.learner.flush(user=user)

    # ------------------------------------------------------------ export / import
    def export(self, *, user: str) -> dict:
        from reverie.portability import export_user

        return export_user(self, check_user(user))

    def import_(self, data: dict | str, *, user: str) -> dict:
        """Import an export envelope (or a deer-flow memory.json): strict about the
        envelope, lenient inside it; all or nothing."""
        from reverie.portability import import_user

        return import_user(self, data, check_user(user))

    # ------------------------------------------------------------ stats
    def stats(self, *, user: str | None = None) -> dict[str, Any]:
        users = [check_user(user)] if user else self.store.users()
        out: dict[str, Any] = {"home": str(self.home), "schema_version": self.store.schema_version(), "users": {}}
        for name in users:
            eps = self.store.list_episodes(name, archived=None)
            facts = self.store.list_facts(name, status=("pending", "consolidated", "archived"))
            out["users"][name] = {
                "episodes": len(eps),
                "episodes_by_status": _count(e.status for e in eps),
                "facts": len(facts),
                "facts_by_status": _count(f.status for f in facts),
                "notes": len(self.store.list_notes(name)),
                "knowledge": len(self.store.list_knowledge(name)),
                "tags": _count(t.status for t in self.store.list_tags(name)),
                "threads": sorted({e.thread for e in eps}),
            }
        return out

    # ------------------------------------------------------------ dream line and maintenance
    # (thin wrappers over reverie.dream and reverie.maintenance; keep logic there)
    def trim(
        self, messages: Iterable[dict | Message | str], *, user: str, thread: str = "default",
        at: datetime | None = None,
    ) -> list:
        """The host agent dropped these messages from its context window: they become
        daily-note lines (summarized, redacted) for the day they happened."""
        from reverie import dream

        return dream.trim(self, check_messages(messages), user=check_user(user), thread=thread, at=check_time(at, "at"))

    def dream(
        self, *, user: str, days: int | None = None, force: bool = False, background: bool = False,
        on_done: Any = None, now: datetime | None = None,
    ) -> Any:
        """Deep Dream: distill the last ``days`` (1..30, default 3) of notes and the facts into
        MEMORY.md and a dream diary. ``background=True`` returns the queued run at once and
        calls ``on_done(run)`` when it ends; poll ``dream_status(run.id)``."""
        from reverie import dream

        return dream.run_dream(
            self, check_user(user), days=days, force=force, background=background, on_done=on_done, now=now
        )

    def dream_status(self, run_id: str | None = None, *, user: str) -> Any:
        """A dream run by id (or the user's latest): status queued/running/done/skipped/failed."""
        from reverie import dream

        run = dream.dream_status(self, check_user(user), run_id)
        if run is None:
            raise NotFound(f"no dream run {run_id!r} for user {user!r}" if run_id else f"{user!r} has not dreamed yet")
        return run

    def chat_command(self, text: str, *, user: str, on_done: Any = None) -> Any:
        """Handle ``/memory dream [N]`` typed in a chat (in the background); None for other text."""
        from reverie import dream

        return dream.chat_command(self, text, user=check_user(user), on_done=on_done)

    def notes(
        self, *, user: str, date: str | None = None, since: str | None = None, until: str | None = None
    ) -> list:
        """Daily-note lines, oldest first: one day, or a range of YYYY-MM-DD dates."""
        since = check_date(date, "date") if date is not None else (check_date(since, "since") if since is not None else None)
        until = check_date(date, "date") if date is not None else (check_date(until, "until") if until is not None else None)
        return self.store.list_notes(check_user(user), since=since, until=until)

    def diaries(self, *, user: str, date: str | None = None) -> dict[str, str]:
        """Dream diaries by date (YYYY-MM-DD -> markdown), oldest first."""
        from reverie import dream

        return dream.diaries(self, check_user(user), check_date(date) if date is not None else None)

    def memory_md(self, *, user: str) -> str:
        """The text of the user's MEMORY.md ("" before the first dream)."""

        user = check_user(user)
        return self.files.read(user, self.files.memory_md(user)) or ""

    def consolidate(self, *, user: str, dry_run: bool = False) -> Any:
        """Rule-based dedup (exact + Jaccard); the highest [Nx] stays, the rest is archived."""
        from reverie import maintenance

        return maintenance.consolidate(self, user=check_user(user), dry_run=dry_run)

    def tidy(self, *, user: str, dry_run: bool = False, proposal: Any = None) -> Any:
        """The engine's cleanup, checked in code; ``dry_run`` returns it (``.diff()``) unapplied."""
        from reverie import maintenance

        return maintenance.tidy(self, user=check_user(user), dry_run=dry_run, proposal=proposal)

    def clean(self, *, user: str, dry_run: bool = False, now: datetime | None = None) -> Any:
        """Archive episodes whose weight decayed under the threshold (restorable)."""
        from reverie import maintenance

        return maintenance.clean(self, user=check_user(user), dry_run=dry_run, now=now)

    def restore(self, episode_id: str, *, user: str | None = None) -> Episode:
        """Bring back an episode that clean archived."""
        from reverie import maintenance

        return maintenance.restore(self, episode_id, user=user)

    def health(self, *, user: str) -> Any:
        """Seed 002's signs of healthy memory and a verdict with reasons."""
        from reverie import maintenance

        return maintenance.health(self, user=check_user(user))

    def sync(self, *, user: str) -> Any:
        """Take hand edits of MEMORY.md (edited, added, deleted lines) into the store."""
        from reverie import maintenance

        return maintenance.sync(self, user=check_user(user))

    def undo(self, change_id: str, *, user: str) -> Any:
        """Take back a dream, consolidate, tidy, sync or clean by the id it reported."""
        from reverie import maintenance

        return maintenance.undo(self, change_id, user=check_user(user))


def _count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _line(message: Message) -> str:
    return f"{message.speaker}: {message.content}" if message.speaker else message.content


def _group(messages: list[Message], mode: str) -> list[list[Message]]:
    """Exchanges: a new group starts at each message from the side that opened the
    conversation, once the other side has spoken."""
    if mode == "message":
        return [[m] for m in messages]
    if mode != "exchange":
        raise InvalidInput("group must be 'exchange' or 'message'", field="group")
    opener = _side(messages[0])
    groups: list[list[Message]] = []
    for m in messages:
        if not groups or (_side(m) == opener and any(_side(x) != opener for x in groups[-1])):
            groups.append([m])
        else:
            groups[-1].append(m)
    return groups


def _side(message: Message) -> str:
    return message.speaker or message.role

