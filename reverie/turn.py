"""The two-phase write of seed 003: a pending frame on the message, completed on the reply."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from reverie.errors import Conflict, NotFound
from reverie.inputs import clean_text
from reverie.models import Episode, Message, as_utc, utcnow

if TYPE_CHECKING:
    from reverie.memory import Memory
    from reverie.recall import Recall


class Turn:
    """One exchange in progress. ``context`` is the memory block to give the model."""

    def __init__(self, memory: "Memory", episode: Episode, recall: "Recall | None" = None):
        self._memory = memory
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
        memory: "Memory",
        message: str,
        *,
        user: str,
        thread: str,
        agent: str | None,
        budget: int | None,
        at: datetime | None,
    ) -> "Turn":
        from reverie.memory import frame_owner

        text = clean_text(message, "message")
        when = as_utc(at) if at else utcnow()
        episode = Episode(
            user=user,
            agent=agent,
            thread=thread or "default",
            created_at=utcnow(),
            occurred_at=when,
            user_text=text,
            messages=[Message(role="user", content=text, at=when)],
            owner=frame_owner(),
        )
        # the frame lands before anything else can fail: a crash from here on leaves
        # a pending episode that start-up recovery marks interrupted, never lost
        with memory.store.transaction():
            memory.store.put_episode(episode)
        recall = memory.recall(text, user=user, budget=budget, thread=None, agent=agent, at=when)
        episode.perception = recall.perception
        episode.scene, episode.sub_scene = recall.perception.scene, recall.perception.sub_scene
        with memory.store.transaction():
            current = memory.store.get_episode(episode.id)
            if current is not None and current.status == "pending":
                memory.store.put_episode(episode)
        return cls(memory, episode, recall)

    @classmethod
    def resume(cls, memory: "Memory", frame_id: str, *, user: str | None = None) -> "Turn":
        episode = memory.store.get_episode(frame_id)
        if episode is None or (user is not None and episode.user != user):
            raise NotFound(f"no turn {frame_id!r}" + (f" for user {user!r}" if user else ""))
        return cls(memory, episode)

    def complete(self, reply: str) -> Episode:
        """Phase two: store the reply; the learning line fills summary, overview and tags."""
        text = clean_text(reply, "reply")
        with self._memory.store.transaction():
            current = self._memory.store.get_episode(self.episode.id)
            if current is None:
                raise NotFound(f"no turn {self.episode.id!r}")
            if current.status != "pending":
                raise Conflict(f"turn {current.id} is already {current.status}")
            current.reply_text = text
            current.messages.append(Message(role="assistant", content=text, at=utcnow()))
            current.status = "completed"
            current.completed_at = utcnow()
            current.owner = None
            self._memory.store.put_episode(current)
        self.episode = current
        self._memory.learner.enqueue([current])
        return current

    def _close(self, status: str) -> None:
        with self._memory.store.transaction():
            current = self._memory.store.get_episode(self.episode.id)
            if current is not None and current.status == "pending":
                current.status = status  # type: ignore[assignment]
                current.owner = None
                self._memory.store.put_episode(current)
                self.episode = current

    def __enter__(self) -> "Turn":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.episode.status == "pending":
            self._close("failed" if exc_type else "interrupted")
