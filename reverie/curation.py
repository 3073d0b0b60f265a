"""What a person does by hand: state a fact, edit, forget or reinforce it, set a profile
section, say how a recalled episode worked out, add a knowledge document, merge tags;
and the lookups and counts that go with them.

Every function takes the line's :class:`~reverie.context.Context` and checked
arguments; each write is one transaction through the one fact writer.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, TypeVar

from pydantic import Field

from reverie.claims import fact_relation
from reverie.context import Context
from reverie.errors import InvalidInput, NotFound
from reverie.inputs import (
    LABEL_MAX,
    MAX_KNOWLEDGE_CHARS,
    check_category,
    check_confidence,
    check_reason,
    check_tags,
    check_text,
    clean_fact,
    clean_id,
    clean_text,
)
from reverie.journal import Journal
from reverie.memory_md import note_withdrawn, refresh_memory_md, sync, unwithdraw
from reverie.models import (
    AREAS,
    CATEGORIES,
    FEEDBACK_STATUSES,
    Episode,
    Fact,
    FactStatus,
    Feedback,
    KnowledgeDoc,
    Model,
    Note,
    Profile,
    Provenance,
    Tag,
    check_section,
    utcnow,
)
from reverie.dream import forget_lines
from reverie.notes import mirror_notes
from reverie.profiles import check_profile_length, drop_outdated_parts
from reverie.redact import redact
from reverie.store.base import FACT_ORDERS, ITEM_KINDS, Page
from reverie.tags import TagWriter, normalize_tag, usable_tags

_Stored = TypeVar("_Stored", Fact, KnowledgeDoc)

FACT_STATUSES = ("pending", "consolidated", "archived")
TAG_STATUSES = ("unexamined", "active", "deprecated", "merged")
EPISODE_STATUSES = ("pending", "completed", "interrupted", "failed")


def _check_area(area: Any) -> str | None:
    if area is not None and area not in AREAS:
        raise InvalidInput(f"area must be one of {', '.join(AREAS)}", field="area")
    return area  # type: ignore[no-any-return]


def _check_status(status: Any, allowed: tuple[str, ...]) -> Any:
    if status is not None and status not in allowed:
        raise InvalidInput(f"status must be {', '.join(allowed[:-1])} or {allowed[-1]}", field="status")
    return status


# ------------------------------------------------------------ facts
def remember(
    ctx: Context, content: str, *, user: str, category: str = "other", area: str | None = None,
    agent: str | None = None, confidence: float = 1.0, tags: list[str] | None = None,
) -> Fact:
    """Store a fact a person vouches for (consolidated at once). A near-duplicate of an
    existing fact reinforces that fact instead of adding a second; a fact it updates
    ("Takes 10 mg" after "Takes 5 mg") archives the older with a link."""
    text = clean_fact(content, "content", ctx.settings.max_fact_chars)
    kind, original = check_category(category)
    fact = Fact(
        user=user,
        agent=clean_id(agent, "agent", ctx.store.salt),
        content=text,
        category=kind,
        original_category=original,
        area=_check_area(area) or ("General" if kind == "preference" else None),
        confidence=check_confidence(confidence),
        status="consolidated",
        provenance=Provenance(origin="manual"),
    )
    with ctx.store.transaction():
        stored = ctx.facts.add_fact(TagWriter(ctx.store, user), fact, usable_tags(check_tags(tags)))
        if stored is not fact and stored.status == "pending":
            stored.status = "consolidated"  # a person vouched for it: promote
            ctx.store.put_fact(stored)
    return stored


def created_by(write: Callable[[], _Stored]) -> tuple[_Stored, bool]:
    """``write()``'s item and whether that call created it: a write that found its item
    stored already (a near-duplicate fact, the same knowledge document) returns that one."""
    started = utcnow()
    item = write()
    return item, item.created_at >= started


def remembered(write: Callable[[], Fact]) -> tuple[Fact, str]:
    """``write()`` (a :func:`remember`) and what it did with the line, for the caller to hear:
    ``created`` (a new fact), ``superseded`` (a new fact that archived the older value it
    updates) or ``reinforced`` (a near-duplicate of a stored fact: that fact gained a use;
    this wording was not kept)."""
    fact, new = created_by(write)
    # a fact another call made meanwhile (and this one reinforced) is new to the clock, not
    # unused: a reinforcement always counts a use
    new = new and fact.uses == 0
    return fact, ("superseded" if fact.supersedes else "created") if new else "reinforced"


def _known_category(category: str | None) -> str | None:
    """A category to filter by: one of :data:`CATEGORIES` (a fact of a category of its own is
    stored as ``other``), a near miss named with what it may mean."""
    value = check_text(category, "category")
    if value is None or value.strip().lower() in CATEGORIES:
        return value.strip().lower() if value is not None else None
    check_category(value)  # a near miss ("preferenc") is refused suggesting the category
    raise InvalidInput(f"unknown category {value!r}: one of {', '.join(CATEGORIES)} (a fact of a category of "
                       "its own is stored as 'other')", field="category")


def list_facts(
    ctx: Context, *, user: str, status: str | None = None, category: str | None = None, agent: str | None = None
) -> list[Fact]:
    """Facts, most used first (default: pending and consolidated)."""
    facts = ctx.store.list_facts(
        user, status=_check_status(status, FACT_STATUSES), category=_known_category(category),
        agent=clean_id(agent, "agent", ctx.store.salt),
    )
    return sorted(facts, key=lambda f: (-f.uses, -f.confidence, f.created_at))


def get_fact(ctx: Context, fact_id: str, *, user: str | None = None) -> Fact:
    fact = ctx.store.get_fact(check_text(fact_id, "id") or "")
    if fact is None or (user is not None and fact.user != user):
        raise NotFound(f"no fact {fact_id!r}" + (f" for user {user!r}" if user else ""))
    return fact


def update_fact(ctx: Context, fact_id: str, *, user: str | None = None, **changes: Any) -> Fact:
    """Edit a fact's content, category, area, confidence or status (journaled as an "edit":
    ``undo`` puts the fact back as it was). An archived fact given a live status is restored
    as :func:`restore_fact` restores it (the newer value that superseded it is archived), in
    the status asked for."""
    fact = get_fact(ctx, fact_id, user=user)
    journal = Journal(user=fact.user, action="edit")
    journal.watch([fact])
    unknown = set(changes) - {"content", "category", "area", "confidence", "status"}
    if unknown:
        raise InvalidInput(f"cannot change {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
    if not changes:
        raise InvalidInput("nothing to change: give content, category, area, confidence or status", field="content")
    # None clears the area (a preference's); nothing else can be emptied
    empty = sorted(k for k, v in changes.items() if v is None and k != "area")
    if empty:
        raise InvalidInput(f"{empty[0]} cannot be null: give a value, or leave it out to keep it", field=empty[0])
    if "content" in changes:
        fact.content = clean_fact(changes["content"], "content", ctx.settings.max_fact_chars)
    if "category" in changes:
        fact.category, fact.original_category = check_category(changes["category"])
    if "area" in changes:
        fact.area = _check_area(changes["area"]) if changes["area"] is not None else None
    if "confidence" in changes:
        fact.confidence = check_confidence(changes["confidence"])
    status = _check_status(changes["status"], FACT_STATUSES) if "status" in changes else None
    now = utcnow()
    fact.updated_at = now
    with ctx.store.transaction():
        if status is not None and status != "archived" and fact.status == "archived":
            # an archived fact made live again is a restore: flipping only its status would leave
            # the newer value that took its place live beside it (two contradicting facts)
            _bring_back(ctx, fact, journal, now, status)
        elif status == "archived" and fact.status != "archived":
            _put_away(ctx, fact, now)  # as forget archives it: its wording leaves the profile too
        elif status is not None:
            fact.status = status
        ctx.facts.index_fact(fact, fact.tags)
        journal.commit(ctx.store)
    return fact


def restore_fact(ctx: Context, fact_id: str, *, user: str | None = None) -> Fact:
    """Bring back an archived fact in the tier it left (a pending fact pending, a
    consolidated one consolidated; consolidated for one archived before that was kept);
    journaled as an edit. A live fact is refused: there is nothing to restore.

    A fact a newer value took the place of ("Lives in Berlin", superseded by "Lives in
    Lisbon") is the person's word that the older value holds: the newer one, while it is
    live and still says another value, gives way to it (archived, linked, in the same edit,
    so one undo takes both back), and the profile no longer says it."""
    fact = get_fact(ctx, fact_id, user=user)
    if fact.status != "archived":
        raise InvalidInput(f"fact {fact_id} is {fact.status}, not archived: nothing to restore", field="id")
    journal = Journal(user=fact.user, action="edit")
    journal.watch([fact])
    now = utcnow()
    with ctx.store.transaction():
        _bring_back(ctx, fact, journal, now, fact.archived_from or "consolidated")
        ctx.facts.index_fact(fact, fact.tags)
        journal.commit(ctx.store)
    return fact


def _bring_back(ctx: Context, fact: Fact, journal: Journal, now: datetime, status: FactStatus) -> None:
    """Make the archived ``fact`` live as ``status`` (inside the caller's transaction; the
    caller stores ``fact`` and commits ``journal``, which watches ``fact`` already): the newer
    fact that superseded it, while live and still saying another value, is archived in its
    place and leaves the profile. :func:`restore_fact` and a status edit both come here."""
    newer = ctx.store.get_fact(fact.superseded_by) if fact.superseded_by else None
    if newer is not None and not (newer.status != "archived" and newer.user == fact.user
                                  and fact_relation(newer.content, fact.content, ctx.settings.duplicate_jaccard)
                                  == "conflict"):
        newer = None
    if newer is not None:
        journal.watch([newer])
    fact.status = status
    fact.archived_from, fact.archived_reason, fact.superseded_by, fact.updated_at = None, "", None, now
    unwithdraw(ctx.store, fact.user, fact, journal)  # no longer a line the person deleted
    if newer is not None:
        ctx.facts.archive_fact(newer, "a person restored the value it had taken the place of", fact, now)
        drop_outdated_parts(ctx.store, fact.user, gone=[newer.content], newer=[],
                            duplicate_at=ctx.settings.duplicate_jaccard, now=now)


def forget(ctx: Context, fact_id: str, *, user: str | None = None, hard: bool = False) -> Fact:
    """Archive a fact (reversible), or delete it for good with ``hard=True``: its earlier
    states leave the undo journals too, so no undo brings it back, and its line leaves
    MEMORY.md (hand edits there are taken in first)."""
    fact = get_fact(ctx, fact_id, user=user)
    if hard:
        sync(ctx, user=fact.user)
    with ctx.store.transaction():
        if hard:
            ctx.store.delete_fact(fact.id)
            Journal.erase_fact(ctx.store, fact.user, fact.id)
            ctx.store.drop_unused_tags(fact.user, fact.tags)
            # nor does the profile say it any more, nor does a dream write it back from notes
            # said before (of one deleted for good, only a digest is kept)
            drop_outdated_parts(ctx.store, fact.user, gone=[fact.content], newer=[],
                                duplicate_at=ctx.settings.duplicate_jaccard, now=utcnow())
            note_withdrawn(ctx.store, fact.user, [fact.content], utcnow(), keep_text=False)
        else:
            _put_away(ctx, fact, utcnow())
    if hard:
        refresh_memory_md(ctx, fact.user)
        forget_lines(ctx, fact.user, [fact.content])  # nor do past dreams' reports and diaries
    return fact


def _put_away(ctx: Context, fact: Fact, now: datetime) -> None:
    """Archive the live ``fact`` by a person's word (inside the caller's transaction), as
    :func:`forget` and a status edit both do: the profile no longer says it, and a dream does
    not write it back from the notes said before."""
    ctx.facts.archive_fact(fact, "forgotten", None, now)
    drop_outdated_parts(ctx.store, fact.user, gone=[fact.content], newer=[],
                        duplicate_at=ctx.settings.duplicate_jaccard, now=now)
    note_withdrawn(ctx.store, fact.user, [fact.content], now, keep_text=True)


def reinforce(ctx: Context, fact_id: str, *, user: str | None = None) -> Fact:
    """``[Nx]`` + 1 (seed 002); a pending fact reinforced by hand is promoted."""
    fact = get_fact(ctx, fact_id, user=user)
    if fact.status == "archived":
        raise InvalidInput(f"fact {fact_id} is archived; restore it before reinforcing "
                           f"(`reverie restore {fact_id}`, or restore_fact(id))", field="id")
    with ctx.store.transaction():
        fact.status = "consolidated"
        return ctx.facts.reinforce_fact(fact, [], utcnow())


# ------------------------------------------------------------ profile, episodes, knowledge
def set_profile(ctx: Context, section: str, summary: str, *, user: str) -> Profile:
    """Set one profile section by hand, e.g. ``user.cognitiveStyle`` (journaled as an "edit":
    ``undo`` puts the section back)."""
    check_section(section)
    if not isinstance(summary, str):
        raise InvalidInput("summary must be text", field="summary")
    # as every text: no control character, no zero-width mark, redacted (invisible marks alone are
    # refused as showing nothing; an empty summary clears the section)
    text = clean_text(summary, "summary") if summary.strip() else ""  # held to the limit (a marker may be longer)
    check_profile_length(text, ctx.settings.max_profile_chars, "summary",
                         ": keep it to a few sentences, and store the rest as facts")
    journal = Journal(user=user, action="edit")
    with ctx.store.transaction():
        journal.watch_profile(ctx.store)
        ctx.store.put_profile_section(user, section, text, utcnow())
        journal.commit(ctx.store)
    return ctx.store.get_profile(user)


def list_episodes(
    ctx: Context, *, user: str, thread: str | None = None, status: str | None = None, limit: int | None = 50,
    archived: bool | None = False,
) -> list[Episode]:
    """Episodes of a user, newest first."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInput("limit must be a positive whole number", field="limit")
    return ctx.store.list_episodes(
        user, thread=clean_id(thread, "thread", ctx.store.salt), status=_check_status(status, EPISODE_STATUSES), limit=limit,
        archived=archived,
    )


def get_episode(ctx: Context, episode_id: str, *, user: str | None = None) -> Episode:
    ep = ctx.store.get_episode(check_text(episode_id, "id") or "")
    if ep is None or (user is not None and ep.user != user):
        raise NotFound(f"no episode {episode_id!r}" + (f" for user {user!r}" if user else ""))
    return ep


def feedback(ctx: Context, episode_id: str, status: str, *, reason: str = "", user: str | None = None) -> Episode:
    """How a recalled episode worked out: confirmed (ranked up), rejected (never recalled
    again), ignored or partial."""
    if status not in FEEDBACK_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(FEEDBACK_STATUSES)}", field="status")
    with ctx.store.transaction():
        ep = get_episode(ctx, episode_id, user=user)
        ep.feedback = Feedback(status=status, reason=redact(check_reason(reason)))  # type: ignore[arg-type]
        ctx.store.put_episode(ep, reindex=False)
    return ep


# a knowledge document's text at most (about 25,000 tokens: longer text is several documents)


def add_knowledge(
    ctx: Context, title: str, body: str, *, user: str, tags: list[str] | None = None, scope: str = "global",
    agent: str | None = None, project: str | None = None,
) -> KnowledgeDoc:
    """A whole markdown document (a reusable pattern), recalled when matched. Scope ``agent``
    (with ``agent``): left out of recalls made for another agent, as that agent's facts are;
    scope ``project`` (with ``project``) labels the document for listing and export (a recall
    names no project, so it is recalled as a global one). The same document added again is
    not stored twice: the stored one is returned (its ``created_at`` says it was there before)."""
    if scope not in ("global", "agent", "project"):
        raise InvalidInput("scope must be global, agent or project", field="scope")
    title, body = clean_text(title, "title"), clean_text(body, "body")
    if len(title) > LABEL_MAX:
        raise InvalidInput(f"title is {len(title):,} characters; a title is at most {LABEL_MAX}", field="title")
    if len(body) > MAX_KNOWLEDGE_CHARS:
        raise InvalidInput(f"body is {len(body):,} characters; a knowledge document is at most "
                           f"{MAX_KNOWLEDGE_CHARS:,}: split it into several", field="body")
    agent, project = clean_id(agent, "agent", ctx.store.salt), clean_id(project, "project", ctx.store.salt)
    if scope == "agent" and not agent:
        raise InvalidInput("scope 'agent' needs the agent it belongs to (agent=...)", field="agent")
    if scope == "project" and not project:
        raise InvalidInput("scope 'project' needs the project it belongs to (project=...)", field="project")
    doc = KnowledgeDoc(user=user, title=title, body=body, tags=usable_tags(check_tags(tags)), scope=scope,  # type: ignore[arg-type]
                       agent=agent, project=project)
    with ctx.store.transaction():
        same = ctx.store.same_knowledge(doc)  # by its digest, from an index
        if same is not None:
            return same
        ctx.facts.index_knowledge(doc)
    return doc


# ------------------------------------------------------------ tags and counts
def describe_tags(ctx: Context, *, user: str, status: str | None = None) -> list[dict[str, Any]]:
    """The tag dictionary with item counts and relations."""
    tags = ctx.store.list_tags(user, status=_check_status(status, TAG_STATUSES))
    counts = ctx.store.tag_counts(user)
    relations: dict[str, list[dict[str, str]]] = {}
    for rel in ctx.store.relations(user, [t.name for t in tags]):
        relations.setdefault(rel.source, []).append({"target": rel.target, "level": rel.level})
    return [
        {
            "name": t.name, "status": t.status, "dimension": t.dimension, "merged_to": t.merged_to,
            "items": counts.get(t.name, 0), "relations": relations.get(t.name, []),
        }
        for t in tags
    ]


def set_tag_status(ctx: Context, name: str, status: str, *, user: str) -> Tag:
    """A person deprecates a tag (it never matches again) or makes it active again;
    journaled as a "tags" change that ``undo`` takes back."""
    if status not in ("active", "deprecated"):
        raise InvalidInput("status must be active or deprecated (to fold a tag into another, merge the two)",
                           field="status")
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name must be a tag name", field="name")
    writer = TagWriter(ctx.store, user)
    journal = Journal(user=user, action="tags")
    with ctx.store.transaction():
        tag = ctx.store.get_tags(user, [normalize_tag(name)]).get(normalize_tag(name))
        if tag is None:
            raise NotFound(f"no tag {name!r} for user {user!r}")
        if tag.status == "merged":
            raise InvalidInput(f"{tag.name!r} was merged into {tag.merged_to!r}; change that tag instead", field="name")
        journal.watch_tags([tag])
        tag = writer.set_status(tag, status)
        journal.commit(ctx.store)
    return tag


def merge_tags(ctx: Context, old: str, new: str, *, user: str) -> int:
    """A person's explicit merge: OLD's items move to NEW; OLD stays as a redirect."""
    for name, field in ((old, "old"), (new, "new")):
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput(f"{field} must be a tag name", field=field)
    journal = Journal(user=user, action="tags")  # undo gives OLD its items back
    source_name, target_name = normalize_tag(old), normalize_tag(new)
    with ctx.store.transaction():
        tags = ctx.store.get_tags(user, [source_name, target_name])
        source, target = tags.get(source_name), tags.get(target_name)
        if source is not None and target is not None and source.name != target.name:
            moved = ctx.store.postings(user, [source.name], ITEM_KINDS)
            kept = {(p.kind, p.id) for p in ctx.store.postings(user, [target.name], ITEM_KINDS)}
            journal.watch_tags([target])
            journal.merged(source, target.name, [(p.kind, p.id, p.weight) for p in moved],
                           [(p.kind, p.id) for p in moved if (p.kind, p.id) in kept])
        count = TagWriter(ctx.store, user).merge(old, new)  # refuses what cannot be merged
        journal.commit(ctx.store)
    return count


def stats(ctx: Context, users: list[str]) -> dict[str, Any]:
    """Counts per user."""
    store = ctx.store
    out: dict[str, Any] = {"home": str(ctx.files.home), "store": store.where, "schema_version": store.schema_version(),
                           "users": {}}
    for name in users:
        counts = store.counts(name)  # counting queries: as fast with 100,000 episodes as with 10
        out["users"][name] = {
            "episodes": sum(counts["episodes_by_status"].values()),
            "episodes_by_status": counts["episodes_by_status"],
            "facts": sum(counts["facts_by_status"].values()),
            "facts_by_status": counts["facts_by_status"],
            "notes": counts["notes"],
            "knowledge": counts["knowledge"],
            "tags": counts["tags"],
            "threads": counts["threads"],
        }
    return out


# ------------------------------------------------------------ pages (keyset: ``after`` is the previous page's ``next``)
def check_limit(limit: Any, most: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise InvalidInput(f"limit must be a whole number from 1 to {most}", field="limit")
    return limit


def episode_page(
    ctx: Context, *, user: str, thread: str | None = None, status: str | None = None, archived: bool | None = False,
    until: Any = None, after: str | None = None, limit: int = 50,
) -> Page[Episode]:
    """Episodes newest first, one page at a time."""
    return ctx.store.page_episodes(
        user, thread=clean_id(thread, "thread", ctx.store.salt), status=_check_status(status, EPISODE_STATUSES), archived=archived,
        until=until, after=check_text(after, "after"), limit=check_limit(limit, 1000),
    )


def fact_page(
    ctx: Context, *, user: str, status: str | None = None, category: str | None = None, contains: str | None = None,
    order: str = "uses", after: str | None = None, limit: int = 50,
) -> Page[Fact]:
    """Facts in ``order`` (uses, recent, last_used or confidence; highest first), one page at
    a time; ``status`` "all" includes the archived (default: pending and consolidated)."""
    if order not in FACT_ORDERS:
        raise InvalidInput(f"order must be one of {', '.join(FACT_ORDERS)}", field="order")
    statuses: str | tuple[str, ...] | None = FACT_STATUSES if status == "all" else _check_status(status, FACT_STATUSES)
    return ctx.store.page_facts(
        user, status=statuses, category=_known_category(category), contains=check_text(contains, "contains"),
        order=order, after=check_text(after, "after"), limit=check_limit(limit, 1000),
    )


def note_page(
    ctx: Context, *, user: str, date: str | None = None, after: str | None = None, limit: int = 100,
) -> Page[Note]:
    """Daily-note lines, newest day first, one page at a time."""
    return ctx.store.page_notes(user, date=date, after=check_text(after, "after"), limit=check_limit(limit, 1000))


# knowledge documents a page holds at most: each may hold MAX_KNOWLEDGE_CHARS, so a page is
# at most about 10 MB
KNOWLEDGE_PAGE_LIMIT = 100


class EpisodeDeleted(Model):
    """What deleting one episode took with it, and what it left."""

    episode_id: str
    user: str
    # the daily-note lines drawn from it (deleted with it; their day's file rewritten)
    notes: list[str] = Field(default_factory=list)
    # live facts learned from it: kept (they may stand on other conversations too), forget
    # each by id (``forget(id, hard=True)``) if it should go as well
    facts: list[str] = Field(default_factory=list)
    purged: bool = False  # the store was rewritten so that no byte of it stays in its files


def delete_episode(ctx: Context, episode_id: str, *, user: str | None = None) -> EpisodeDeleted:
    """Delete one conversation's episode for good: its row, its search index and postings,
    the tags no other item carries, and the daily-note lines drawn from it (a day left with
    none loses its file). The facts learned from it stay and are listed. Another user's
    episode, or none, is NotFound."""
    ep = get_episode(ctx, episode_id, user=user)
    date = ep.occurred_at.date().isoformat()
    drawn = [n for n in ctx.store.list_notes(ep.user, since=date, until=date) if ep.id in n.episodes]
    notes = [n.id for n in drawn]
    facts = [f.id for f in ctx.store.list_facts(ep.user) if ep.id in f.provenance.episodes]
    with ctx.store.transaction():
        ctx.store.delete_episode(ep.id)
        for note_id in notes:
            ctx.store.delete_note(note_id)
        # a tag made of its words ("mr quokkamango") that nothing else carries goes with it
        ctx.store.drop_unused_tags(ep.user, ep.tags)
    mirror_notes(ctx.store, ctx.files, ep.user, [date])
    forget_lines(ctx, ep.user, [n.content for n in drawn])  # as past dreams' reports told them
    return EpisodeDeleted(episode_id=ep.id, user=ep.user, notes=notes, facts=facts)


def delete_knowledge(ctx: Context, doc_id: str, *, user: str) -> KnowledgeDoc:
    """Delete one of ``user``'s knowledge documents for good (a new version is added as a
    document of its own: delete the old one). Returns what was deleted; another user's
    document, or none, is NotFound."""
    doc = ctx.store.get_knowledge([doc_id]).get(doc_id) if isinstance(doc_id, str) else None
    if doc is None or doc.user != user:
        raise NotFound(f"no knowledge document {doc_id!r} for user {user!r}")
    with ctx.store.transaction():
        ctx.store.delete_knowledge(doc.id)
    return doc


def knowledge_page(ctx: Context, *, user: str, after: str | None = None, limit: int = 20) -> Page[KnowledgeDoc]:
    """Knowledge documents, the newest first, one page of 1 to KNOWLEDGE_PAGE_LIMIT at a time."""
    return ctx.store.page_knowledge(user, after=check_text(after, "after"),
                                    limit=check_limit(limit, KNOWLEDGE_PAGE_LIMIT))


def tag_page(
    ctx: Context, *, user: str, status: str | None = None, after: str | None = None, limit: int = 100,
) -> Page[dict[str, Any]]:
    """The tag dictionary by name, one page at a time, each tag as :func:`describe_tags` shows it."""
    page = ctx.store.page_tags(user, status=_check_status(check_text(status, "status"), TAG_STATUSES),
                               after=check_text(after, "after"),
                               limit=check_limit(limit, 1000))
    return Page(_describe(ctx, user, page.items), page.next)


def _describe(ctx: Context, user: str, tags: list[Tag]) -> list[dict[str, Any]]:
    names = [t.name for t in tags]
    counts = ctx.store.tag_counts(user, names) if names else {}
    relations: dict[str, list[dict[str, str]]] = {}
    for rel in ctx.store.relations(user, names):
        relations.setdefault(rel.source, []).append({"target": rel.target, "level": rel.level})
    return [
        {
            "name": t.name, "status": t.status, "dimension": t.dimension, "merged_to": t.merged_to,
            "items": counts.get(t.name, 0), "relations": relations.get(t.name, []),
        }
        for t in tags
    ]
