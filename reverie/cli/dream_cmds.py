"""Dream line and maintenance commands: dream, consolidate, tidy, clean, restore, health,
sync, changes, undo, notes and diary."""

from __future__ import annotations

import dataclasses
from contextlib import nullcontext
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from reverie.cli.common import (
    ApiKey,
    BaseUrl,
    Engine,
    Home,
    Json,
    Limit,
    Model,
    Table,
    User,
    app,
    console,
    dump,
    emit_json,
    err_console,
    open_memory,
    say,
)
from reverie.dream import DreamReport, describe

DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")]
Date = Annotated[Optional[str], typer.Option("--date", help="The day, YYYY-MM-DD (default: the latest).")]


@app.command()
def dream(
    user: User,
    home: Home = None,
    days: Annotated[Optional[int], typer.Option("--days", "-d", help="Days of daily notes to distill, 1 to 30 (default 3, or dream_days in config.toml).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Dream even if nothing changed since the last dream.")] = False,
    engine: Engine = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Deep Dream: distill recent daily notes and the facts into MEMORY.md and a dream diary."""

    with open_memory(home, engine=engine, base_url=base_url, model=model, api_key=api_key) as mem:
        spinner = console.status(f"dreaming over {user}'s recent notes…", spinner="moon")
        with nullcontext() if as_json else spinner:
            run = mem.dream(user=user, days=days, force=force)
        if as_json:
            emit_json(dataclasses.asdict(run))
        else:
            console.print(escape(describe(run)))
            report = DreamReport.model_validate(run.report or {})
            if report.synced:
                console.print("took in your edits of MEMORY.md first" + _undo_hint(report.synced, user))
                for line in report.hand_edits:
                    console.print(f"  {escape(line.reason)}: {escape(line.content)}")
            for line in report.refused:
                console.print(f"[red]not taken in[/] ({escape(line.reason)}): {escape(line.content)}")
            if report.journal:
                console.print(f"to take this dream back: {_undo_command(report.journal, user)}")
            files = mem.files  # with a shared store, the documents are rows, and files only in a mirror
            for label, path in (("MEMORY.md", report.memory_md), ("diary", report.diary)):
                if not path:
                    continue
                if files.store is not None and files.mirror is None:
                    name = path.split("/", 2)[-1] if path.startswith("users/") else path
                    console.print(f"[dim]{label}:[/] {escape(name)} of {escape(user)}, in the store (no file)")
                else:  # reports name files inside the home (or the mirror); a person wants the whole path
                    console.print(f"[dim]{label}:[/] {escape(str(files.home / path))}")
        if run.status == "failed":
            raise typer.Exit(1)


@app.command()
def consolidate(user: User, home: Home = None, dry_run: DryRun = False, as_json: Json = False) -> None:
    """Fold duplicate facts (exact, or Jaccard >= consolidate_jaccard) into the one with the highest [Nx]."""
    with open_memory(home) as mem:
        report = mem.consolidate(user=user, dry_run=dry_run)
        lines = []
        for group in report.groups:
            lines.append(f"keep [{group.kept.uses}x] {escape(group.kept.content)} [dim]{group.kept.fact_id}[/]")
            lines += [f"  [red]- archive[/] [{f.uses}x] {escape(f.content)} [dim]{f.fact_id}[/]" for f in group.archived]
        verb = "would archive" if dry_run else "archived"
        lines.append(f"{verb} {report.archived} duplicate(s) in {len(report.groups)} group(s)" + _undo_hint(report.journal, user))
        say(report, as_json, lines)


@app.command()
def tidy(
    user: User,
    home: Home = None,
    dry_run: DryRun = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Apply without asking.")] = False,
    engine: Engine = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """The engine proposes remove / rewrite / add; you see the diff first; applied reversibly."""
    with open_memory(home, engine=engine, base_url=base_url, model=model, api_key=api_key) as mem:
        proposal = mem.tidy(user=user, dry_run=True)
        if not as_json:
            console.print(escape(proposal.diff()), highlight=False)
        if dry_run or not proposal.accepted:
            if as_json:
                emit_json(dump(proposal))
            elif not proposal.accepted:
                console.print("nothing to tidy")
            return
        if not yes and not typer.confirm(f"Apply {len(proposal.accepted)} change(s)?", default=False):
            console.print("nothing changed")
            return
        result = mem.tidy(user=user, proposal=proposal)
        say(result, as_json, f"applied {len(result.accepted)} change(s)" + _undo_hint(result.journal, user))


@app.command()
def clean(user: User, home: Home = None, dry_run: DryRun = False, as_json: Json = False) -> None:
    """Archive episodes whose weight faded (old and unused); `reverie restore` brings one back."""
    with open_memory(home) as mem:
        report = mem.clean(user=user, dry_run=dry_run)
        lines = [f"[dim]{item.episode_id}[/] weight {item.weight:.3f}, {item.age_days:.0f} days: {escape(item.summary[:100])}"
                 for item in report.archived]
        verb = "would archive" if dry_run else "archived"
        if report.retired_tags:
            lines.append(f"retired {len(report.retired_tags)} tag(s) that never recurred: "
                         + escape(", ".join(report.retired_tags[:10])) + (" …" if len(report.retired_tags) > 10 else ""))
        lines.append(f"{verb} {len(report.archived)} episode(s); {report.kept} kept" + _undo_hint(report.journal, user))
        say(report, as_json, lines)


@app.command()
def restore(
    item_id: Annotated[str, typer.Argument(help="The archived fact's or episode's id.")],
    user: User,
    home: Home = None,
    as_json: Json = False,
) -> None:
    """Bring back an archived fact (forgotten, evicted, superseded) or an episode that clean archived."""
    with open_memory(home) as mem:
        if item_id.startswith("fact_"):
            item: Any = mem.restore_fact(item_id, user=user)
        else:
            item = mem.restore(item_id, user=user)
        emit_json(dump(item)) if as_json else console.print(f"restored {item.id}")


@app.command()
def health(
    user: User,
    home: Home = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit with code 1 when the memory is unhealthy.")] = False,
    as_json: Json = False,
) -> None:
    """Signs of healthy memory: [3x]+ share, [0x] count, long entries, duplicates, contradictions, backlog."""
    with open_memory(home, create=False) as mem:
        report = mem.health(user=user)
        if as_json:
            emit_json(dump(report))
        else:
            _print_health(report)
        if strict and not report.healthy:
            raise typer.Exit(1)


@app.command()
def check(home: Home = None, as_json: Json = False) -> None:
    """Read the whole store for damage and for search or tag data that disagrees with the memories.

    Exits 1 when something is wrong, and says what to do. For a failing disk, a crash while
    the file was copied, a store restored from a backup: its time grows with the store
    (seconds per GB)."""
    with open_memory(home, create=False) as mem:
        report = mem.check_store()
    if as_json:
        emit_json(dump(report))
    elif report.intact:
        console.print(f"[green]intact:[/] {escape(report.store)} (read in {report.seconds:.1f} s)")
    else:
        console.print(f"[red]damaged:[/] {escape(report.store)}")
        for problem in report.problems:
            console.print(f"  - {escape(problem)}")
        console.print(escape(report.advice), soft_wrap=True)
    if not report.intact:
        raise typer.Exit(1)


def _print_health(report: Any) -> None:
    table = Table(title=f"memory health of {report.user}", show_header=False)
    rows = (
        ("entries", str(report.facts)),
        ("[3x]+ (battle-tested)", f"{report.high_priority} ({report.high_priority_share:.0%})"),
        ("[0x] (never used)", str(report.never_used)),
        ("over 120 characters", str(len(report.long_entries))),
        ("duplicate pairs", str(len(report.duplicates))),
        ("contradicting pairs", str(len(report.contradictions))),
        ("pending facts", str(report.pending_facts)),
        ("episodes waiting to be learned", str(report.unlearned_episodes)),
        ("turns closed without a reply", str(report.unanswered_turns)),
        ("tags", ", ".join(f"{k} {v}" for k, v in sorted(report.tags.items())) or "-"),
        ("profile parts given way", ", ".join(f"{k} {v}" for k, v in sorted(report.profile_trimmed.items())) or "-"),
        ("engine changes to facts not made", ", ".join(f"{v} {k}" for k, v in sorted(report.facts_skipped.items())) or "-"),
        ("last dream: not in MEMORY.md", ", ".join(f"{n} {what}" for n, what in (
            (report.dream_rejected, "rejected"), (len(report.dream_refused), "written by hand, not taken in"),
            (report.dream_left, "left since it was last written")) if n) or "-"),
        ("since then: sync did not take in", f"{len(report.sync_refused)} written by hand" if report.sync_refused
         else "-"),
    )
    for name, value in rows:
        table.add_row(name, escape(value))
    console.print(table)
    for advice in report.advice:
        console.print(f"[dim]note:[/] {escape(advice)}")
    if report.healthy:
        console.print("[green]healthy[/]")
    else:
        console.print("[red]unhealthy:[/]")
        for reason in report.reasons:
            console.print(f"  - {escape(reason)}")


@app.command()
def sync(user: User, home: Home = None, as_json: Json = False) -> None:
    """Take your hand edits of MEMORY.md (edited, added, deleted lines) into the store."""
    with open_memory(home) as mem:
        report = mem.sync(user=user)
        moved = {m.fact_id: m for m in report.moved}
        lines = [f"{_sync_label(label, moved.get(line.fact_id or ''))} [dim]{line.fact_id}[/] {escape(line.content)}"
                 for label, found in (("edited", report.edited), ("added", report.added), ("archived", report.deleted),
                                      ("archived, a new line took its place:", report.superseded))
                 for line in found]
        lines += [f"already known, merged into [dim]{d.fact.fact_id}[/] {escape(d.fact.content)}: {escape(d.content)}"
                  for d in report.duplicates]
        lines += [_profile_said(p) for p in report.profile_lines]
        lines += [f"profile {section}: longer than max_profile_chars, {n} older part(s) gave way to the newest"
                  for section, n in report.profile_trimmed.items()]
        lines += [f"[yellow]heading:[/] {escape(note)}" for note in report.headings]
        lines += [f"[red]not taken in[/] ({escape(r.reason)}): {escape(r.content)}" for r in report.refused]
        lines.append("synced" + _undo_hint(report.journal, user) if report.changed else "MEMORY.md has no edits to take in")
        say(report, as_json, lines)


@app.command()
def undo(
    change_id: Annotated[str, typer.Argument(help="The id a dream, consolidate, tidy, sync, clean or profile edit reported (`reverie changes` lists them).")],
    user: User,
    home: Home = None,
    as_json: Json = False,
) -> None:
    """Take back a dream, consolidate, tidy, sync, clean or profile edit."""
    with open_memory(home) as mem:
        report = mem.undo(change_id, user=user)
        skipped = f", {report.skipped} skipped (deleted for good since)" if report.skipped else ""
        say(report, as_json, f"undid {report.action} {report.journal}: {report.restored} restored, "
                             f"{report.archived} archived{skipped}")


@app.command()
def changes(user: User, home: Home = None, limit: Limit = 50, as_json: Json = False) -> None:
    """List the journaled changes (dreams, consolidate, tidy, sync, clean, edits), newest first: the ids undo takes."""
    with open_memory(home, create=False) as mem:
        found = mem.changes(user=user, limit=limit)
        if as_json:
            emit_json(dump(found))
            return
        if not found:
            err_console.print(f"no journaled changes for {user}")
            return
        table = Table(title=f"changes of {user}, newest first")
        for column in ("id", "action", "at (UTC)", "changes", "undone"):
            table.add_column(column)
        for change in found:
            undone = f"{change.undone_at:%Y-%m-%d %H:%M}" if change.undone_at else "-"
            table.add_row(change.id, change.action, f"{change.at:%Y-%m-%d %H:%M:%S}", str(change.changes), undone)
        console.print(table)


@app.command()
def notes(user: User, home: Home = None, date: Date = None, as_json: Json = False) -> None:
    """Print the daily notes of one day (default: the latest day with notes)."""
    with open_memory(home, create=False) as mem:
        # the latest day with notes: the first line of the newest-first pages (not every note)
        newest = mem.note_page(user=user, limit=1).items if date is None else []
        day = date or (newest[0].date if newest else None)
        lines = mem.notes(user=user, date=day) if day else []
        if as_json:
            emit_json(dump(lines))
        elif not lines:
            err_console.print(f"no daily notes{' on ' + date if date else ''} for {user}")
            raise typer.Exit(1)  # as diary does: nothing found is no success
        else:
            console.print(f"[bold]{day}[/]")
            for note in lines:
                console.print(f"- {escape(note.content)}")


@app.command()
def diary(user: User, home: Home = None, date: Date = None, as_json: Json = False) -> None:
    """Print a dream diary (default: the latest)."""
    with open_memory(home, create=False) as mem:
        # one day's, or the newest: only that diary is read
        found = mem.diaries(user=user, date=date) if date else dict(mem.diary_page(user=user, limit=1).items)
        day = date or (max(found) if found else None)
        if as_json:
            emit_json({"date": day, "text": found.get(day, "")} if day else {})
        elif day not in found:
            err_console.print(f"no dream diary{' on ' + date if date else ''} for {user}")
            raise typer.Exit(1)
        else:
            console.print(escape(found[day]), highlight=False)


def _sync_label(label: str, moved: Any) -> str:
    """What sync did to a line: "edited", or where it went ("moved to Other") and why."""
    return label if moved is None else escape(moved.told(label))


def _profile_said(line: Any) -> str:
    """A profile line of MEMORY.md as sync took it in, in words."""
    if line.change == "deleted":
        return (f"profile line “{escape(line.label)}” deleted: the profile no longer says "
                f"“{escape(line.before)}”")
    if line.change == "added":
        return f"profile line “{escape(line.label)}” added: {escape(line.after)}"
    return f"profile line “{escape(line.label)}” changed: {escape(line.before)} → {escape(line.after)}"


def _undo_hint(journal: str | None, user: str) -> str:
    return f" (undo: {_undo_command(journal, user)})" if journal else ""


def _undo_command(journal: str, user: str) -> str:
    return f"reverie undo {journal} --user {user}"
