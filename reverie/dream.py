"""The dream line: daily notes in; the curated ``MEMORY.md`` and a dream diary out.

    >>> run = mem.dream(user="ana", days=3)                 # or background=True, on_done=callback
    >>> run.status, run.report["entries"]
    ('done', 24)
    >>> mem.undo(run.id, user="ana")                         # every dream can be taken back

A dream reads the user's consolidated facts and the last N days of daily notes,
asks the distill engine for a plan (keep / merge / add / remove, each citing the
input ids it stands on), checks in code that every entry is grounded in those
inputs, and applies what passes in one transaction, journaled for undo. Seed
004's safety rules: nothing to read, or nothing changed since the last dream,
means no run and no overwrite; one dream at a time per user; the nightly
:class:`Scheduler` flushes the learning line before it dreams.

``MEMORY.md`` is for people as much as for agents: each entry line ends with a
``<!-- fact_… -->`` marker, so that ``reverie sync`` (run before every dream)
can take a person's edits, additions and deletions into the store.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shlex
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from pydantic import Field

from reverie.claims import is_temporary, stored_relation
from reverie.context import Context
from reverie.engines.base import DistillRequest, FactRef, NoteRef, PlanEntry
from reverie.errors import Conflict, InvalidInput, ReverieError, StoreError
from reverie.facts import absorb, clip_learned, fact_rank, keyed, numbers, protected, unique
from reverie.inputs import normalize_category
from reverie.journal import Journal
from reverie.memory_md import (
    MovedLine,
    RefusedLine,
    Snapshot,
    SyncReport,
    follow,
    load_snapshot,
    publish_memory_md,
    refresh_memory_md,
    sync,
    withdrawn,
    withdrawn_like,
)
from reverie.messages import is_trivial
from reverie.models import (
    Fact,
    Model,
    Note,
    Profile,
    Provenance,
    as_utc,
    digest,
    new_id,
    utcnow,
)
from reverie.owners import owner_alive, process_owner
from reverie.redact import redact
from reverie.store.base import DreamRun, Page, decode_cursor, page_of
from reverie.text import (
    clip_line,
    exact_key,
    normalize_space,
    plural,
    preferred_language,
    term_set,
    token_set,
)

log = logging.getLogger("reverie.dream")

MAX_DAYS = 30
# share of an entry's content words that must appear in the inputs it cites
GROUNDING_MIN = 0.5
# a run another process left "running" longer than this is taken as dead
STALE_RUN = timedelta(hours=1)
ARCHIVE_MERGED = "merged into a denser line by the dream"
ARCHIVE_NEWER = "contradicted by a newer entry"
# a conflict learning settled before the dream: the dream lists the newer value in its place
TOOK_THE_PLACE = "learned since MEMORY.md was written, it took the place of the entry it contradicts"


def _in_home(ctx: Context, path: Path) -> str:
    """A written file as a path inside the memory home: reports reach API clients, which
    have no business knowing the server's folders."""
    return Path(path).resolve().relative_to(Path(ctx.files.home).resolve()).as_posix()


# ---------------------------------------------------------------- the chat command

USAGE = "usage: /memory dream [N] (N = days of notes to distill, 1 to 30; default 3)"
_CHAT = re.compile(r"^\s*/memory(?:\s+(.*))?$", re.IGNORECASE | re.DOTALL)


class ChatCommand(Model):
    """A parsed ``/memory dream [N]``; ``days`` None means the configured default (3)."""

    command: Literal["dream"] = "dream"
    days: int | None = None


class ChatReply(Model):
    """What a chat loop shows the person after ``/memory ...``."""

    ok: bool
    message: str
    run_id: str | None = None


def check_days(days: Any) -> int:
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise InvalidInput(f"days must be a whole number from 1 to {MAX_DAYS}, not {days!r}", field="days")
    return days


def parse_chat_command(text: str) -> ChatCommand | None:
    """``/memory dream [N]`` as a command; None for any other message; InvalidInput (with
    the usage) for a malformed ``/memory`` command."""
    found = _CHAT.match(text) if isinstance(text, str) else None
    if found is None:
        return None
    args = (found.group(1) or "").split()
    if not args:
        raise InvalidInput(USAGE, field="command")
    if args[0].lower() != "dream":
        raise InvalidInput(f"unknown command /memory {args[0]}; {USAGE}", field="command")
    if len(args) > 2:
        raise InvalidInput(f"too many arguments; {USAGE}", field="days")
    if len(args) == 1:
        return ChatCommand()
    if not re.fullmatch(r"[0-9]+", args[1]) or not 1 <= int(args[1]) <= MAX_DAYS:
        raise InvalidInput(f"N must be a whole number from 1 to {MAX_DAYS}, not {args[1]!r}; {USAGE}", field="days")
    return ChatCommand(days=int(args[1]))


def chat_command(
    ctx: Context, text: str, *, user: str, on_done: Callable[[DreamRun], Any] | None = None
) -> ChatReply | None:
    """Run a ``/memory dream [N]`` typed in a chat, in the background; None if ``text`` is no
    ``/memory`` command. Errors come back as a reply, not an exception."""
    try:
        command = parse_chat_command(text)
        if command is None:
            return None
        run = run_dream(ctx, user, days=command.days, background=True, on_done=on_done)
    except (InvalidInput, Conflict) as exc:
        return ChatReply(ok=False, message=str(exc))
    return ChatReply(
        ok=True,
        run_id=run.id,
        message=f"Dreaming over the last {run.days} day(s) of notes in the background (run {run.id}); "
        "I will report when it is done.",
    )


# ---------------------------------------------------------------- the report

class DreamEntry(Model):
    """One line of a dream report: what it says, which fact holds it, what it replaced."""

    content: str
    fact_id: str | None = None
    sources: list[str] = Field(default_factory=list)
    replaced: list[str] = Field(default_factory=list)
    reason: str = ""


class DreamReport(Model):
    since: str = ""
    until: str = ""
    facts_read: int = 0
    notes_read: int = 0
    skipped: str = ""  # why nothing was done ("" when the dream ran)
    kept: int = 0
    confirmed: int = 0  # entries the notes said again
    merged: list[DreamEntry] = Field(default_factory=list)
    added: list[DreamEntry] = Field(default_factory=list)
    # entries new in MEMORY.md that the dream did not write: promoted since it was last
    # written (a recall used them), stored by remember, or moved up the list
    joined: list[DreamEntry] = Field(default_factory=list)
    # entries MEMORY.md showed before with another [Nx] (reason: "3x → 14x")
    recounted: list[DreamEntry] = Field(default_factory=list)
    # entries MEMORY.md listed before that it lists no more, not by this dream's doing: archived
    # since it was written (a newer value learned or remembered, forgotten, evicted), or below
    # the entries that made the list; each with why
    left: list[DreamEntry] = Field(default_factory=list)
    conflicts: list[DreamEntry] = Field(default_factory=list)
    cleaned: list[DreamEntry] = Field(default_factory=list)
    rejected: list[DreamEntry] = Field(default_factory=list)
    entries: int = 0
    categories: int = 0
    overflow: int = 0  # entries left in the store because the list was full
    memory_md: str = ""
    diary: str = ""
    journal: str | None = None
    # the change id of the hand edits of MEMORY.md the dream took in first (a sync of its own)
    synced: str | None = None
    # those edits, each line with what was done ("changed", "added", "deleted", ...), and the
    # lines written by hand that were not taken in, with why: MEMORY.md is written again from
    # the store, so this report and the diary are where such a line is still said
    hand_edits: list[DreamEntry] = Field(default_factory=list)
    refused: list[DreamEntry] = Field(default_factory=list)
    output_hash: str = ""
    # what the dream left, use counts left out: a later dream that finds only the counts
    # changed refreshes MEMORY.md's [Nx] without asking the engine
    output_content_hash: str = ""

    def skip(self, reason: str) -> "DreamReport":
        self.skipped = reason
        return self


def describe(run: DreamRun) -> str:
    """One sentence about a run, for a chat reply or a terminal."""
    report = DreamReport.model_validate(run.report or {})
    if run.status in ("queued", "running"):
        return f"The dream {run.id} is {run.status}."
    if run.status == "failed":
        return f"The dream {run.id} failed: {run.error}"
    if run.status == "skipped":
        return f"No dream this time: {report.skipped}."
    return (
        f"Dream done: {plural(len(report.merged), 'merge')}, {len(report.added) + len(report.joined)} new, "
        f"{plural(len(report.conflicts), 'conflict')}, {len(report.cleaned)} cleaned, "
        f"{len(report.rejected)} rejected"
        + (f", {len(report.left)} left since MEMORY.md was last written" if report.left else "")
        + f"; MEMORY.md holds {plural(report.entries, 'entry', 'entries')}."
    )


# ---------------------------------------------------------------- running a dream

_GUARD = threading.Lock()
_RUNNING: dict[tuple[str, str], str] = {}
_HELD: dict[tuple[str, str], Callable[[], None]] = {}  # the store's lock on each running dream
_WORKERS: dict[str, tuple[str, threading.Thread]] = {}  # run id -> (home, background thread)


def run_dream(
    ctx: Context,
    user: str,
    *,
    days: int | None = None,
    force: bool = False,
    background: bool = False,
    on_done: Callable[[DreamRun], Any] | None = None,
    now: datetime | None = None,
) -> DreamRun:
    """Distill the last ``days`` days of notes and the consolidated facts into MEMORY.md.

    Returns the finished run, or with ``background=True`` the queued run at once
    (poll ``store.get_dream_run(run.id)``; ``on_done(run)`` is called when it
    ends). Raises Conflict while another dream of this user is running.
    """
    days = check_days(ctx.settings.dream_days if days is None else days)
    run = DreamRun(id=new_id("dream"), user=user, status="queued", days=days, started_at=utcnow(),
                   owner=process_owner())
    key = _claim(ctx, run)
    try:
        ctx.store.put_dream_run(run)
        if background:
            worker = threading.Thread(
                target=_finish, args=(ctx, run, key, force, now, on_done), name=f"reverie-dream-{user}", daemon=True
            )
            queued = dataclasses.replace(run)
            with _GUARD:
                _WORKERS[run.id] = (key[0], worker)
            worker.start()
            return queued
    except BaseException:
        _release(key)
        raise
    return _finish(ctx, run, key, force, now, on_done)


def wait(home: Path, timeout: float | None = None) -> bool:
    """Wait until the background dreams of this home have ended (call it before closing the
    store); False if some still run after ``timeout`` seconds."""
    where = str(Path(home).resolve())
    with _GUARD:
        workers = [w for h, w in _WORKERS.values() if h == where and w is not threading.current_thread()]
    for worker in workers:
        worker.join(timeout)
    return not any(w.is_alive() for w in workers)


# how long closing a memory waits for its background dreams (then abandon records them failed)
CLOSE_WAIT = 60.0


def _left_behind(run: DreamRun) -> bool:
    """A run queued or running that no process runs any more: its process is gone (killed),
    or it is this one, which runs no such dream now (its memory closed under it)."""
    if run.status not in ("queued", "running") or not run.owner:
        return False
    mine = run.owner == process_owner() and run.id not in _RUNNING.values()
    return mine or not owner_alive(run.owner)


def _fail_run(ctx: Context, run: DreamRun, why: str) -> None:
    run.status, run.error, run.finished_at = "failed", why, utcnow()
    with ctx.store.transaction():
        ctx.store.put_dream_run(run)


def abandon(ctx: Context) -> int:
    """Record as failed each background dream of this home still running when its memory
    closes (it can write nothing once the store is closed); returns how many."""
    where = str(Path(ctx.files.home).resolve())
    with _GUARD:
        running = [run_id for run_id, (h, w) in _WORKERS.items() if h == where and w.is_alive()]
    left = 0
    for run_id in running:
        run = ctx.store.get_dream_run(run_id)
        if run is not None and run.status in ("queued", "running"):
            _fail_run(ctx, run, f"the memory was closed while it ran (close waits {CLOSE_WAIT:g} s for a dream): "
                                "run it again")
            left += 1
    return left


def dream_status(ctx: Context, user: str, run_id: str | None = None) -> DreamRun | None:
    """A run by id, or the user's latest run. One that a stopped process left queued or
    running (killed mid-dream) is failed, and recorded so."""
    run = ctx.store.last_dream_run(user) if run_id is None else ctx.store.get_dream_run(run_id)
    if run is None or run.user != user:
        return None
    return _settled(ctx, run)


def _settled(ctx: Context, run: DreamRun) -> DreamRun:
    """``run`` as read a moment ago, failed if no process runs it any more. A run this process
    ended between that read and the check records its end before it lets go of its place
    (``_finish``), so the run is read again before anything is failed: a poll that raced the
    end of a dream had recorded a finished dream as failed."""
    if ctx.store.shared or not _left_behind(run):
        return run
    now = ctx.store.get_dream_run(run.id)
    if now is None or not _left_behind(now):
        return now or run
    _fail_run(ctx, now, "the process running it stopped")
    return now


def _claim(ctx: Context, run: DreamRun) -> tuple[str, str]:
    """One dream per user at a time: in this process, and through the store's lock across
    every process sharing the store (the replicas of a PostgreSQL store)."""
    key = (str(Path(ctx.files.home).resolve()), run.user)
    with _GUARD:
        if key in _RUNNING:
            raise Conflict(
                f"a dream is already running for {run.user} (run {_RUNNING[key]}); "
                "wait for it or poll its status"
            )
        release = ctx.store.try_lock(f"dream:{run.user}")
        if release is None:
            last = ctx.store.last_dream_run(run.user)
            raise Conflict(
                f"a dream is already running for {run.user} in another process"
                + (f" (run {last.id})" if last and last.status in ("queued", "running") else "")
                + "; wait for it or poll its status"
            )
        try:
            last = ctx.store.last_dream_run(run.user)
            if last and last.status in ("queued", "running"):
                # the store's lock is free, or no process runs it any more
                if ctx.store.shared or _left_behind(last):
                    _fail_run(ctx, last, "the process running it stopped")
                elif utcnow() - as_utc(last.started_at) < STALE_RUN:
                    raise Conflict(
                        f"another process is dreaming for {run.user} (run {last.id}); "
                        "a run left behind by a stopped process expires after an hour"
                    )
        except BaseException:
            release()
            raise
        _RUNNING[key] = run.id
        _HELD[key] = release
    return key


def _release(key: tuple[str, str]) -> None:
    with _GUARD:
        _RUNNING.pop(key, None)
        release = _HELD.pop(key, None)
    if release is not None:
        release()


def _finish(
    ctx: Context,
    run: DreamRun,
    key: tuple[str, str],
    force: bool,
    now: datetime | None,
    on_done: Callable[[DreamRun], Any] | None,
) -> DreamRun:
    try:
        run.status = "running"
        ctx.store.put_dream_run(run)
        when = as_utc(now) if now else utcnow()
        report = _dream(ctx, run, force, when)
        if report.skipped and (report.synced or report.refused):
            # it took hand edits in (or could not): the diary tells them, as a dream's does
            report.diary = _in_home(ctx, write_diary(ctx, run, report, when))
        run.status = "skipped" if report.skipped else "done"
        run.report = report.model_dump(mode="json")
    except Exception as exc:  # a background run has nobody to raise to: the run records it
        if isinstance(exc, ReverieError):
            log.warning("dream %s for %s failed: %s", run.id, run.user, exc)
        else:
            log.exception("dream %s for %s failed", run.id, run.user)
        run.status, run.error = "failed", str(exc) or type(exc).__name__
        _tell_failed(ctx, run, as_utc(now) if now else utcnow())
    finally:
        run.finished_at = utcnow()
        try:
            ctx.store.put_dream_run(run)
        except StoreError as exc:  # closed under it (abandon recorded it), or out of reach
            log.warning("dream %s for %s ended %s, which could not be recorded: %s", run.id, run.user, run.status, exc)
        finally:
            _release(key)
    if on_done is not None:
        try:
            on_done(run)
        except Exception:
            log.exception("the on_done callback of dream %s failed", run.id)
    with _GUARD:
        _WORKERS.pop(run.id, None)
    return run


def _tell_failed(ctx: Context, run: DreamRun, now: datetime) -> None:
    """A failed run that took hand edits of MEMORY.md in first (or could not take a line in)
    tells them in the diary: MEMORY.md was written again without a line it could not take in."""
    partial = DreamReport.model_validate(run.report or {})
    if not (partial.synced or partial.refused):
        return
    try:
        partial.diary = _in_home(ctx, write_diary(ctx, run, partial, now))
        run.report = partial.model_dump(mode="json")
    except Exception:  # the store or the folder out of reach: the run's report still holds them
        log.warning("dream %s for %s: the diary of its hand edits could not be written", run.id, run.user)


@dataclass
class _Inputs:
    """What one dream reads, and when each piece of evidence dates from."""

    profile: Profile
    facts: dict[str, Fact]  # consolidated: the engine's input
    pending: list[Fact]  # not shown to the engine; a note that repeats one promotes it
    notes: dict[str, Note]
    times: dict[str, datetime]
    # pending facts that took the place of an entry MEMORY.md lists (learning archived the
    # entry as contradicted by them): the engine reads them with the facts, and the dream
    # consolidates them, else MEMORY.md would show neither the old value nor the new one.
    # {successor id: the entry it replaced}
    successors: dict[str, Fact] = dataclasses.field(default_factory=dict)

    @classmethod
    def read(cls, ctx: Context, user: str, since: str, until: str) -> "_Inputs":
        store = ctx.store
        facts = {f.id: f for f in store.list_facts(user, status="consolidated")}
        pending = store.list_facts(user, status="pending")
        successors = _successors(ctx, user, facts, pending)
        facts |= {f.id: f for f in pending if f.id in successors}
        pending = [f for f in pending if f.id not in successors]
        notes = {n.id: n for n in store.list_notes(user, since=since, until=until)}
        cited = store.get_notes({i for f in facts.values() for i in f.provenance.notes} - set(notes))
        episodes = store.get_episodes(
            {e for f in facts.values() for e in f.provenance.episodes}
            | {e for n in [*notes.values(), *cited.values()] for e in n.episodes}
        )
        times: dict[str, datetime] = {}
        for note in [*cited.values(), *notes.values()]:
            times[note.id] = max((episodes[e].occurred_at for e in note.episodes if e in episodes),
                                 default=as_utc(note.created_at))
        for fact in facts.values():
            evidence = [episodes[e].occurred_at for e in fact.provenance.episodes if e in episodes]
            evidence += [times[n] for n in fact.provenance.notes if n in times]
            times[fact.id] = max(evidence, default=as_utc(fact.created_at))
        return cls(store.get_profile(user), facts, pending, notes, times, successors)

    def digest(self, *, counts: bool = True) -> str:
        """Changes when what a dream would read changes, use counts included (they rank the
        entries, and MEMORY.md shows them: [Nx]) unless ``counts`` is False."""
        return digest(
            {
                "facts": sorted((f.id, f.content, f.category, f.area or "", f.uses if counts else 0)
                                for f in self.facts.values()),
                "notes": sorted((n.id, n.content) for n in self.notes.values()),
                "profile": {k: s.summary for k, s in self.profile.sections().items()},
            }
        )

    def request(self, max_entries: int) -> DistillRequest:
        facts = [
            FactRef(id=f.id, content=f.content, category=f.category, confidence=f.confidence, uses=f.uses,
                    status=f.status, updated_at=self.times[f.id])
            for f in self.facts.values()
        ]
        notes = [NoteRef(id=n.id, date=n.date, content=n.content) for n in self.notes.values()]
        text = " ".join([*(f.content for f in facts), *(n.content for n in notes)])
        return DistillRequest(facts=facts, notes=notes, max_entries=max_entries, language=preferred_language(text))


def _successors(ctx: Context, user: str, facts: dict[str, Fact], pending: list[Fact]) -> dict[str, Fact]:
    """The pending facts that took the place of an entry MEMORY.md lists, each with that entry."""
    snapshot = load_snapshot(ctx, user)
    if snapshot is None or not pending:
        return {}
    waiting = {f.id: f for f in pending}
    shown = [f for f in ctx.store.get_facts([i for i in snapshot.listed_since_dream() if i not in facts]).values()
             if f.status == "archived" and f.superseded_by]
    found: dict[str, Fact] = {}
    for old in shown:
        pool = {**ctx.store.get_facts([old.superseded_by or ""]), **waiting}
        successor = follow(old, pool)
        if successor.id in waiting:
            found.setdefault(successor.id, old)
    return found


def _took_in(report: DreamReport, synced: SyncReport) -> None:
    """What a sync the dream ran did with the hand edits of MEMORY.md, told in its report."""
    moved = {m.fact_id: m for m in synced.moved}
    for what, lines in (("changed", synced.edited), ("added", synced.added), ("deleted", synced.deleted),
                        ("archived: a line added by hand took its place", synced.superseded)):
        report.hand_edits += [DreamEntry(content=line.content, fact_id=line.fact_id, reason=_moved(what, moved.get(
            line.fact_id or ""))) for line in lines]
    report.hand_edits += [DreamEntry(content=d.content, fact_id=d.fact.fact_id, replaced=[d.fact.content],
                                     reason="already an entry: merged into it") for d in synced.duplicates]
    report.hand_edits += [DreamEntry(content=p.label, reason=f"profile line {p.change}", replaced=[p.before] if
                                     p.before else []) for p in synced.profile_lines]
    # a refused line is kept as written nowhere else: held to a fact's length, and redacted
    report.refused += [DreamEntry(content=kept.content, reason=kept.reason) for kept in map(RefusedLine.kept, synced.refused)]


def _moved(what: str, moved: MovedLine | None) -> str:
    """What a sync did to a line, with where it went when it changed heading."""
    return what if moved is None else moved.told(what)


def _window(now: datetime, days: int) -> tuple[str, str]:
    until = now.date()
    return (until - timedelta(days=days - 1)).isoformat(), until.isoformat()


def _dream(ctx: Context, run: DreamRun, force: bool, now: datetime) -> DreamReport:
    user = run.user
    before = load_snapshot(ctx, user)
    # lines syncs since the last dream could not take in: this dream tells them, then forgets them
    earlier = [DreamEntry(content=r.content, reason=f"{r.reason} (refused by a sync before this dream)")
               for r in (before.refused if before else [])]
    first = sync(ctx, user=user)
    since, until = _window(now, run.days)
    inputs = _Inputs.read(ctx, user, since, until)
    report = DreamReport(since=since, until=until, facts_read=len(inputs.facts), notes_read=len(inputs.notes),
                         synced=first.journal)
    _took_in(report, first)
    run.report = report.model_dump(mode="json")  # what a run that fails from here on still tells
    if not inputs.facts and not inputs.notes:
        return report.skip(f"there are no facts and no daily notes from {since} to {until}")
    run.input_hash = inputs.digest()
    last = ctx.store.last_dream_run(user, status="done")
    if not force and last and run.input_hash in (last.input_hash, (last.report or {}).get("output_hash")):
        return report.skip(f"nothing changed since the last dream ({last.id}); force a run to dream anyway")
    if not force and last and inputs.digest(counts=False) == (last.report or {}).get("output_content_hash"):
        # only use counts changed: MEMORY.md shows them, and no engine is asked about the same entries
        refresh_memory_md(ctx, user)
        return report.skip(f"only use counts changed since the last dream ({last.id}): MEMORY.md shows them now; "
                           "force a run to dream anyway")
    plan = ctx.engines.distill.distill(inputs.request(ctx.settings.dream_max_entries))
    # MEMORY.md edited while the engine thought: taken in now, so that the dream neither
    # overwrites the edit nor reads against an older file
    late = sync(ctx, user=user)
    report.synced = report.synced or late.journal
    _took_in(report, late)
    run.report = report.model_dump(mode="json")
    journal = Journal(id=run.id, user=user, action="dream")
    with ctx.store.transaction():
        # read again under the lock: the learning line may have written while the engine thought
        inputs = _Inputs.read(ctx, user, since, until)
        entries = _check(ctx, user, plan.entries, inputs, report)
        if not any(e.action != "remove" for e in entries):
            return report.skip("the plan kept no entry, so MEMORY.md was left as it is")
        curated = _Apply(ctx, inputs, journal, report, now, load_snapshot(ctx, user)).run(entries)
        # lines added by hand meanwhile stay in MEMORY.md, whatever the plan said (a line that repeats
        # a fact brings that one)
        hand = [a.fact_id for a in late.added] + [d.fact.fact_id for d in late.duplicates]
        if hand:
            listed = {f.id for f in curated}
            added = ctx.store.get_facts([i for i in hand if i not in listed])
            curated += [f for f in added.values() if f.status == "consolidated"]
        report.journal = journal.id if journal.commit(ctx.store).changes else None
    report.entries = len(curated)
    report.categories = len({f.category for f in curated})
    if curated:  # never an empty overwrite
        report.memory_md = _in_home(ctx, publish_memory_md(ctx, user, curated, dreamed_at=until, dream=True))
        report.refused = earlier + report.refused
    left = _Inputs.read(ctx, user, since, until)
    report.output_hash, report.output_content_hash = left.digest(), left.digest(counts=False)
    report.diary = _in_home(ctx, write_diary(ctx, run, report, now))
    return report


@dataclass
class _Entry:
    """A plan entry that passed the grounding check."""

    action: str
    content: str
    category: str
    facts: list[Fact]
    notes: list[Note]
    reason: str


def _check(ctx: Context, user: str, proposals: list[PlanEntry], inputs: _Inputs, report: DreamReport) -> list[_Entry]:
    entries = []
    taken_out = withdrawn(ctx.store, user)  # the lines a person deleted, read once
    for proposal in proposals:
        entry, problem = _ground(proposal, inputs)
        if entry is not None and entry.action in ("add", "merge") and entry.notes and not entry.facts and taken_out:
            # a line a person deleted is not written back from what was said before
            deleted = withdrawn_like(taken_out, entry.content, ctx.settings.duplicate_jaccard)
            if deleted is not None and all(inputs.times.get(n.id, deleted) <= deleted for n in entry.notes):
                entry, problem = None, f"a person deleted this line on {deleted.date().isoformat()}, after its notes"
        if entry is None:
            report.rejected.append(DreamEntry(content=proposal.content, sources=proposal.sources, reason=problem))
            log.info("dream: rejected %s %r: %s", proposal.action, proposal.content, problem)
        else:
            entries.append(entry)
    return entries


def _ground(p: PlanEntry, inputs: _Inputs) -> tuple[_Entry | None, str]:
    """No fabrication: an entry must cite inputs, and what it says must come from them."""
    cited = unique(p.sources)
    unknown = [s for s in cited if s not in inputs.facts and s not in inputs.notes]
    if not cited:
        return None, "it cites no sources"
    if unknown:
        return None, f"it cites {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} not among the inputs"
    facts = [inputs.facts[s] for s in cited if s in inputs.facts]
    notes = [inputs.notes[s] for s in cited if s in inputs.notes]
    if p.action in ("keep", "remove"):
        if not facts:
            return None, f"{p.action} must cite a fact"
        return _Entry(p.action, "", facts[0].category, facts, [], p.reason), ""
    content = clip_learned(normalize_space(redact(p.content)))  # an engine's line, held as learning holds one
    words = token_set(content)
    if not words:
        return None, "it has no content"
    source = " ".join([*(f.content for f in facts), *(n.content for n in notes)])
    invented = sorted(numbers(content) - numbers(source))
    if invented:
        return None, f"it states {', '.join(invented)}, which its sources do not"
    missing = sorted(words - token_set(source))
    if 1 - len(missing) / len(words) < GROUNDING_MIN:
        return None, (
            f"only {len(words) - len(missing)} of its {len(words)} content words appear in its sources "
            f"(not there: {', '.join(missing[:6])})"
        )
    return _Entry(p.action, content, normalize_category(p.category)[0], facts, notes, p.reason), ""


class _Apply:
    """Applies checked entries in the caller's transaction; returns the curated list."""

    def __init__(self, ctx: Context, inputs: _Inputs, journal: Journal, report: DreamReport, now: datetime,
                 shown: Snapshot | None):
        self.ctx, self.inputs, self.journal, self.report, self.now = ctx, inputs, journal, report, now
        self.shown = shown  # what MEMORY.md showed before this dream (None: there was none)
        self.pool: dict[str, Fact] = {**inputs.facts, **{f.id: f for f in inputs.pending}}
        self.confirmed: set[str] = set()  # input facts the notes said again
        journal.watch(self.pool.values())

    def run(self, entries: list[_Entry]) -> list[Fact]:
        self.kept_ids = {f.id for e in entries if e.action == "keep" for f in e.facts}
        for fact_id, old in self.inputs.successors.items():
            fact = self.pool[fact_id]
            if fact.status == "pending":
                fact.status = "consolidated"
                self.ctx.facts.index_fact(fact, fact.tags)
                self.report.conflicts.append(DreamEntry(
                    content=fact.content, fact_id=fact.id, replaced=[old.content],
                    reason=TOOK_THE_PLACE))
        results: list[tuple[_Entry, Fact]] = []
        for entry in entries:
            if entry.action == "keep":
                results += [(entry, f) for f in entry.facts if not self._clean_temporary(f)]
            elif entry.action in ("merge", "add"):
                if is_temporary(entry.content) or is_trivial(entry.content):
                    self.report.cleaned.append(DreamEntry(content=entry.content, reason="temporary state"))
                else:
                    results += [(entry, fact) for fact in self._write(entry)]
        for entry in entries:
            if entry.action == "remove":
                self._remove(entry, results)
        live = self._settle([f for f in self.pool.values() if f.status == "consolidated"])
        return self._curate([f for _, f in results], live)

    def _clean_temporary(self, fact: Fact) -> bool:
        if not is_temporary(fact.content) or keyed(fact):
            return False
        self._archive(fact, "temporary state", None)
        self.report.cleaned.append(DreamEntry(content=fact.content, fact_id=fact.id, reason="temporary state"))
        return True

    def _write(self, entry: _Entry) -> list[Fact]:
        """A merged or new line: an input fact that says it already, a pending fact it confirms,
        or a new consolidated fact; merged facts are archived into it. A new line that the
        facts say between them is those facts."""
        sources = [f for f in entry.facts if f.status != "archived"]
        key = exact_key(entry.content)
        survivor = next((f for f in sources if exact_key(f.content) == key), None)
        if survivor is None:
            # a line an input fact says word for word, cited or not: that fact, said again (a copy
            # written and folded back into it would be a merge each night, and a fact archived)
            survivor = next((f for f in self.inputs.facts.values()
                             if f.status == "consolidated" and exact_key(f.content) == key), None)
        if survivor is None:
            probe = Fact(user=self.journal.user, content=entry.content, category=entry.category)
            dup = self.ctx.settings.duplicate_jaccard
            survivor = next((f for f in self.inputs.pending if f.status == "pending"
                             and stored_relation(probe.content, f.content, dup) == "duplicate"), None)
        if survivor is None and entry.action == "add" and (said := self._said_by(entry.content)):
            # a line the facts say between them ("Moved to Lisbon and they work as a data engineer
            # at Acme now" beside "Moved to Lisbon" and "Works as a data engineer at Acme now"):
            # no third fact; the notes said those again, which promotes a pending one
            for fact in said:
                if fact.status == "pending":
                    fact.status, fact.updated_at = "consolidated", self.now
                    self.ctx.facts.index_fact(fact, fact.tags)
                    self.report.added.append(DreamEntry(content=fact.content, fact_id=fact.id,
                                                        sources=[n.id for n in entry.notes],
                                                        reason="the notes said it again"))
                elif fact.id in self.inputs.facts:
                    self.confirmed.add(fact.id)
            return said
        if survivor is None:
            survivor = self._new_fact(entry, sources)
        before = survivor.model_dump()
        survivor.status = "consolidated"
        survivor.uses = max([survivor.uses, *(f.uses for f in sources)])
        absorb(survivor, sources, entry.notes)
        if survivor.model_dump() != before:  # a line the notes merely repeat keeps its recency
            survivor.updated_at = self.now
        times = self.inputs.times
        evidence = [survivor.id, *(f.id for f in sources), *(n.id for n in entry.notes)]
        times[survivor.id] = max((times[i] for i in evidence if i in times), default=self.now)
        self.ctx.facts.index_fact(survivor, unique([*survivor.tags, *(t for f in sources for t in f.tags)]))
        merged = [f for f in sources if f is not survivor and f.id not in self.kept_ids and not keyed(f)]
        for fact in merged:
            self._archive(fact, ARCHIVE_MERGED, survivor)
        if survivor.id in self.inputs.facts and not merged:
            self.confirmed.add(survivor.id)
            return [survivor]
        line = DreamEntry(content=survivor.content, fact_id=survivor.id,
                          sources=[*(f.id for f in entry.facts), *(n.id for n in entry.notes)],
                          replaced=[f.content for f in merged], reason=entry.reason)
        (self.report.merged if merged else self.report.added).append(line)
        return [survivor]

    def _said_by(self, content: str) -> list[Fact]:
        """The live facts that say ``content`` between them: two or more that each share two
        of its words and together hold every one of them (else none)."""
        words = term_set(content)
        near = {f.id: (f, held) for f in self.pool.values()
                if f.status != "archived" and len(held := term_set(f.content) & words) >= 2}
        if len(near) < 2 or not words <= frozenset().union(*(held for _, held in near.values())):
            return []
        return [f for f, _ in near.values()]

    def _new_fact(self, entry: _Entry, sources: list[Fact]) -> Fact:
        agents = {f.agent for f in sources}
        fact = Fact(
            user=self.journal.user,
            agent=agents.pop() if len(agents) == 1 else None,
            content=entry.content,
            category=entry.category,
            area=next((f.area for f in sources if f.area), "General") if entry.category == "preference" else None,
            confidence=max([0.8, *(f.confidence for f in sources)]),
            status="consolidated",
            provenance=Provenance(origin="dream"),
            created_at=self.now,
            updated_at=self.now,
        )
        self.pool[fact.id] = fact
        self.journal.created(fact)
        return fact

    def _remove(self, entry: _Entry, results: list[tuple[_Entry, Fact]]) -> None:
        named = set(re.findall(r"(?:fact|note)_[0-9a-f]+", entry.reason))
        for fact in entry.facts:
            if fact.status == "archived" or fact.id in self.kept_ids or keyed(fact) or any(f is fact for _, f in results):
                continue
            successor = next(
                (f for e, f in results if named & {f.id, *(x.id for x in e.facts), *(n.id for n in e.notes)}),
                None,
            ) or next((f for _, f in results
                       if stored_relation(f.content, fact.content, self.ctx.settings.duplicate_jaccard) == "conflict"), None)
            reason = entry.reason or "dropped from the curated list"
            if successor is None and protected(fact):
                # a person's own line, a correction or a constraint: no engine takes it back on
                # its word alone (tidy refuses the same); a newer value that contradicts it does
                self.report.rejected.append(DreamEntry(content=fact.content, fact_id=fact.id, reason=(
                    f"removing it ({reason}) was refused: it is a person's own line, a correction or a constraint, "
                    "and a dream keeps those unless a newer value replaces them")))
                results.append((entry, fact))  # kept in MEMORY.md, as a keep would
                self.kept_ids.add(fact.id)
                continue
            self._archive(fact, ARCHIVE_NEWER if successor else reason, successor)
            if successor is not None:
                self.report.conflicts.append(DreamEntry(content=successor.content, fact_id=successor.id,
                                                        replaced=[fact.content], reason=reason))
            else:
                self.report.cleaned.append(DreamEntry(content=fact.content, fact_id=fact.id, reason=reason))

    def _settle(self, facts: list[Fact]) -> list[Fact]:
        """Checked in code whatever the engine said: a duplicate folds into the line with the
        higher [Nx]; on a same-subject contradiction the newer evidence wins."""
        dup = self.ctx.settings.duplicate_jaccard
        accepted: list[Fact] = []
        by_time = sorted(facts, key=lambda f: self.inputs.times.get(f.id, as_utc(f.created_at)), reverse=True)
        for fact in by_time:
            for i, other in enumerate(accepted):
                found = stored_relation(fact.content, other.content, dup)
                if found is not None and keyed(fact) and keyed(other):
                    continue  # two items an application keeps under keys of its own: both stay
                if found == "duplicate":
                    keep, drop = (other, fact) if other.uses >= fact.uses else (fact, other)
                    if keyed(drop):
                        keep, drop = drop, keep
                    self.ctx.facts.fold(drop, keep, f"{ARCHIVE_MERGED} (same as {keep.id})", self.journal, self.now)
                    accepted[i] = keep
                    self.report.merged.append(DreamEntry(content=keep.content, fact_id=keep.id,
                                                         replaced=[drop.content], reason="duplicate"))
                    break
                if found == "conflict" and fact.category == other.category and not keyed(fact):
                    self._archive(fact, ARCHIVE_NEWER, other)
                    self.report.conflicts.append(DreamEntry(content=other.content, fact_id=other.id,
                                                            replaced=[fact.content], reason="the newer entry wins"))
                    break
            else:
                accepted.append(fact)
        return accepted

    def _curate(self, chosen: list[Fact], live: list[Fact]) -> list[Fact]:
        alive = {f.id: f for f in live}
        curated: dict[str, Fact] = {}
        for fact in chosen:
            current = follow(fact, self.pool)
            if current.id in alive:
                curated.setdefault(current.id, current)
        ranked = sorted(curated.values(), key=lambda f: (f.category != "correction", -fact_rank(f, self.now)))
        kept = ranked[: self.ctx.settings.dream_max_entries]
        # (a newer value that took an entry's place is told as the conflict, not as kept)
        joined = self._compare(kept) | set(self.inputs.successors)
        self.report.kept = sum(1 for i in self.kept_ids if i in curated and i not in joined)
        self.report.confirmed = len(self.confirmed - joined)
        self.report.overflow = len(live) - len(kept)
        return kept

    def _compare(self, listed: list[Fact]) -> set[str]:
        """What changed in MEMORY.md besides what this dream wrote, told in the report: the
        entries that joined it, and the [Nx] that changed. Returns the ids that joined."""
        if self.shown is None:
            return set()  # no MEMORY.md before: the dream tells each entry as kept or added
        written = {e.fact_id for e in [*self.report.added, *self.report.merged, *self.report.conflicts]}
        self._left(listed)
        for fact in listed:
            was = self.shown.uses.get(fact.id)
            if fact.id not in self.shown.facts and fact.id not in written:
                self.report.joined.append(DreamEntry(content=fact.content, fact_id=fact.id,
                                                     reason=_JOINED.get(fact.provenance.origin, "moved up the list")))
            elif was is not None and was != fact.uses:
                self.report.recounted.append(DreamEntry(content=fact.content, fact_id=fact.id,
                                                        reason=f"{was}x → {fact.uses}x"))
        return {e.fact_id for e in self.report.joined if e.fact_id}

    def _left(self, listed: list[Fact]) -> None:
        """The entries MEMORY.md listed before and lists no more that this dream did not take out
        itself (its merges, conflicts and cleaning tell those), each with why it is gone."""
        assert self.shown is not None
        now_listed = {f.id for f in listed}
        told = {*(e.fact_id for e in [*self.report.cleaned, *self.report.rejected, *self.report.hand_edits]),
                *(old.id for old in self.inputs.successors.values())}
        shown = self.shown.listed_since_dream()
        gone = [i for i in shown if i not in now_listed and i not in told]
        stored = self.ctx.store.get_facts([i for i in gone if i not in self.pool])
        for fact_id in gone:
            fact = self.pool.get(fact_id) or stored.get(fact_id)
            line = shown[fact_id].content
            if fact is None:
                continue  # deleted for good: its words are told nowhere any more
            if fact.id in self.inputs.facts and fact.status == "archived":
                continue  # this dream archived it: merged or in a conflict, told there
            elif fact.status == "archived":
                successor = self.pool.get(fact.superseded_by or "") or (
                    self.ctx.store.get_fact(fact.superseded_by) if fact.superseded_by else None)
                reason = fact.archived_reason or "archived"
                if successor is not None and successor.content not in reason:
                    reason += f": {_quote(successor.content)}"
            elif fact.status == "pending":
                reason = "back among the pending facts"
            else:
                reason = (f"it stays in the store for recall, below the {self.ctx.settings.dream_max_entries} "
                          "entries that made the list")
            self.report.left.append(DreamEntry(content=line, fact_id=fact_id, reason=reason))

    def _archive(self, fact: Fact, reason: str, successor: Fact | None) -> None:
        self.ctx.facts.archive_fact(fact, reason, successor, self.now)


# why an entry a dream did not write is new in MEMORY.md, by its fact's origin (a dream's own
# line that was not listed before moved up)
_JOINED = {"learned": "learned, then promoted", "manual": "stored by remember", "import": "imported",
           "sync": "added by hand"}


# ---------------------------------------------------------------- the dream diary

def diary_dir(ctx: Context, user: str) -> Path:
    return ctx.files.diary_dir(user)


def write_diary(ctx: Context, run: DreamRun, report: DreamReport, now: datetime) -> Path:
    """Append this run's story to the day's diary (one file a day, one section a run)."""
    path = ctx.files.diary_file(run.user, now.date().isoformat())
    old = ctx.files.read(run.user, path)
    head = old.rstrip() + "\n\n" if old is not None else f"# Dream diary, {now.date()}\n\n"
    ctx.files.write(run.user, path, head + diary_section(run, report, now))
    return path


def diary_section(run: DreamRun, report: DreamReport, now: datetime) -> str:
    r = report
    span = "day" if run.days == 1 else f"{run.days} days"
    story = [
        f"I read {plural(r.facts_read, 'fact')} and {plural(r.notes_read, 'note line')} "
        f"from the last {span} ({r.since} to {r.until})."
    ]
    if r.skipped or run.status == "failed":
        story = []
    if r.synced:
        edits = f": {_list(f'{e.reason} {_quote(e.content)}' for e in r.hand_edits)}" if r.hand_edits else ""
        story.append(f"First I took in the edits made to MEMORY.md by hand{edits} (to take them back: "
                     f"`reverie undo {r.synced} --user {shlex.quote(run.user)}`).")
    if r.refused:
        story.append(
            f"I could not take in {plural(len(r.refused), 'line')} written in MEMORY.md by hand, so "
            f"{'it is' if len(r.refused) == 1 else 'they are'} no longer there: "
            f"{_list(f'{_quote(e.content)} ({e.reason})' for e in r.refused)}."
        )
    if r.skipped or run.status == "failed":
        end = (f"Then I did not dream: {r.skipped}." if r.skipped else
               f"Then the dream failed, and changed nothing more: {clip_line(run.error, 200)}")
        return f"## {now.strftime('%H:%M')} UTC, run {run.id}\n\n" + "\n".join([*story, end]) + "\n"
    kept = r.kept + r.confirmed
    if kept == 1:
        story.append("I kept 1 entry as it was" + (", and the notes said it again." if r.confirmed else "."))
    elif kept:
        story.append(f"I kept {kept} entries as they were"
                     + (f", {r.confirmed} of them said again in the notes." if r.confirmed else "."))
    if r.merged:
        replaced = sum(len(e.replaced) for e in r.merged) or len(r.merged)
        example = next((e for e in r.merged if e.replaced), None)
        story.append(
            f"I merged {plural(replaced, 'entry', 'entries')} into {plural(len(r.merged), 'denser line')}"
            + (f"; for example {_quote(example.content)} now also stands for {_quote(example.replaced[0])}."
               if example else ".")
        )
    if r.added:
        story.append(
            f"The notes held {plural(len(r.added), 'new durable thing')}: {_list(_quote(e.content) for e in r.added)}."
        )
    if r.joined:
        story.append(
            f"{plural(len(r.joined), 'entry', 'entries')} joined MEMORY.md since it was last written: "
            f"{_list(f'{_quote(e.content)} ({e.reason})' for e in r.joined)}."
        )
    if r.left:
        story.append(
            f"{plural(len(r.left), 'entry', 'entries')} left MEMORY.md since it was last written: "
            f"{_list(f'{_quote(e.content)} ({e.reason})' for e in r.left)}."
        )
    if r.recounted:
        story.append(
            f"The use count of {plural(len(r.recounted), 'entry', 'entries')} changed: "
            f"{_list(f'{_quote(e.content)} ({e.reason})' for e in r.recounted)}."
        )
    for conflict in r.conflicts:
        if conflict.reason == TOOK_THE_PLACE:
            story.append(
                f"{_quote(conflict.replaced[0])} conflicted with {_quote(conflict.content)}, learned since; the older "
                "was archived with a link to it then, and I listed the newer in its place."
            )
            continue
        story.append(
            f"{_quote(conflict.replaced[0])} conflicted with {_quote(conflict.content)}; I kept the newer "
            "and archived the older with a link to it."
        )
    if r.cleaned:
        story.append(
            f"I cleaned {plural(len(r.cleaned), 'entry', 'entries')}: "
            f"{_list(f'{_quote(e.content)} ({e.reason})' for e in r.cleaned)}."
        )
    if r.rejected:
        story.append(
            f"I rejected {plural(len(r.rejected), 'proposal')} that did not stand on the inputs: "
            f"{_list(f'{_quote(e.content)} ({e.reason})' for e in r.rejected)}."
        )
    if not (r.merged or r.added or r.joined or r.left or r.conflicts or r.cleaned):
        story.append("Nothing needed merging, adding or cleaning.")
    if r.memory_md:
        story.append(
            f"MEMORY.md now holds {plural(r.entries, 'entry', 'entries')} in "
            f"{plural(r.categories, 'category', 'categories')}"
            + (f"; {r.overflow} more stay in the store for recall but did not make the list." if r.overflow else ".")
        )
    else:
        story.append("No entry remained, so I left MEMORY.md as it was.")
    if r.journal:
        story.append(f"To take this dream back: `reverie undo {r.journal} --user {shlex.quote(run.user)}`.")
    return f"## {now.strftime('%H:%M')} UTC, run {run.id}\n\n" + "\n".join(story) + "\n"


def _quote(text: str, limit: int = 80) -> str:
    text = normalize_space(text)
    return f"“{text if len(text) <= limit else text[: limit - 1] + '…'}”"


def _list(items: Iterable[str], limit: int = 5) -> str:
    items = list(items)
    shown = items[:limit]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    if len(shown) == 1:
        return shown[0] + more
    return ", ".join(shown[:-1]) + (", " if more else " and ") + shown[-1] + more


def diaries(ctx: Context, user: str, day: str | None = None) -> dict[str, str]:
    """Dream diaries by date, oldest first (only ``day`` when given)."""
    return {stem: ctx.files.read(user, path) or "" for stem, path in sorted(_diary_files(ctx, user).items())
            if day is None or stem == day}


# dream diaries a page holds at most (a diary is one day's runs: a year of them)
DIARY_PAGE_LIMIT = 366


def diary_page(ctx: Context, user: str, *, after: str | None = None, limit: int = 30) -> Page[tuple[str, str]]:
    """Dream diaries, the newest day first, ``limit`` (date, markdown) at a time: the days are
    listed by name and only the page's diaries are read."""
    last = decode_cursor(after, (str,))
    days = sorted(_diary_files(ctx, user).items(), reverse=True)
    if last is not None:
        days = [d for d in days if d[0] < last[0]]
    page = page_of(days[: limit + 1], limit, lambda d: (d[0],))
    return Page([(day, ctx.files.read(user, path) or "") for day, path in page.items], page.next)


def forget_lines(ctx: Context, user: str, lines: list[str]) -> int:
    """A line deleted for good (a fact forgotten with ``hard``, a conversation's note lines)
    leaves the reports of past dreams and their diaries too: each time they tell it, it
    reads "[forgotten]". Returns how many reports and diaries changed."""
    lines = [line for line in dict.fromkeys(lines) if line.strip()]
    if not lines:
        return 0
    changed = 0
    for run in ctx.store.dream_runs(user):
        if run.report is None:
            continue
        said = json.dumps(run.report, ensure_ascii=False)
        if not any(line in said for line in lines):
            continue
        run.report = _without_lines(run.report, lines)
        with ctx.store.transaction():
            ctx.store.put_dream_run(run)
        changed += 1
    for path in _diary_files(ctx, user).values():
        text = ctx.files.read(user, path)
        if text is not None and any(line in text for line in lines):
            ctx.files.write(user, path, _without_lines(text, lines))
            changed += 1
    return changed


def _without_lines(value: Any, lines: list[str]) -> Any:
    if isinstance(value, str):
        for line in sorted(lines, key=len, reverse=True):
            value = value.replace(line, FORGOTTEN)
        return value
    if isinstance(value, list):
        return [_without_lines(v, lines) for v in value]
    if isinstance(value, dict):
        return {k: _without_lines(v, lines) for k, v in value.items()}
    return value


# what stands for a line deleted for good in a past dream's report and diary
FORGOTTEN = "[forgotten]"


def _diary_files(ctx: Context, user: str) -> dict[str, Path]:
    return {p.stem: p for p in ctx.files.listing(user, diary_dir(ctx, user)) if re.fullmatch(r"\d{4}-\d\d-\d\d", p.stem)}


__all__ = [
    "ChatCommand",
    "ChatReply",
    "DreamEntry",
    "DreamReport",
    "chat_command",
    "describe",
    "diaries",
    "diary_page",
    "parse_chat_command",
    "run_dream",
]
