"""The typed shapes that cross reverie's boundaries.

Everything a caller gets back from :class:`reverie.Memory` is one of these
pydantic models, so the CLI, the REST server and the MCP server all speak the
same shapes.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from datetime import date, datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import TzInfo

from reverie.errors import InvalidInput

EpisodeStatus = Literal["pending", "completed", "interrupted", "failed"]
FactStatus = Literal["pending", "consolidated", "archived"]
Route = Literal["shallow", "medium", "deep"]
FeedbackStatus = Literal["confirmed", "rejected", "ignored", "partial"]
TagStatus = Literal["unexamined", "active", "deprecated", "merged"]
TagDimension = Literal["content", "task", "constraint"]
RelationLevel = Literal["loose", "related", "synonym"]
KnowledgeScope = Literal["global", "agent", "project"]
Origin = Literal["learned", "manual", "import", "dream", "sync"]

CATEGORIES: tuple[str, ...] = (
    "preference",
    "correction",
    "context",
    "goal",
    "behavior",
    "identity",
    "constraint",
    "decision",
    "cognitive",
    "knowledge",
    "other",
)
AREAS: tuple[str, ...] = ("Communication", "Code", "Tools", "Workflow", "General")
FEEDBACK_STATUSES: tuple[str, ...] = ("confirmed", "rejected", "ignored", "partial")
USER_SECTIONS: tuple[str, ...] = ("workContext", "personalContext", "topOfMind", "cognitiveStyle")
HISTORY_SECTIONS: tuple[str, ...] = ("recentMonths", "earlierContext", "longTermBackground")
PROFILE_SECTIONS: tuple[str, ...] = tuple(f"user.{s}" for s in USER_SECTIONS) + tuple(
    f"history.{s}" for s in HISTORY_SECTIONS
)


def check_section(section: object) -> str:
    """One of :data:`PROFILE_SECTIONS` (InvalidInput otherwise): a store reads no other
    name, so a write under another would be lost without a word."""
    if section not in PROFILE_SECTIONS:
        raise InvalidInput(f"unknown profile section {str(section)[:60]!r}; one of {', '.join(PROFILE_SECTIONS)}",
                           field="section")
    return str(section)


_DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def check_day(value: object) -> str:
    """A real calendar day written ``YYYY-MM-DD`` (ValueError otherwise). Dates name files."""
    if not isinstance(value, str) or not _DAY_RE.fullmatch(value):
        raise ValueError(f"{str(value)[:40]!r} is not a date written YYYY-MM-DD")
    try:
        date.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a real calendar day") from exc
    return value


# the roles of messages the agent's side wrote: never what the user said
AGENT_ROLES = frozenset({"assistant", "agent", "bot", "system", "tool"})


def speaks_for_profile(message: Message, speakers: int) -> bool:
    """Whether ``message`` may change the user's profile, which describes one person: a line
    marked as the user's (role ``user``), or any line of a talk with at most one named
    ``speakers`` (the user's own). In a talk among several named people where none is marked
    as the user ("Jon: I'm a banker", "Gina: I run a store"), no one of them is known to be
    the user: what each says is learned as facts that name them, and the profile is left alone."""
    return message.role not in AGENT_ROLES and (message.role == "user" or speakers <= 1)
# the steps an engine does, each configurable on its own (settings.engines)
ENGINE_STEPS: tuple[str, ...] = ("perceive", "extract", "summarize", "distill", "tidy", "govern_tags")

# how a profile section is labelled wherever a person or a model reads it (the <memory>
# block, MEMORY.md): deer-flow's names, "Thinking Style" included
PROFILE_LABELS: dict[str, str] = {
    "user.workContext": "Work Context",
    "user.personalContext": "Personal Context",
    "user.topOfMind": "Top Of Mind",
    "user.cognitiveStyle": "Thinking Style",
    "history.recentMonths": "Recent Months",
    "history.earlierContext": "Earlier Context",
    "history.longTermBackground": "Long-Term Background",
}
# the largest token budget a recall takes (the <memory> block of a 128k-token context at most)
MAX_BUDGET = 100_000
# seed 003's time decay: a memory's weight falls as exp(-DECAY * days since it last mattered)
DECAY = 0.05


def digest(parts: object) -> str:
    """A stable SHA-256 of JSON-able parts (key order and non-ASCII text do not matter)."""
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str).encode()).hexdigest()


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def new_id(prefix: str) -> str:
    """``<prefix>_`` + the milliseconds since 1970 (12 hex digits) + 48 random bits (12).

    Ids made one after another sort one after another, so every index keyed by an id (a
    table's id, a posting's item, a note's episodes) takes a new row at its right edge:
    a learning batch writes a few pages of each such index, not one page a row at random
    (at 100k episodes, 1,300 of a batch's 4,900 written pages were random id positions).
    Two ids collide only when made in the same millisecond with the same 48 bits; the
    former 64 random bits could collide between any two ids ever made."""
    return f"{prefix}_{time.time_ns() // 1_000_000:012x}{secrets.randbits(48):012x}"


# tzinfo classes of one fixed offset, whose utcoffset needs no datetime
_FIXED_OFFSETS = (timezone, TzInfo)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC so that every stored time compares; other offsets
    are converted (a day is a UTC day). A UTC time is returned as it is: every time read back
    from the store is one, with pydantic's fixed-offset tzinfo, and converting it again cost
    a fifth of reading an episode."""
    tz = value.tzinfo
    if tz is timezone.utc:
        return value
    if tz is None:
        return value.replace(tzinfo=timezone.utc)
    if type(tz) in _FIXED_OFFSETS and not tz.utcoffset(None):
        return value
    return value.astimezone(timezone.utc)


# every stored time compares with every other: naive inputs are taken as UTC
Timestamp = Annotated[datetime, AfterValidator(as_utc)]


class Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")



class Message(Model):
    """One message of a conversation, as given to :meth:`Memory.add`."""

    role: str = "user"
    speaker: str | None = None
    content: str
    at: Timestamp | None = None
    source_id: str | None = None


class TimeRef(Model):
    """A time the message refers to ("last week", "in May 2023", "去年")."""

    text: str
    start: Timestamp
    end: Timestamp
    # said relative to the moment of speaking ("last weekend", "yesterday", "3 days ago"):
    # the same words in a message of another day meant another time
    relative: bool = False


class Perception(Model):
    """What the recall line understood about a message before matching."""

    route: Route = "shallow"
    scene: str = "general"
    sub_scene: str = ""
    intent: str = "chat"
    emotion: str = "neutral"
    time_refs: list[TimeRef] = Field(default_factory=list)
    keyphrases: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


class Feedback(Model):
    status: FeedbackStatus
    reason: str = ""
    at: Timestamp = Field(default_factory=utcnow)


class Episode(Model):
    """One exchange: a user message and the reply, or an ingested message group."""

    id: str = Field(default_factory=lambda: new_id("ep"))
    user: str
    agent: str | None = None
    thread: str = "default"
    created_at: Timestamp = Field(default_factory=utcnow)
    completed_at: Timestamp | None = None
    occurred_at: Timestamp = Field(default_factory=utcnow)
    status: EpisodeStatus = "pending"
    user_text: str = ""
    reply_text: str = ""
    messages: list[Message] = Field(default_factory=list)
    summary: str = ""
    overview: str = ""
    # which of `messages` the summary and the overview were drawn from (indices), so a
    # delivered line names only the turns it actually holds
    summary_from: list[int] = Field(default_factory=list)
    overview_from: list[int] = Field(default_factory=list)
    perception: Perception | None = None
    scene: str = ""
    sub_scene: str = ""
    tags: list[str] = Field(default_factory=list)
    feedback: Feedback | None = None
    source_ids: list[str] = Field(default_factory=list)
    learned: bool = False
    archived: bool = False
    uses: int = 0
    last_used_at: Timestamp | None = None
    # which process holds a pending turn ("host:pid"), so start-up recovery
    # interrupts only turns whose process is gone
    owner: str | None = None
    # what a framework adapter keeps with the episode (the OpenAI Agents session's raw
    # items): stored, exported and returned as given; reverie itself never reads it
    meta: dict[str, Any] = Field(default_factory=dict)

    def sources_of(self, indices: list[int]) -> list[str]:
        """External ids (a LoCoMo dia_id...) of the given messages."""
        picked = (self.messages[i].source_id for i in indices if i < len(self.messages))
        return [source_id for source_id in picked if source_id]


# a fact keeps at most this many episode ids (and as many source ids) in its provenance: the
# first it was learned from and the newest that said it again. A fact said in every other
# conversation otherwise carried thousands (69 KB of JSON at 100k episodes), read, parsed
# and sent with every recall that delivered it and rewritten at every reinforcement
MAX_PROVENANCE = 64
PROVENANCE_FIRST = 8


def _bounded(ids: list[str]) -> tuple[list[str], int]:
    if len(ids) <= MAX_PROVENANCE:
        return ids, 0
    return ids[:PROVENANCE_FIRST] + ids[len(ids) - MAX_PROVENANCE + PROVENANCE_FIRST:], len(ids) - MAX_PROVENANCE


class Provenance(Model):
    """Where a fact came from, so that every delivered line can say why it exists."""

    origin: Origin = "manual"
    episodes: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    source_ids: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)
    # episode ids (and source ids) left out between the first and the newest MAX_PROVENANCE
    episodes_left_out: int = 0
    sources_left_out: int = 0

    def bound(self) -> None:
        """Keep the first PROVENANCE_FIRST and the newest of the episode and source ids, at
        most MAX_PROVENANCE each, counting those left out."""
        self.episodes, dropped = _bounded(self.episodes)
        self.episodes_left_out += dropped
        self.source_ids, dropped = _bounded(self.source_ids)
        self.sources_left_out += dropped


class Fact(Model):
    """One durable line about the user (a Dwsy learning, a deer-flow fact)."""

    id: str = Field(default_factory=lambda: new_id("fact"))
    user: str
    agent: str | None = None
    content: str
    category: str = "other"
    original_category: str | None = None
    area: str | None = None
    confidence: float = 0.8
    uses: int = 0
    status: FactStatus = "pending"
    tags: list[str] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)
    created_at: Timestamp = Field(default_factory=utcnow)
    updated_at: Timestamp = Field(default_factory=utcnow)
    last_used_at: Timestamp | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    archived_reason: str = ""
    # the tier an archived fact left (restore puts it back there: a pending fact stays pending)
    archived_from: FactStatus | None = None
    # what a framework adapter keeps with the fact (the LangGraph store's key and value):
    # stored, exported and returned as given; reverie itself never reads it
    meta: dict[str, Any] = Field(default_factory=dict)


class ProfileSection(Model):
    summary: str = ""
    updated_at: Timestamp | None = Field(default=None, alias="updatedAt")


class UserContext(Model):
    work_context: ProfileSection = Field(default_factory=ProfileSection, alias="workContext")
    personal_context: ProfileSection = Field(default_factory=ProfileSection, alias="personalContext")
    top_of_mind: ProfileSection = Field(default_factory=ProfileSection, alias="topOfMind")
    cognitive_style: ProfileSection = Field(default_factory=ProfileSection, alias="cognitiveStyle")


class HistoryContext(Model):
    recent_months: ProfileSection = Field(default_factory=ProfileSection, alias="recentMonths")
    earlier_context: ProfileSection = Field(default_factory=ProfileSection, alias="earlierContext")
    long_term_background: ProfileSection = Field(
        default_factory=ProfileSection, alias="longTermBackground"
    )


class Profile(Model):
    """deer-flow's structured profile, per user."""

    user: UserContext = Field(default_factory=UserContext)
    history: HistoryContext = Field(default_factory=HistoryContext)

    def section(self, name: str) -> ProfileSection:
        """``profile.section("user.cognitiveStyle")``; KeyError for an unknown name."""
        group, attr = _SECTION_ATTRS[name]
        section = getattr(getattr(self, group), attr)
        if not isinstance(section, ProfileSection):  # _SECTION_ATTRS names only sections
            raise KeyError(name)
        return section

    def sections(self) -> dict[str, ProfileSection]:
        return {name: self.section(name) for name in PROFILE_SECTIONS}

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


_SECTION_ATTRS: dict[str, tuple[str, str]] = {
    name: (name.split(".")[0], _snake(name.split(".")[1])) for name in PROFILE_SECTIONS
}


class Note(Model):
    """One line of a user's daily notes."""

    id: str = Field(default_factory=lambda: new_id("note"))
    user: str
    date: Annotated[str, AfterValidator(check_day)]  # YYYY-MM-DD, a real day: it names a file
    content: str
    created_at: Timestamp = Field(default_factory=utcnow)
    episodes: list[str] = Field(default_factory=list)
    source_ids: list[str] = Field(default_factory=list)


class KnowledgeDoc(Model):
    """A whole markdown document: a reusable pattern, not a one-line learning."""

    id: str = Field(default_factory=lambda: new_id("kn"))
    user: str
    title: str
    body: str
    tags: list[str] = Field(default_factory=list)
    scope: KnowledgeScope = "global"
    agent: str | None = None
    project: str | None = None
    created_at: Timestamp = Field(default_factory=utcnow)
    updated_at: Timestamp = Field(default_factory=utcnow)


class Tag(Model):
    """An entry of the tag dictionary (seed 003's TagDictionary)."""

    id: int | None = None
    user: str
    name: str
    dimension: TagDimension = "content"
    definitions: list[str] = Field(default_factory=list)
    synonyms: list[str] = Field(default_factory=list)
    status: TagStatus = "unexamined"
    merged_to: str | None = None
    created_at: Timestamp = Field(default_factory=utcnow)
    updated_at: Timestamp = Field(default_factory=utcnow)


class TagRelation(Model):
    user: str
    source: str
    target: str
    level: RelationLevel
