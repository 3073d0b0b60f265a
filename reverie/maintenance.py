"""Maintenance: consolidate, tidy, clean, restore, health, sync and undo.

    >>> mem.consolidate(user="ana")                     # exact + Jaccard dedup; never a unique entry
    >>> proposal = mem.tidy(user="ana", dry_run=True)   # the engine's cleanup, checked, as a diff
    >>> print(proposal.diff()); mem.tidy(user="ana", proposal=proposal)
    >>> mem.clean(user="ana"); mem.restore(episode_id, user="ana")
    >>> mem.health(user="ana").healthy
    >>> mem.sync(user="ana")                            # take hand edits of MEMORY.md in
    >>> mem.changes(user="ana")                         # the journaled changes, newest first
    >>> mem.undo(change_id, user="ana")                 # one back as it was (later ones on its items first)

Nothing here deletes: facts and episodes are archived, and every change is
journaled (reverie.journal.Journal) so that ``undo`` can put it back.
"""

from __future__ import annotations

import math
import re
import shlex
import time
from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field

from reverie.claims import NEGATION, duplicate_pairs, related_pairs, stored_relation
from reverie.context import Context
from reverie.engines.base import FactRef, TidyAction
from reverie.errors import Conflict, InvalidInput, NotFound
from reverie.facts import (
    FactLine,
    capacity_record,
    clean_line,
    clip_learned,
    fact_line,
    keyed,
    numbers,
    protected,
    skipped_record,
)
from reverie.inputs import normalize_category
from reverie.journal import Change, Journal, journal_key
from reverie.memory_md import (
    RefusedLine,
    load_snapshot,
    publish_memory_md,
    refresh_memory_md,
    restore_withdrawn,
    sync,
)
from reverie.models import DECAY, Episode, Fact, Model, Provenance, Tag, as_utc, utcnow
from reverie.notes import unwritten_notes
from reverie.profiles import trimmed_record
from reverie.store.base import DreamRun, Page
from reverie.store.failures import recovery
from reverie.tags import TagWriter
from reverie.text import clip_line, exact_key, plural, terms, token_set, words
from reverie.unanswered import unanswered_record

CONFIRMED_WEIGHT = 2.0
LONG_ENTRY = 120  # seed 002: entries under 120 characters
REWRITE_SUPPORT = 0.75  # share of a rewrite's words that must come from the fact
ADD_SUPPORT = 0.5
_IDS = re.compile(r"(?:fact|note)_[0-9a-f]+")


# ---------------------------------------------------------------- consolidate

class DuplicateGroup(Model):
    kept: FactLine
    archived: list[FactLine]


class ConsolidateReport(Model):
    groups: list[DuplicateGroup] = Field(default_factory=list)
    archived: int = 0
    dry_run: bool = False
    journal: str | None = None


def consolidate(ctx: Context, *, user: str, dry_run: bool = False) -> ConsolidateReport:
    """Seed 002's rule-based dedup: facts that are the same line (exactly, or by Jaccard >=
    ``settings.consolidate_jaccard``) fold into the one with the highest ``[Nx]``."""
    if not dry_run:
        sync(ctx, user=user)
    facts = sorted(
        ctx.store.list_facts(user),
        key=lambda f: (-f.uses, f.status != "consolidated", -f.confidence, f.created_at),
    )
    at = ctx.settings.consolidate_jaccard
    # each fact is judged against the groups whose first fact it may duplicate (an index of
    # their rarest terms), in the order the groups began: not against every group
    pairs = duplicate_pairs([f.content for f in facts], at)
    near: dict[int, list[int]] | None = None
    if pairs is not None:
        near = {}
        for i, j in pairs:
            near.setdefault(j, []).append(i)  # i < j: i came first, and may have begun a group
    groups: list[tuple[Fact, list[Fact]]] = []
    began: dict[int, int] = {}  # the fact that began a group -> the group's place
    for n, fact in enumerate(facts):
        places = range(len(groups)) if near is None else sorted(began[i] for i in near.get(n, ()) if i in began)
        home = next((groups[g] for g in places if stored_relation(fact.content, groups[g][0].content, at) == "duplicate"), None)
        if home is None:
            began[n] = len(groups)
            groups.append((fact, []))
        else:
            home[1].append(fact)
    groups = [_keyed_kept(keep, dups) for keep, dups in groups]
    groups = [g for g in groups if g[1]]
    report = ConsolidateReport(
        groups=[DuplicateGroup(kept=fact_line(k), archived=[fact_line(d) for d in dups]) for k, dups in groups],
        archived=sum(len(d) for _, d in groups),
        dry_run=dry_run,
    )
    if dry_run or not groups:
        return report
    journal = Journal(user=user, action="consolidate")
    now = utcnow()
    with ctx.store.transaction(batch=True):
        for keep, dups in groups:
            journal.watch([keep, *dups])
            if any(d.status == "consolidated" for d in dups):
                keep.status = "consolidated"  # the group was vouched for; its survivor stays so
            for dup in dups:
                ctx.facts.fold(dup, keep, f"duplicate of {keep.id} (consolidate)", journal, now)
        report.journal = journal.id if journal.commit(ctx.store).changes else None
    refresh_memory_md(ctx, user)
    return report


# ---------------------------------------------------------------- tidy

class TidyChange(Model):
    """One proposed change, as checked: ``refused`` says why it will not be applied."""

    op: Literal["remove", "rewrite", "add"]
    fact_id: str | None = None
    before: str = ""
    after: str = ""
    category: str = "other"
    reason: str = ""
    refused: str = ""


class TidyReport(Model):
    changes: list[TidyChange] = Field(default_factory=list)
    applied: bool = False
    journal: str | None = None

    @property
    def accepted(self) -> list[TidyChange]:
        return [c for c in self.changes if not c.refused]

    def diff(self) -> str:
        """The proposal as a diff a person reads before saying yes."""
        out = ["--- facts now", "+++ facts after tidy"]
        for c in self.changes:
            target = f" {c.fact_id}" if c.fact_id else ""
            why = f": {c.reason}" if c.reason else ""
            if c.refused:
                out += [f"@@ keep{target} as it is (not {c.op}: {c.refused})", f"  {c.before or c.after}"]
                continue
            out.append(f"@@ {c.op}{target}{why}")
            out += [f"- {c.before}"] if c.before else []
            out += [f"+ {c.after}"] if c.op != "remove" else []
        return "\n".join(out) + "\n"


def tidy(
    ctx: Context, *, user: str, dry_run: bool = False, proposal: TidyReport | None = None
) -> TidyReport:
    """The tidy engine's remove / rewrite / add, checked in code; applied unless ``dry_run``.

    Pass back the ``proposal`` a person saw to apply exactly that. Rewrites only
    when shorter or clearer; every user constraint is kept; when unsure, keep.
    """
    proposal = proposal or propose_tidy(ctx, user)
    if dry_run:
        return proposal
    return _apply_tidy(ctx, user, proposal)


def propose_tidy(ctx: Context, user: str) -> TidyReport:
    facts = ctx.store.list_facts(user)
    refs = [
        FactRef(id=f.id, content=f.content, category=f.category, confidence=f.confidence, uses=f.uses,
                status=f.status, updated_at=f.updated_at)
        for f in facts
    ]
    plan = ctx.engines.tidy.tidy(refs)
    judge = _Judge(ctx, facts)
    return TidyReport(changes=[judge(a) for a in plan.actions])


class _Judge:
    """Checks one proposed action against the rules; remembers what earlier ones touched."""

    def __init__(self, ctx: Context, facts: list[Fact]):
        self.ctx = ctx
        self.facts = {f.id: f for f in facts}
        self.touched: set[str] = set()

    def __call__(self, action: TidyAction) -> TidyChange:
        fact = self.facts.get(action.fact_id or "")
        change = TidyChange(
            op=action.op, fact_id=action.fact_id, before=fact.content if fact else "",
            after=clip_learned(clean_line(action.content)) if action.op != "remove" else "",
            category=fact.category if fact and action.op != "add" else normalize_category(action.category)[0],
            reason=action.reason,
        )
        if action.op == "add":
            change.fact_id = None
            change.refused = self._add_problem(change)
        elif fact is None:
            change.refused = "there is no such live fact"
        elif fact.id in self.touched:
            change.refused = "an earlier change already touches this fact"
        elif keyed(fact):
            change.refused = "an application keeps it under a key of its own (a LangGraph item): it is the application's to change"
        else:
            change.refused = self._remove_problem(fact, action) if action.op == "remove" else _rewrite_problem(fact, change.after)
        if not change.refused and fact is not None and action.op != "add":
            self.touched.add(fact.id)
        return change

    def _remove_problem(self, fact: Fact, action: TidyAction) -> str:
        if not action.reason.strip():
            return "no reason given, and when unsure we keep"
        if protected(fact) and not self._twin(fact):
            return "it is a user constraint, and every user constraint is kept"
        return ""

    def _twin(self, fact: Fact) -> Fact | None:
        """Another live fact that says the same, so removing this one loses nothing."""
        dup = self.ctx.settings.duplicate_jaccard
        return next(
            (f for f in self.facts.values()
             if f.id != fact.id and f.id not in self.touched and stored_relation(fact.content, f.content, dup) == "duplicate"),
            None,
        )

    def _add_problem(self, change: TidyChange) -> str:
        if not change.after:
            return "the new line is empty"
        named = [self.facts[i] for i in _IDS.findall(change.reason) if i in self.facts]
        sources = " ".join(f.content for f in named or self.facts.values())
        problem = _support_problem(change.after, sources, ADD_SUPPORT)
        if problem:
            return problem
        probe = Fact(user="", content=change.after, category=change.category)
        dup = self.ctx.settings.duplicate_jaccard
        if any(stored_relation(probe.content, f.content, dup) == "duplicate" for f in self.facts.values() if f.id not in self.touched):
            return "a live fact says this already"
        return ""


def _keyed_kept(keep: Fact, dups: list[Fact]) -> tuple[Fact, list[Fact]]:
    """A duplicate group as it folds: an item an application keeps under a key of its own is
    never folded away (it is the one kept, and another such item stays beside it)."""
    group = [keep, *dups]
    survivor = next((f for f in group if keyed(f)), keep)
    return survivor, [f for f in group if f is not survivor and not keyed(f)]


def _support_problem(new: str, source: str, minimum: float) -> str:
    """Why ``new`` does not stand on ``source`` ("" when it does)."""
    words_new = token_set(new)
    if not words_new:
        return "it has no content words"
    if numbers(new) - numbers(source):
        return f"it states {', '.join(sorted(numbers(new) - numbers(source)))}, which the facts do not"
    missing = words_new - token_set(source)
    if 1 - len(missing) / len(words_new) < minimum:
        return f"it says things the facts do not ({', '.join(sorted(missing)[:6])})"
    return ""


def _noise(text: str) -> int:
    """Words that carry no content: fewer of them at the same length reads clearer."""
    return len(words(text)) - len(terms(text))


def _rewrite_problem(fact: Fact, new: str) -> str:
    old = fact.content
    if not new:
        return "the rewrite is empty"
    if exact_key(new) == exact_key(old):
        return "the rewrite changes nothing"
    if bool(NEGATION.search(new)) != bool(NEGATION.search(old)):
        return "the rewrite would flip what the fact says"
    if numbers(old) != numbers(new):
        return "the rewrite changes the numbers"
    problem = _support_problem(new, old, REWRITE_SUPPORT)
    if problem:
        return problem
    kept = token_set(old) & token_set(new)
    if protected(fact) and len(kept) < REWRITE_SUPPORT * len(token_set(old)):
        return "it would drop part of a user constraint"
    if len(new) < len(old) or (len(new) <= 1.1 * len(old) and _noise(new) < _noise(old)):
        return ""
    return "the rewrite is neither shorter nor clearer"


def _apply_tidy(ctx: Context, user: str, proposal: TidyReport) -> TidyReport:
    sync(ctx, user=user)
    result = proposal.model_copy(deep=True)
    journal = Journal(user=user, action="tidy")
    now = utcnow()
    with ctx.store.transaction():
        live = {f.id: f for f in ctx.store.list_facts(user)}
        journal.watch(live.values())
        writer = TagWriter(ctx.store, user)
        for change in result.accepted:
            fact = live.get(change.fact_id or "")
            if change.op != "add":
                if fact is None or fact.content != change.before:
                    change.refused = "the fact changed since the proposal"
                elif change.op == "remove":
                    successor = next(
                        (live[i] for i in _IDS.findall(change.reason) if i in live and i != fact.id), None
                    )
                    ctx.facts.archive_fact(fact, f"tidy: {change.reason}", successor, now)
                else:  # rewrite
                    fact.content, fact.updated_at = change.after, now
                    ctx.facts.index_fact(fact, fact.tags)
            else:
                named = [i for i in _IDS.findall(change.reason) if i in live]
                category, original = normalize_category(change.category)  # an engine's word, or a caller's
                new = Fact(user=user, content=change.after, category=category, original_category=original,
                           confidence=1.0, status="consolidated", provenance=Provenance(origin="dream", facts=named),
                           created_at=now, updated_at=now)
                if ctx.facts.add_fact(writer, new, []) is new:
                    journal.created(new)
        result.journal = journal.id if journal.commit(ctx.store).changes else None
    result.applied = True
    refresh_memory_md(ctx, user)
    return result


# ---------------------------------------------------------------- clean and restore

class CleanItem(Model):
    episode_id: str
    weight: float
    age_days: float
    summary: str = ""


class CleanReport(Model):
    archived: list[CleanItem] = Field(default_factory=list)
    kept: int = 0
    retired_tags: list[str] = Field(default_factory=list)  # live tags that never recurred
    dry_run: bool = False
    journal: str | None = None


def _days_unused(episode: Episode, now: datetime) -> float:
    """Days since the episode last mattered: it happened, it was stored (an imported or
    ingested old conversation starts fresh), or it was recalled."""
    moments = [episode.occurred_at, episode.created_at, episode.last_used_at or episode.occurred_at]
    return max(0.0, (now - max(as_utc(m) for m in moments)).total_seconds() / 86400)


def episode_weight(episode: Episode, now: datetime) -> float:
    """Seed 003's self-evolution: weight decays with the days since the episode last
    mattered and rises with every use; a confirmed episode weighs double."""
    age = _days_unused(episode, now)
    weight = math.exp(-DECAY * age) * (1 + math.log1p(episode.uses))
    if episode.feedback is not None and episode.feedback.status == "confirmed":
        weight *= CONFIRMED_WEIGHT
    return weight


CLEAN_PAGE = 1000  # episodes clean weighs at a time


def clean(ctx: Context, *, user: str, dry_run: bool = False, now: datetime | None = None) -> CleanReport:
    """Archive (never delete) episodes whose weight fell under ``settings.clean_weight_threshold``
    and that are older than ``settings.clean_min_age_days``; ``restore`` brings one back."""
    now = as_utc(now) if now else utcnow()
    settings = ctx.settings
    faded = []
    weighed = 0
    # a page of episodes at a time: only the faded ones stay in memory, not the whole store
    # (100k episodes read at once held 884 MB)
    after: str | None = None
    while True:
        page = ctx.store.page_episodes(user, archived=False, after=after, limit=CLEAN_PAGE)
        for ep in page.items:
            if ep.status == "pending":
                continue
            weighed += 1
            age = _days_unused(ep, now)
            weight = episode_weight(ep, now)
            if age >= settings.clean_min_age_days and weight < settings.clean_weight_threshold:
                faded.append((ep, CleanItem(episode_id=ep.id, weight=round(weight, 4), age_days=round(age, 1),
                                            summary=ep.summary or ep.user_text[:120])))
        if page.next is None:
            break
        after = page.next
    lonely = _lonely_tags(ctx, user, now)
    report = CleanReport(archived=[item for _, item in faded], kept=weighed - len(faded), dry_run=dry_run,
                         retired_tags=[t.name for t in lonely])
    if dry_run or not (faded or lonely):
        return report
    journal = Journal(user=user, action="clean")
    with ctx.store.transaction(batch=True):  # archiving may be thousands of episodes
        journal.watch(ep for ep, _ in faded)
        journal.watch_tags(lonely)
        for ep, _ in faded:
            ep.archived = True
            ctx.store.put_episode(ep)
        writer = TagWriter(ctx.store, user)
        for tag in lonely:
            writer.set_status(tag, "deprecated")
        report.journal = journal.id if journal.commit(ctx.store).changes else None
    return report


def _lonely_tags(ctx: Context, user: str, now: datetime) -> list[Tag]:
    """Live tags that never recurred: one item (or none) carries them, and they are older than
    ``clean_min_age_days``. Retiring them keeps the dictionary useful as it grows."""
    counts = ctx.store.tag_counts(user)
    age = timedelta(days=ctx.settings.clean_min_age_days)
    return [
        tag for tag in ctx.store.list_tags(user, status="active")
        if counts.get(tag.name, 0) <= 1 and now - as_utc(tag.created_at) >= age
    ]


def restore(ctx: Context, episode_id: str, *, user: str | None = None) -> Episode:
    """Bring an archived episode back (recall sees it again)."""
    ep = ctx.store.get_episode(episode_id)
    if ep is None or (user is not None and ep.user != user):
        raise NotFound(f"no episode {episode_id!r}" + (f" for user {user!r}" if user else ""))
    if ep.archived:
        with ctx.store.transaction():
            ep.archived = False
            ctx.store.put_episode(ep)
    return ep


# ---------------------------------------------------------------- undo

class UndoReport(Model):
    journal: str
    action: str
    restored: int = 0
    archived: int = 0
    skipped: int = 0  # facts deleted for good since the operation: they stay deleted


class ChangeSet(Model):
    """One journaled operation, as ``undo`` can take it back."""

    id: str
    action: str
    at: datetime
    changes: int
    undone_at: datetime | None = None


def list_changes(ctx: Context, *, user: str, limit: int = 50) -> list[ChangeSet]:
    """The user's journaled operations (dreams, consolidate, tidy, sync, clean, capacity
    evictions), newest first: the ids ``undo`` takes."""
    return [_change_set(Journal.model_validate_json(raw)) for raw in ctx.store.list_journals(user, limit)]


def change_page(ctx: Context, *, user: str, after: str | None = None, limit: int = 50) -> Page[ChangeSet]:
    """:func:`list_changes` one page at a time (``after``: the previous page's ``next``)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidInput("limit must be a whole number from 1 to 1000", field="limit")
    if after is not None and not isinstance(after, str):
        raise InvalidInput("after must be a cursor a page gave out", field="after")
    page = ctx.store.page_journals(user, after=after, limit=limit)
    return Page([_change_set(Journal.model_validate_json(raw)) for raw in page.items], page.next)


def _change_set(journal: Journal) -> ChangeSet:
    return ChangeSet(id=journal.id, action=journal.action, at=journal.at, changes=len(journal.changes),
                     undone_at=journal.undone_at)


def undo(ctx: Context, journal_id: str, *, user: str) -> UndoReport:
    """Put back what one journaled operation (a dream, consolidate, tidy, sync, clean, an edit
    or a tag merge) changed: changed items return to their earlier state, items it created
    are archived, a merged tag gets its items back. Refused (Conflict, nothing changed) while
    a later operation that touched the same items stands; a fact deleted for good since stays
    deleted (counted as skipped)."""
    _undoable(ctx, journal_id, user)  # refused before the sync below changes anything
    sync(ctx, user=user)
    now = utcnow()
    with ctx.store.transaction(batch=True):
        # read again under the lock: the sync just now, or another client, may have journaled since
        journal = _undoable(ctx, journal_id, user)
        report = _put_back(ctx, journal, now)
        restore_withdrawn(ctx.store, user, journal.withdrawn)  # the lines it took out are no longer "deleted"
        journal.undone_at = now
        ctx.store.set_meta(journal_key(journal.id), journal.model_dump_json())
    _republish(ctx, user, journal)
    return report


def _undoable(ctx: Context, journal_id: str, user: str) -> Journal:
    raw = ctx.store.get_meta(journal_key(journal_id))
    journal = Journal.model_validate_json(raw) if raw else None
    if journal is None or journal.user != user:
        raise NotFound(f"no change set {journal_id!r} for user {user!r}; the list of changes "
                       f"(`reverie changes --user {user}`) holds the ids undo takes")
    if journal.undone_at is not None:
        raise Conflict(f"{journal_id} was already undone on {journal.undone_at:%Y-%m-%d %H:%M}")
    later = journal.overlapped(ctx.store)
    if later:
        which = f"a later change, {later[0]}," if len(later) == 1 else f"{len(later)} later changes"
        raise Conflict(f"cannot undo {journal_id} ({journal.action}): {which} touched the same items and would be "
                       f"lost; undo {'it' if len(later) == 1 else 'them'} first, newest first: {', '.join(later)}")
    return journal


def _put_back(ctx: Context, journal: Journal, now: datetime) -> UndoReport:
    report = UndoReport(journal=journal.id, action=journal.action)
    facts = ctx.store.get_facts([c.id for c in journal.changes if c.kind == "fact"])
    for change in reversed(journal.changes):
        if change.kind == "fact":
            _put_fact_back(ctx, journal, change, facts.get(change.id), report, now)
        elif change.kind == "episode":
            ctx.store.put_episode(Episode.model_validate(change.before))
            report.restored += 1
        elif change.kind == "merge":
            _unmerge(ctx, journal.user, change, report, now)
        elif change.kind == "tag":
            tags = ctx.store.get_tags(journal.user, [change.id])
            if change.id in tags:
                TagWriter(ctx.store, journal.user).set_status(tags[change.id], str((change.before or {}).get("status", "active")))
                report.restored += 1
        else:  # profile
            before = change.before or {}
            stamp = before.get("updated_at")  # None: never set before, so set back to never set
            ctx.store.put_profile_section(
                journal.user, change.id, before.get("summary", ""), datetime.fromisoformat(stamp) if stamp else None
            )
            report.restored += 1
    return report


def _put_fact_back(ctx: Context, journal: Journal, change: Change, fact: Fact | None, report: UndoReport,
                   now: datetime) -> None:
    if fact is None:  # deleted for good since: undo never brings it back
        report.skipped += 1
    elif change.before is not None:
        restored = Fact.model_validate(change.before)
        ctx.facts.index_fact(restored, restored.tags)
        report.restored += 1
    elif fact.status != "archived":  # the operation created it
        ctx.facts.archive_fact(fact, f"undone ({journal.id})", None, now)
        report.archived += 1


def _unmerge(ctx: Context, user: str, change: Change, report: UndoReport, now: datetime) -> None:
    """The merged tag's postings back from the tag it went into, then the tag itself."""
    before = change.before or {}
    merged = ctx.store.get_tags(user, [change.id]).get(change.id)
    if merged is None:
        return
    moved = [(str(k), str(i), float(w)) for k, i, w in before.get("moved", [])]
    kept = [(str(k), str(i)) for k, i in before.get("kept", [])]
    ctx.store.unretag(user, change.id, str(before.get("into", "")), moved, kept)
    merged.merged_to, merged.updated_at = None, now
    TagWriter(ctx.store, user).set_status(merged, str(before.get("status", "active")))
    report.restored += 1


def _republish(ctx: Context, user: str, journal: Journal) -> None:
    """MEMORY.md as the store now is: the entries it listed before the operation, or (after the
    first dream, when there was none before) what it shows before any dream."""
    if load_snapshot(ctx, user) is None:
        return
    if journal.memory_md_before is not None:
        listed = ctx.store.get_facts(journal.memory_md_before).values()
        publish_memory_md(ctx, user, [f for f in listed if f.status != "archived"],
                          dreamed_at=journal.memory_md_dreamed_at)
    elif journal.action == "dream":  # this dream wrote the first MEMORY.md
        publish_memory_md(ctx, user, ctx.store.list_facts(user, status="consolidated"), dreamed_at="")
    else:  # a later dream wrote the first MEMORY.md: keep its entries
        refresh_memory_md(ctx, user)


# ---------------------------------------------------------------- health

class HealthReport(Model):
    """Seed 002's signs of healthy memory, with a verdict and what to do about each problem."""

    user: str
    healthy: bool
    reasons: list[str] = Field(default_factory=list)  # signs of unhealthy memory
    advice: list[str] = Field(default_factory=list)  # not unhealthy, but worth knowing
    facts: int = 0
    high_priority: int = 0  # [3x]+
    high_priority_share: float = 0.0
    never_used: int = 0  # [0x]
    long_entries: list[FactLine] = Field(default_factory=list)
    duplicates: list[list[FactLine]] = Field(default_factory=list)
    contradictions: list[list[FactLine]] = Field(default_factory=list)
    pending_facts: int = 0
    unlearned_episodes: int = 0
    tags: dict[str, int] = Field(default_factory=dict)
    learning_error: str = ""  # the newest error of the learning line while episodes wait
    dream_error: str = ""  # the last dream's run id, start and error, when that dream failed
    # the last dream that ran (status done): its id and the day of its diary, where each line
    # below is told with why; what it rejected (proposals that did not stand on their inputs)
    # and the entries that left MEMORY.md since it was written before
    last_dream: str = ""
    dream_diaries: list[str] = Field(default_factory=list)  # the days of the diaries that tell them
    dream_rejected: int = 0
    dream_left: int = 0
    # the lines written in MEMORY.md by hand that the last dream (or a later run skipped as having
    # nothing new, or failed, which take hand edits in first) could not take in: gone from MEMORY.md,
    # said here and in that run's report (redacted, held to a fact's length)
    dream_refused: list[RefusedLine] = Field(default_factory=list)
    # the lines written in MEMORY.md by hand that `sync` (the command, REST, the console) could
    # not take in since the last dream: gone from MEMORY.md, said here until a dream tells them
    sync_refused: list[RefusedLine] = Field(default_factory=list)
    capacity: int = 0  # fact_capacity: consolidated facts past it evict the lowest-ranked learned ones
    evicted_over_capacity: int = 0  # learned facts archived by capacity so far (each journaled)
    last_eviction: str | None = None  # the journal id of the last eviction: `reverie undo ID`
    # profile parts that gave way to newer ones past max_profile_chars, so far, by section
    profile_trimmed: dict[str, int] = Field(default_factory=dict)
    # facts engines proposed that learning did not keep, so far, by reason
    facts_skipped: dict[str, int] = Field(default_factory=dict)
    # days whose markdown notes file the last try could not write (the store holds them)
    notes_unwritten: list[str] = Field(default_factory=list)
    # turns closed without their reply after reply_timeout_seconds, so far (learned from the
    # user's message alone)
    unanswered_turns: int = 0


class StoreCheck(Model):
    """What reading the whole store found (:func:`check_store`, ``reverie check``)."""

    store: str  # where it is (a PostgreSQL URL without its password)
    intact: bool
    problems: list[str] = Field(default_factory=list)  # at most MAX_INTEGRITY_PROBLEMS
    advice: str = ""  # what to do, when something is wrong
    seconds: float = 0.0


def check_store(ctx: Context) -> StoreCheck:
    """Read the whole store for damage (:meth:`~reverie.store.base.Store.integrity_problems`):
    its time grows with the store's size, so it runs when asked, never on its own. Damaged
    pages of a SQLite file are recovered with SQLite's own tools or an export; derived data
    that disagrees with the items (full-text rows and counts, tag counts) is built anew by
    exporting each user and importing them into a new store."""
    started = time.perf_counter()
    found = ctx.store.integrity_problems()
    problems = [p.said for p in found]
    where = ctx.store.where
    advice = ""
    if any(p.damaged for p in found):
        advice = recovery(where)
    elif problems:
        advice = ("The items are whole; what is derived from them is not. Export each user (reverie export --user "
                  "USER -o USER.json) and import them into a new store (reverie import USER.json --user USER --home "
                  "NEW, or --store with a new schema): every index and count is built again from the items.")
    return StoreCheck(store=where, intact=not problems, problems=problems, advice=advice,
                      seconds=round(time.perf_counter() - started, 3))


# thresholds of the verdict (the seed names the signs, not the numbers)
MIN_HIGH_SHARE = 0.1
MAX_NEVER_USED_SHARE = 0.5
MAX_LONG_SHARE = 0.1
MIN_FACTS_FOR_SHARES = 10
MAX_PENDING = 50
NEAR_CAPACITY = 0.9


def health(ctx: Context, *, user: str) -> HealthReport:
    facts = ctx.store.list_facts(user, status="consolidated")
    report = HealthReport(user=user, healthy=True, facts=len(facts))
    report.high_priority = sum(1 for f in facts if f.uses >= 3)
    report.high_priority_share = round(report.high_priority / len(facts), 3) if facts else 0.0
    report.never_used = sum(1 for f in facts if f.uses == 0)
    report.long_entries = [fact_line(f) for f in facts if len(f.content) > LONG_ENTRY]
    dup = ctx.settings.duplicate_jaccard
    # only the pairs the judge could relate, found through an index: not all n^2 / 2
    for i, j in related_pairs([f.content for f in facts]):
        a, b = facts[i], facts[j]
        found = stored_relation(a.content, b.content, dup)
        if found == "duplicate":
            report.duplicates.append([fact_line(a), fact_line(b)])
        elif found == "conflict" and a.category == b.category:
            report.contradictions.append([fact_line(a), fact_line(b)])
    report.pending_facts = ctx.store.count_facts(user) - len(facts)  # live are pending or consolidated
    report.unlearned_episodes, report.learning_error = ctx.store.learning_backlog(user)
    last_dream = ctx.store.last_dream_run(user)
    if last_dream is not None and last_dream.status == "failed":
        report.dream_error = (f"{last_dream.id}, started {last_dream.started_at.isoformat(timespec='seconds')}: "
                              f"{clip_line(last_dream.error, 200)}")
    _last_dream_lines(ctx, user, report, last_dream)
    for tag in ctx.store.list_tags(user):
        report.tags[tag.status] = report.tags.get(tag.status, 0) + 1
    report.capacity = ctx.settings.fact_capacity
    evictions = capacity_record(ctx.store, user)
    report.evicted_over_capacity = int(evictions.get("evicted", 0))
    report.last_eviction = evictions.get("last_journal")
    trimmed = trimmed_record(ctx.store, user)
    report.profile_trimmed = {str(k): int(v) for k, v in dict(trimmed.get("sections", {})).items()}
    skipped = skipped_record(ctx.store, user)
    report.facts_skipped = {str(k): int(v) for k, v in dict(skipped.get("reasons", {})).items()}
    unanswered = unanswered_record(ctx.store, user)
    report.unanswered_turns = int(unanswered.get("turns", 0))
    unwritten = unwritten_notes(ctx.store, user)
    report.notes_unwritten = [str(d) for d in unwritten.get("dates", [])]
    report.reasons = _verdict(report)
    if report.notes_unwritten:
        report.reasons.append(
            f"the notes files of {len(report.notes_unwritten)} day(s) could not be written: "
            f"{str(unwritten.get('error', ''))[:200]} (the notes are in the store; learning or "
            "`reverie flush` writes the files again once the folder can be written)"
        )
    report.healthy = not report.reasons
    if report.facts_skipped:
        report.advice.append(
            f"{sum(report.facts_skipped.values())} change(s) the engine proposed to the facts were not made ("
            + ", ".join(f"{n} {reason}" for reason, n in sorted(report.facts_skipped.items()))
            + f"; fact_confidence_threshold is {ctx.settings.fact_confidence_threshold}; the last on "
            f"{str(skipped.get('last_at', ''))[:10]}): the episodes they came from stay in memory"
        )
    report.advice += _dream_advice(report, user)
    if report.unanswered_turns:
        report.advice.append(
            f"{report.unanswered_turns} turn(s) got no reply within reply_timeout_seconds "
            f"(now {ctx.settings.reply_timeout_seconds:g} s; the last closed on {str(unanswered.get('last_at', ''))[:10]}) "
            "and were learned from the user's message alone: the agent opened a turn (process_message, "
            "POST /api/turns) and never completed it (save_memory, complete_turn); a reply that comes later "
            "is still stored"
        )
    if report.profile_trimmed:
        report.advice.append(
            f"{sum(report.profile_trimmed.values())} older part(s) of the profile gave way to newer ones "
            f"(a section keeps its newest {ctx.settings.max_profile_chars} characters, max_profile_chars; the last on "
            f"{str(trimmed.get('last_at', ''))[:10]}): the episodes they were learned from stay in memory"
        )
    if report.facts >= NEAR_CAPACITY * report.capacity:
        report.advice.append(
            f"{report.facts} consolidated facts against a capacity of {report.capacity} (fact_capacity): past it the "
            "lowest-ranked learned facts are archived; facts a person stated are never evicted"
        )
    if report.evicted_over_capacity:
        report.advice.append(
            f"{report.evicted_over_capacity} learned facts were archived over capacity; the last "
            f"{evictions.get('last_count', 0)} on {str(evictions.get('last_at', ''))[:10]} "
            f"(`reverie undo {report.last_eviction}` brings them back; raise fact_capacity to keep more)"
        )
    report.advice += ctx.store.server_advice()
    if report.facts >= MIN_FACTS_FOR_SHARES and report.high_priority_share < MIN_HIGH_SHARE:
        # young memory has few [3x]+ entries: a sign of health missing, not a sign of ill health
        report.advice.append(f"only {report.high_priority_share:.0%} of the entries are [3x]+ (battle-tested) yet; "
                             "entries earn it by being used")
    return report


def _last_dream_lines(ctx: Context, user: str, report: HealthReport, latest: DreamRun | None) -> None:
    """What the last dream that ran rejected, could not take in and told as gone from MEMORY.md
    (from its report), and the lines a later run, skipped as having nothing new, could not take in."""
    done = latest if latest is None or latest.status == "done" else ctx.store.last_dream_run(user, status="done")
    # a run after it that did not dream (skipped, or failed) took hand edits in first all the same
    runs = [r for r in (done, latest) if r is not None and (r is done or r.status in ("skipped", "failed"))]
    if done is not None:
        told = done.report or {}
        report.last_dream = done.id
        report.dream_rejected = len(told.get("rejected") or [])
        report.dream_left = len(told.get("left") or [])
    for run in {r.id: r for r in runs}.values():
        told = run.report or {}
        refused = [RefusedLine(content=str(x.get("content", "")), reason=str(x.get("reason", "")))
                   for x in told.get("refused") or []]
        report.dream_refused += refused
        diary = str(told.get("diary") or "")
        if diary and (run is done or refused):
            report.dream_diaries.append(diary.rsplit("/", 1)[-1].removesuffix(".md"))
    report.dream_diaries = sorted(set(report.dream_diaries))
    snapshot = load_snapshot(ctx, user)
    by_runs = {(x.content, x.reason) for x in report.dream_refused}
    report.sync_refused = [x for x in (snapshot.refused if snapshot else []) if (x.content, x.reason) not in by_runs]


def _dream_advice(r: HealthReport, user: str) -> list[str]:
    """The last dream's lines that did not make MEMORY.md, counted, with where each is told."""
    said = []
    if r.dream_rejected:
        said.append(f"rejected {plural(r.dream_rejected, 'line')} its engine proposed that did not stand on the "
                    "facts and notes it cited")
    if r.dream_left:
        said.append(f"told {plural(r.dream_left, 'entry', 'entries')} that left MEMORY.md since it was last "
                    "written (forgotten, replaced by a newer fact, below the list)")
    if r.dream_refused:
        said.append(f"could not take in {_not_taken_in(r.dream_refused)}")
    advice = []
    if said:
        where = " and ".join(f"`reverie diary --user {shlex.quote(user)} --date {d}`" for d in r.dream_diaries)
        advice.append((f"the last dream ({r.last_dream}) " if r.last_dream else "a dream run ") + ", ".join(said)
                      + (f": {where} tells each with why" if where else ""))
    if r.sync_refused:
        advice.append(f"since the last dream, sync could not take in {_not_taken_in(r.sync_refused)} "
                      "(the next dream's diary tells them too)")
    return advice


def _not_taken_in(refused: list[RefusedLine]) -> str:
    """Lines written in MEMORY.md by hand that were not taken in, said: how many, and the first three."""
    lines = "; ".join(f"“{clip_line(x.content, 80)}” ({x.reason.split(':')[0]})" for x in refused[:3])
    more = f"; and {len(refused) - 3} more" if len(refused) > 3 else ""
    return (f"{plural(len(refused), 'line')} written in MEMORY.md by hand, so "
            f"{'it is' if len(refused) == 1 else 'they are'} no longer there: {lines}{more}")


def _verdict(r: HealthReport) -> list[str]:
    """Seed 002's signs of unhealthy memory that code can see."""
    reasons = []
    if r.duplicates:
        reasons.append(f"{len(r.duplicates)} pair(s) of entries say the same thing: run `reverie consolidate` or `reverie tidy`")
    if r.contradictions:
        reasons.append(f"{len(r.contradictions)} pair(s) of entries contradict each other: run `reverie tidy` or `reverie dream`")
    if r.facts >= MIN_FACTS_FOR_SHARES:
        if r.never_used / r.facts > MAX_NEVER_USED_SHARE:
            reasons.append(f"{r.never_used} of {r.facts} entries are [0x], never reinforced (noise): "
                           "review them with `reverie tidy` or `reverie forget`")
        if len(r.long_entries) / r.facts > MAX_LONG_SHARE:
            reasons.append(f"{len(r.long_entries)} entries are over {LONG_ENTRY} characters: run `reverie tidy`")
    if r.unlearned_episodes and r.learning_error:
        reasons.append(f"{r.unlearned_episodes} episode(s) wait to be learned and the last try failed: "
                       f"{clip_line(r.learning_error, 200)} (check the engine, then `reverie flush`)")
    if r.dream_error:
        reasons.append(f"the last dream failed ({r.dream_error}); MEMORY.md and the facts were left as they were "
                       "(check the engine, then `reverie dream`)")
    if r.pending_facts > max(MAX_PENDING, 2 * r.facts):
        reasons.append(f"{r.pending_facts} facts wait in pending, more than the curated memory can absorb")
    return reasons


__all__ = [
    "ChangeSet",
    "CleanReport",
    "ConsolidateReport",
    "HealthReport",
    "TidyReport",
    "UndoReport",
    "clean",
    "consolidate",
    "episode_weight",
    "health",
    "list_changes",
    "restore",
    "tidy",
    "undo",
]
