"""The engine interface: the steps an engine performs, and the typed shapes of their answers.

An engine never touches the store. It receives plain data and returns a plan;
the learning and dream lines validate the plan, redact it and apply it in one
transaction. That is what makes a broken LLM answer harmless.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from reverie.models import ENGINE_STEPS, Message, Model, Perception, Profile

STEPS: tuple[str, ...] = ENGINE_STEPS


# ---------------------------------------------------------------- extract

class SectionUpdate(Model):
    summary: str = ""
    should_update: bool = Field(default=False, alias="shouldUpdate")


class NewFact(Model):
    content: str
    category: str = "other"
    confidence: float = 0.8
    area: str | None = None
    tags: list[str] = Field(default_factory=list)
    # ids of the messages / episodes in the request that support this fact
    sources: list[str] = Field(default_factory=list)


class FactRemoval(Model):
    id: str
    reason: str = ""


class FactRef(Model):
    """A stored fact as an engine sees it."""

    id: str
    content: str
    category: str = "other"
    confidence: float = 0.8
    uses: int = 0
    status: str = "consolidated"
    updated_at: datetime | None = None


class ExtractRequest(Model):
    messages: list[Message]
    # message i of `messages` belongs to episode episode_ids[i] (same length)
    episode_ids: list[str] = Field(default_factory=list)
    profile: Profile = Field(default_factory=Profile)
    facts: list[FactRef] = Field(default_factory=list)
    language: str = "same as the user's latest message"
    # the speaker names that are "the user" (for ingested multi-speaker talk)
    user_speakers: list[str] = Field(default_factory=list)


class Extraction(Model):
    """Seeds 000/001's update: per-section {summary, shouldUpdate}, plus fact changes and tags."""

    user: dict[str, SectionUpdate] = Field(default_factory=dict)
    history: dict[str, SectionUpdate] = Field(default_factory=dict)
    new_facts: list[NewFact] = Field(default_factory=list, alias="newFacts")
    facts_to_reinforce: list[str] = Field(default_factory=list, alias="factsToReinforce")
    facts_to_remove: list[FactRemoval] = Field(default_factory=list, alias="factsToRemove")
    tags: list[str] = Field(default_factory=list)
    # proposed new facts the engine itself left out, counted by reason (the openai engine's:
    # a fact citing no line of the request, facts past its cap); not part of the answer asked for
    facts_dropped: SkipJsonSchema[dict[str, int]] = Field(default_factory=dict, exclude=True)


# ---------------------------------------------------------------- summarize

class SummarizeRequest(Model):
    messages: list[Message]
    language: str = "same as the user's latest message"


class EpisodeSummary(Model):
    summary: str = ""  # shallow: one line
    overview: str = ""  # medium: a few sentences
    tags: list[str] = Field(default_factory=list)  # 2-4 locatable feature tags
    scene: str = "general"
    sub_scene: str = ""


# ---------------------------------------------------------------- perceive

class PerceiveRequest(Model):
    message: str
    now: datetime
    # names of tags that exist for this user, so an engine may map onto them
    known_tags: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- distill (dream)

class NoteRef(Model):
    id: str
    date: str
    content: str


class DistillRequest(Model):
    facts: list[FactRef]
    notes: list[NoteRef]
    max_entries: int = 30
    language: str = "same as the inputs"


class PlanEntry(Model):
    """One line of the curated list and the input ids (fact or note ids) it stands on."""

    action: Literal["keep", "merge", "add", "remove"]
    content: str = ""
    category: str = "other"
    sources: list[str] = Field(default_factory=list)
    reason: str = ""


class DreamPlan(Model):
    entries: list[PlanEntry] = Field(default_factory=list)


# ---------------------------------------------------------------- tidy

class TidyAction(Model):
    op: Literal["remove", "rewrite", "add"]
    fact_id: str | None = None
    content: str = ""
    category: str = "other"
    reason: str = ""


class TidyPlan(Model):
    actions: list[TidyAction] = Field(default_factory=list)


# ---------------------------------------------------------------- govern tags

class TagInfo(Model):
    name: str
    status: str = "unexamined"
    uses: int = 0


class GovernRequest(Model):
    candidates: list[TagInfo]  # unexamined tags to judge
    existing: list[TagInfo]  # active tags they may relate to


class RelationProposal(Model):
    source: str
    target: str
    level: Literal["synonym", "related", "loose"]


class TagDecisions(Model):
    relations: list[RelationProposal] = Field(default_factory=list)
    activate: list[str] = Field(default_factory=list)
    deprecate: list[str] = Field(default_factory=list)


@runtime_checkable
class Engine(Protocol):
    """What every engine implements. Each method is pure with respect to the store."""

    name: str

    @property
    def batch_chars(self) -> int | None:
        """How much conversation text one extract call should see at most (None: any)."""

    def perceive(self, request: PerceiveRequest) -> Perception: ...

    def extract(self, request: ExtractRequest) -> Extraction: ...

    def summarize(self, request: SummarizeRequest) -> EpisodeSummary: ...

    def distill(self, request: DistillRequest) -> DreamPlan: ...

    def tidy(self, facts: list[FactRef]) -> TidyPlan: ...

    def govern_tags(self, request: GovernRequest) -> TagDecisions: ...
