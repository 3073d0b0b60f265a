"""Turns: seed 003's two-phase write. A turn is pending from the user's message until the
reply completes it; leaving it without a reply marks it interrupted, an exception failed.

A turn still without its reply ``reply_timeout_seconds`` after it opened is closed with the
user's message alone (:mod:`reverie.unanswered`); a reply that comes later is still taken
(:meth:`Turn.complete`).

One word for one thing: a *turn* is what the API (``Memory.turn``,
``complete_turn(turn_id)``), REST (``/api/turns/{turn_id}``), MCP
(``process_message`` -> ``turn_id``, ``save_memory(turn_id)``) and the store
(``pending_turns``) call it; once completed it is stored as an :class:`Episode`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from datetime import datetime
from types import TracebackType

from reverie.errors import Conflict, NotFound
from reverie.inputs import MAX_TAGS, Secrets, clean_text, clean_text_and_secrets, fit_label, without_secrets
from reverie.learn import Learner
from reverie.models import Episode, EpisodeStatus, Message, Perception, as_utc, utcnow
from reverie.owners import owner_alive
from reverie.owners import process_owner as turn_owner
from reverie.recall import Recall, Recaller
from reverie.store.base import Store
from reverie.unanswered import UNANSWERED

log = logging.getLogger("reverie.turn")

# the secrets redaction took out of an open turn's message, for its reply ("Saved Geheim!42 for
# you"), in this process's memory only, never stored: whichever object of this process completes
# the turn (the REST and MCP doors resume it by id) takes them out of the reply too. The newest
# HELD_TURNS turns' at most, for HELD_SECONDS at most; a reply sent later, or to another process
# (a replica), is redacted on its own
HELD_TURNS = 1024
HELD_SECONDS = 3600.0
_held: OrderedDict[str, tuple[float, Secrets]] = OrderedDict()
_held_lock = threading.Lock()


def _hold(turn_id: str, secrets: Secrets) -> None:
    with _held_lock:
        _held[turn_id] = (time.monotonic(), secrets)
        _forget_old()


def _held_for(turn_id: str) -> Secrets:
    with _held_lock:
        _forget_old()
        return _held.pop(turn_id, (0.0, {}))[1]


def _forget_old() -> None:
    """(under the lock) Drops what is past HELD_TURNS or HELD_SECONDS, oldest first."""
    stale = time.monotonic() - HELD_SECONDS
    while _held and (len(_held) > HELD_TURNS or next(iter(_held.values()))[0] < stale):
        _held.popitem(last=False)


def recover_turns(store: Store) -> int:
    """Turns left pending by a dead process become interrupted (start-up recovery); returns
    how many. Turns of live processes are left alone."""
    stale = [ep for ep in store.pending_turns() if not owner_alive(ep.owner)]
    if stale:
        with store.transaction():
            for ep in stale:
                ep.status, ep.owner = "interrupted", None
                store.put_episode(ep)
        log.info("marked %d turns from a crashed process as interrupted", len(stale))
    return len(stale)


class Turn:
    """One exchange in progress. ``context`` is the memory block to give the model."""

    def __init__(self, store: Store, learner: Learner, episode: Episode, recall: Recall | None = None):
        self._store = store
        self._learner = learner
        self.episode = episode
        self.recall = recall

    @property
    def id(self) -> str:
        return self.episode.id

    @property
    def context(self) -> str:
        return self.recall.context if self.recall else ""

    @property
    def route(self) -> str:
        return self.recall.perception.route if self.recall else "shallow"

    @classmethod
    def open(
        cls,
        store: Store,
        recaller: Recaller,
        learner: Learner,
        message: str,
        *,
        user: str,
        thread: str,
        agent: str | None,
        budget: int,
        at: datetime | None,
    ) -> "Turn":
        text, secrets = clean_text_and_secrets(message, "message")
        when = as_utc(at) if at else utcnow()
        episode = Episode(
            user=user,
            agent=agent,
            thread=thread or "default",
            created_at=utcnow(),
            occurred_at=when,
            user_text=text,
            messages=[Message(role="user", content=text, at=when)],
            owner=turn_owner(),
        )
        # the turn lands before anything else can fail: a crash from here on leaves
        # a pending episode that start-up recovery marks interrupted, never lost
        with store.transaction():
            store.put_episode(episode)
        if secrets:
            _hold(episode.id, secrets)
        recall = recaller.recall(text, user=user, budget=budget, thread=None, agent=agent, at=at,
                                 explain=False, track=True)
        episode.perception = stored_perception(recall.perception)
        episode.scene, episode.sub_scene = episode.perception.scene, episode.perception.sub_scene
        with store.transaction():
            current = store.get_episode(episode.id)
            if current is not None and current.status == "pending":
                store.put_episode(episode)
        return cls(store, learner, episode, recall)

    @classmethod
    def resume(cls, store: Store, learner: Learner, turn_id: str, *, user: str | None = None) -> "Turn":
        episode = store.get_episode(turn_id)
        if episode is None or (user is not None and episode.user != user):
            raise NotFound(f"no turn {turn_id!r}" + (f" for user {user!r}" if user else ""))
        return cls(store, learner, episode)

    def complete(self, reply: str) -> Episode:
        """Phase two: store the reply; the learning line fills summary, overview and tags.

        A turn left interrupted (the process that opened it stopped, a server restarted
        between the message and the reply, a ``with`` block left without a reply) takes its
        reply when it comes: the user's message is kept, learned and recalled with it. So
        does a turn closed without its reply (``reply_timeout_seconds``): the reply is stored
        and searched with it (``meta["unanswered"]`` becomes "late"); if the user's message
        was learned alone already, the reply is not learned again. A turn completed with a
        reply, or failed, is a Conflict."""
        text = without_secrets(clean_text(reply, "reply"), _held_for(self.episode.id))
        with self._store.transaction():
            current = self._store.get_episode(self.episode.id)
            if current is None:
                raise NotFound(f"no turn {self.episode.id!r}")
            late = current.status == "completed" and current.meta.get(UNANSWERED) is True
            if current.status not in ("pending", "interrupted") and not late:
                raise Conflict(f"turn {current.id} is already {current.status}")
            current.reply_text = text
            current.messages.append(Message(role="assistant", content=text, at=utcnow()))
            if late:
                current.meta = {**current.meta, UNANSWERED: "late"}
            else:
                current.status = "completed"
                current.completed_at = utcnow()
                current.owner = None
            self._store.put_episode(current)
        self.episode = current
        if not current.learned:
            self._learner.enqueue([current])
        return current

    def _close(self, status: EpisodeStatus) -> None:
        with self._store.transaction():
            current = self._store.get_episode(self.episode.id)
            if current is not None and current.status == "pending":
                current.status = status
                current.owner = None
                self._store.put_episode(current)
                self.episode = current

    def __enter__(self) -> "Turn":
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.episode.status == "pending":
            # an exception of the agent's is a failed turn; a cancelled task (a client gone,
            # a timeout), an interrupt or an exit only interrupted it: its reply may still come,
            # and without one it is learned from the user's message (reverie.unanswered)
            self._close("failed" if exc_type is not None and issubclass(exc_type, Exception) else "interrupted")


def stored_perception(p: Perception) -> Perception:
    """A perception as an episode keeps it: an engine's labels redacted and short, as every
    write path holds what it stores (an endpoint may answer a scene holding an email)."""
    return p.model_copy(update={
        "scene": fit_label(p.scene) or "general", "sub_scene": fit_label(p.sub_scene), "intent": fit_label(p.intent),
        "emotion": fit_label(p.emotion), "keyphrases": [fit_label(k) for k in p.keyphrases[:MAX_TAGS]],
        "tags": [fit_label(t) for t in p.tags[:MAX_TAGS]],
        "time_refs": [r.model_copy(update={"text": fit_label(r.text)}) for r in p.time_refs[:MAX_TAGS]],
    })
