"""What the REST and MCP doors take and answer for the same operation: one shape each."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, with_config
from typing_extensions import TypedDict

from reverie.models import Episode
from reverie.unanswered import UNANSWERED
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
    # the turn had been closed without its reply (reply_timeout_seconds) and learned from the
    # user's message alone; the reply is stored and searched with it
    late: bool = False

    @classmethod
    def of(cls, episode: Episode) -> "TurnCompleted":
        return cls(turn_id=episode.id, status=episode.status, late=episode.meta.get(UNANSWERED) == "late")


# a TypedDict, not a model: a message that is not an object is refused as "a valid dictionary",
# without the name of a class the caller never sees
@with_config(ConfigDict(extra="forbid"))
class MessageIn(TypedDict, total=False):
    """A message of a past conversation: its text in ``content`` (or ``text``), who said it in
    ``role`` and / or ``speaker``, when in ``at`` (or ``timestamp``, ``created_at``, ``time``),
    its id in the source in ``source_id`` (or ``dia_id``, ``id``). Any other field is named as
    unknown: a misspelled one would otherwise be dropped (``timestmp``: dated now)."""

    role: Any
    speaker: Any
    content: Any
    text: Any
    at: Any
    timestamp: Any
    created_at: Any
    time: Any
    source_id: Any
    dia_id: Any
    id: Any


def raw_messages(messages: list[MessageIn]) -> list[dict[str, Any]]:
    """The messages as the library reads them: a field sent as null is a field not sent."""
    return [{name: value for name, value in m.items() if value is not None} for m in messages]


class FieldError(BaseModel):
    """One refused part of a request: where and why, never the value sent (it may be a
    secret the caller mistyped, and answers end up in logs)."""

    loc: list[str | int] = Field(description="Where: body, query or path, then the field's path.")
    msg: str
    type: str = Field(description="pydantic's error type, e.g. missing, extra_forbidden, int_parsing.")


class ErrorAnswer(BaseModel):
    """Every error answer of the REST door, whatever its status."""

    detail: str = Field(description="One line: the field first, then what is wrong and what to do.")
    field: str | None = Field(None, description="The field at fault (body, after, content, ...), when one is.")
    errors: list[FieldError] | None = Field(None, description="With a 422: each refused part of the request.")
