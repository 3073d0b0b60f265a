"""What the REST and MCP doors answer for the same operation: one shape each."""

from __future__ import annotations

from pydantic import BaseModel, Field

from reverie.models import Episode
from reverie.turn import Turn


class TurnOpened(BaseModel):
    """Phase one of a turn: its id, and the memory context to put in front of the answer."""

    turn_id: str = Field(description="Complete the turn with this id once the reply is written.")
    route: str = Field(description="shallow, medium or deep: how much memory the message called for.")
    scene: str = ""
    intent: str = ""
    tags: list[str] = Field(default_factory=list)
    has_memory: bool = False
    context: str = Field("", description="The <memory> block for the message.")

    @classmethod
    def of(cls, turn: Turn) -> "TurnOpened":
        p = turn.recall.perception if turn.recall else None
        return cls(
            turn_id=turn.id, route=turn.route, scene=p.scene if p else "", intent=p.intent if p else "",
            tags=list(p.tags) if p else [], has_memory=bool(turn.context), context=turn.context,
        )


class TurnCompleted(BaseModel):
    """Phase two of a turn: stored as a completed episode, queued for learning."""

    turn_id: str
    status: str

    @classmethod
    def of(cls, episode: Episode) -> "TurnCompleted":
        return cls(turn_id=episode.id, status=episode.status)
