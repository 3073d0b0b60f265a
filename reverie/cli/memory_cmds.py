"""Core memory commands: ingest, remember, facts, profile, episodes, recall, export/import..."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.progress import Progress

from reverie.cli.common import (
    After,
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
    command_line,
    console,
    dump,
    emit_json,
    err_console,
    fail_cleanly,
    more,
    open_memory,
    say,
)
from reverie.curation import created_by, remembered
from reverie.errors import InvalidInput
from reverie.journal import recorded
from reverie.recall import Recall

tags_app = typer.Typer(help="The feature-tag dictionary: list and merge tags.", no_args_is_help=True)
app.add_typer(tags_app, name="tags")


@app.command()
def ingest(
    file: Annotated[Path, typer.Argument(help="JSON / JSONL messages, 'Speaker: text' lines, or a LoCoMo file.", exists=True, dir_okay=False)],
    user: User,
    home: Home = None,
    thread: Annotated[Optional[str], typer.Option(help="Thread for the messages (default: from the file, else 'default').")] = None,
    learn: Annotated[bool, typer.Option("--learn/--no-learn", help="Learn now (the default), or only store: the episodes "
                                        "wait for `reverie flush` or a server to learn them.")] = True,
    engine: Engine = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Ingest a past conversation from a file, then learn from it.

    Input stored before (the same file again) is recognised and skipped."""
    # --no-learn: this process learns nothing, not even as it closes; the store keeps the queue
    with open_memory(home, engine=engine, base_url=base_url, model=model, api_key=api_key,
                     learn="here" if learn else "elsewhere") as mem:
        with Progress(console=console, transient=True, disable=as_json) as progress:
            task = progress.add_task("ingesting", total=None)
            with fail_cleanly():
                report = mem.ingest(file, user=user, thread=thread, learn=learn,
                                    on_progress=lambda step: progress.update(task, description=step))
        waiting, error = report.waiting, report.learning_error
        if as_json:
            emit_json({**report.model_dump(mode="json"), "waiting": waiting, "error": error})
        else:
            partial = f" ({report.skipped_messages} messages)" if report.skipped_messages != report.skipped else ""
            learned = (f"learned from {report.learned}" if learn else
                       f"not learned yet ({mem.learning_backlog(user=user)[0]} wait: `reverie flush --user {escape(user)}`)")
            console.print(
                f"Ingested [bold]{report.episodes}[/] episodes from {report.conversations} conversation(s); "
                f"skipped [bold]{report.skipped}[/] stored before{partial}; "
                f"{learned}. {user} has {report.facts} facts now."
            )
        fail_if_waiting(waiting, error, as_json)


@app.command()
def remember(
    content: Annotated[str, typer.Argument(help="The fact, one line.")],
    user: User,
    home: Home = None,
    category: Annotated[str, typer.Option(help="preference, correction, context, goal, behavior, identity, constraint, decision, cognitive, knowledge, other")] = "other",
    area: Annotated[Optional[str], typer.Option(help="For preferences: Communication, Code, Tools, Workflow, General.")] = None,
    as_json: Json = False,
) -> None:
    """Store a fact you vouch for (a near-duplicate reinforces the existing one)."""
    with open_memory(home) as mem:
        fact, outcome = remembered(lambda: mem.remember(content, user=user, category=category, area=area))
        # a near-duplicate is not stored twice: the stored line gains a use, and the caller hears so
        verb = "already known, reinforced" if outcome == "reinforced" else "remembered"
        replaced = f" (replaces {fact.supersedes}, now archived)" if outcome == "superseded" else ""
        say(fact, as_json, f"[green]{verb}[/] {fact.id} {escape(f'[{fact.category} {fact.uses}x]')} "
                           f"{escape(fact.content)}{escape(replaced)}")


@app.command()
def facts(
    user: User,
    home: Home = None,
    status: Annotated[Optional[str], typer.Option(help="pending, consolidated or archived (default: both live tiers).")] = None,
    category: Annotated[Optional[str], typer.Option(help="Only this category.")] = None,
    limit: Limit = 100,
    after: After = None,
    as_json: Json = False,
) -> None:
    """List facts, most used first, --limit at a time (the next command to run is printed)."""
    with open_memory(home, create=False) as mem:
        page = mem.fact_page(user=user, status=status, category=category, after=after, limit=limit)
        items = page.items
        if as_json:
            emit_json(dump(items))
        else:
            table = Table(title=f"facts of {user}", show_lines=False)
            for col in ("id", "uses", "status", "category", "conf", "content"):
                table.add_column(col, overflow="fold" if col == "content" else "ellipsis", no_wrap=col == "id")
            for f in items:
                table.add_row(f.id, f"[{f.uses}x]", f.status, f.category, f"{f.confidence:.2f}", escape(f.content))
            console.print(table)
        more(page.next, command_line("facts", user=user, home=home, status=status, category=category, limit=limit))


@app.command()
def profile(
    user: User,
    home: Home = None,
    set_section: Annotated[Optional[tuple[str, str]], typer.Option(
        "--set", metavar="SECTION TEXT",
        help="Write one section by hand, e.g. --set user.workContext 'Teaches maths in Lyon' (undo takes it back).",
    )] = None,
    clear: Annotated[Optional[str], typer.Option(
        "--clear", metavar="SECTION", help="Empty one section, e.g. a job learned from someone else's words.",
    )] = None,
    as_json: Json = False,
) -> None:
    """Show the structured profile (work, personal, top of mind, thinking style, history); --set or --clear a section."""
    if set_section is not None and clear is not None:
        with fail_cleanly():
            raise InvalidInput("--set and --clear each change one section: give one of them", field="set")
    edit = set_section if set_section is not None else (clear, "") if clear is not None else None
    with open_memory(home, create=edit is not None) as mem:
        change = None
        if edit is not None:
            _, change = recorded(lambda: mem.set_profile(edit[0], edit[1], user=user))
        prof = mem.profile(user=user)
        if as_json:
            emit_json(prof.to_json() if edit is None else {"section": edit[0], "change": change, "profile": prof.to_json()})
            return
        table = Table(title=f"profile of {user}")
        table.add_column("section")
        table.add_column("summary", overflow="fold")
        table.add_column("updated")
        for name, section in prof.sections().items():
            updated = section.updated_at.strftime("%Y-%m-%d %H:%M") if section.updated_at else ""
            table.add_row(name, escape(section.summary) or "[dim]-[/]", updated)
        console.print(table)
        if edit is not None:
            what = "cleared" if not edit[1] else "set"
            console.print(f"{what} {escape(edit[0])}" + (f" (undo: reverie undo {change} --user {user})" if change else ""))


@app.command()
def episodes(
    user: User,
    home: Home = None,
    thread: Annotated[Optional[str], typer.Option(help="Only this thread.")] = None,
    status: Annotated[Optional[str], typer.Option(help="pending, completed, interrupted or failed.")] = None,
    limit: Limit = 20,
    after: After = None,
    as_json: Json = False,
) -> None:
    """List episodes, newest first, --limit at a time (the next command to run is printed)."""
    with open_memory(home, create=False) as mem:
        page = mem.episode_page(user=user, thread=thread, status=status, after=after, limit=limit)
        if as_json:
            emit_json(dump(page.items))
        else:
            table = Table(title=f"episodes of {user}")
            for col in ("id", "when", "thread", "status", "summary"):
                table.add_column(col, overflow="fold" if col == "summary" else "ellipsis")
            for e in page.items:
                text = e.summary or e.user_text
                table.add_row(e.id, e.occurred_at.strftime("%Y-%m-%d %H:%M"), e.thread, e.status, escape(text[:200]))
            console.print(table)
        more(page.next, command_line("episodes", user=user, home=home, thread=thread, status=status, limit=limit))


@app.command()
def forget(
    item_id: Annotated[str, typer.Argument(help="The fact's id, or an episode's (ep_..., with --hard).")],
    user: User,
    home: Home = None,
    hard: Annotated[bool, typer.Option("--hard", help="Delete for good instead of archiving.")] = False,
    purge: Annotated[bool, typer.Option("--purge", help="With --hard: then rewrite the store so no byte of it "
                                                        "stays in its files (slow on a large store).")] = False,
    as_json: Json = False,
) -> None:
    """Archive a fact (or delete it with --hard); delete an episode (a conversation) with --hard."""
    with open_memory(home) as mem:
        if item_id.startswith("ep_"):
            if not hard:
                raise InvalidInput("an episode is deleted for good, not archived: add --hard (or give it "
                                   "`reverie feedback ID rejected` to keep it out of recall)", field="hard")
            gone = mem.delete_episode(item_id, user=user, purge=purge)
            kept = (f"; {len(gone.facts)} fact(s) learned from it stay: {', '.join(gone.facts)} "
                    "(reverie forget ID --hard each to delete it too)") if gone.facts else ""
            say(gone, as_json, f"deleted {gone.episode_id} and {len(gone.notes)} note line(s){kept}")
            return
        fact = mem.forget(item_id, user=user, hard=hard, purge=purge)
        verb = "deleted" if hard else "archived"
        say({"id": fact.id, "deleted": hard, "status": "deleted" if hard else fact.status}, as_json,
            f"{verb} {fact.id}: {escape(fact.content)}")


@app.command()
def reinforce(
    fact_id: Annotated[str, typer.Argument(help="The fact's id.")],
    user: User,
    home: Home = None,
    as_json: Json = False,
) -> None:
    """Count one more use of a fact ([Nx] + 1)."""
    with open_memory(home) as mem:
        fact = mem.reinforce(fact_id, user=user)
        say(fact, as_json, f"reinforced {fact.id} -> {escape(f'[{fact.uses}x]')} {escape(fact.content)}")


@app.command()
def feedback(
    episode_id: Annotated[str, typer.Argument(help="The episode's id.")],
    status: Annotated[str, typer.Argument(help="confirmed, rejected, ignored or partial.")],
    user: User,
    home: Home = None,
    reason: Annotated[str, typer.Option(help="Why.")] = "",
    as_json: Json = False,
) -> None:
    """Record how a recalled episode worked out (a rejected one is not recalled, until a later feedback changes it)."""
    with open_memory(home) as mem:
        ep = mem.feedback(episode_id, status, reason=reason, user=user)
        say(ep, as_json, f"feedback on {ep.id}: {status}")


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="The new message.")],
    user: User,
    home: Home = None,
    budget: Annotated[Optional[int], typer.Option(
        help="Token budget of the block, 1-100,000 (default: the configured `budget`, 2000 unless set).")] = None,
    thread: Annotated[Optional[str], typer.Option(help="The current thread.")] = None,
    why: Annotated[bool, typer.Option("--why", help="Show every item's score parts and matched tags.")] = False,
    track: Annotated[bool, typer.Option("--track/--no-track", help="Count what is delivered as used ([Nx]), as an "
                                        "agent's recall does (the default), or only look.")] = True,
    engine: Engine = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Print the <memory> block for a message (read-only apart from usage counts; --no-track: read-only)."""
    with open_memory(home, create=False, engine=engine, base_url=base_url, model=model, api_key=api_key) as mem:
        result = mem.recall(query, user=user, budget=budget, thread=thread, explain=why, track=track)
        if as_json:
            emit_json(result.as_dict())
            return
        p = result.perception
        console.print(
            f"[dim]route[/] {p.route}  [dim]scene[/] {p.scene}/{p.sub_scene or '-'}  [dim]intent[/] {p.intent}  "
            f"[dim]tags[/] {', '.join(p.tags) or '-'}  [dim]tokens[/] {result.tokens}/{result.budget}"
        )
        console.print(escape(result.context) if result.context else f"[dim]({escape(result.empty_reason)})[/]")
        if why and result.items:  # nothing delivered: no table of nothing
            print_why(result)


def print_why(result: Recall) -> None:
    table = Table(title="why each item was chosen")
    for col in ("kind", "depth", "score", "parts", "tags", "from"):
        table.add_column(col, overflow="fold")
    for item in result.items:
        parts = " ".join(f"{k}={v:.2f}" for k, v in item.parts.items())
        # a profile line comes from a section of the profile, named by its id
        origin = item.id if item.kind == "profile" else ", ".join(item.source_ids[:4] or item.provenance[:2])
        table.add_row(item.kind, item.depth, f"{item.score:.3f}", parts, ", ".join(item.matched_tags), origin)
    console.print(table)


@app.command("flush")
def flush_cmd(
    user: Annotated[Optional[str], typer.Option("--user", "-u", help="Only this user.")] = None,
    home: Home = None,
    engine: Engine = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key: ApiKey = None,
    as_json: Json = False,
) -> None:
    """Learn now from every episode still waiting; exits 1 when learning failed and some still wait."""
    with open_memory(home, engine=engine, base_url=base_url, model=model, api_key=api_key) as mem:
        learned = mem.flush(user=user)
        waiting, error = mem.learning_backlog(user=user)
        say({"learned": learned, "waiting": waiting, "error": error}, as_json, f"learned from {learned} episodes")
        fail_if_waiting(waiting, error, as_json)


def fail_if_waiting(waiting: int, error: str, as_json: bool) -> None:
    """Learning failed and episodes still wait: say so (they are kept; a later flush retries) and exit 1."""
    if not waiting:
        return
    if not as_json:
        err_console.print(f"[bold red]error:[/] {waiting} episode(s) wait to be learned"
                          + (f"; the last try failed: {escape(error[:300])}" if error else "")
                          + " (they are kept; `reverie flush` tries again)", soft_wrap=True)
    raise typer.Exit(1)


@app.command("delete-user")
def delete_user_cmd(
    user: User,
    home: Home = None,
    confirm: Annotated[str, typer.Option("--confirm", help="The user id again: this cannot be undone.")] = "",
    purge: Annotated[bool, typer.Option("--purge", help="Then rewrite the store so no byte of it stays in its files "
                                        "(slow on a large store; other writers wait).")] = False,
    as_json: Json = False,
) -> None:
    """Delete a user's whole memory: every row and file. Irreversible; --confirm repeats the user id."""
    with open_memory(home, create=False) as mem:
        deleted = mem.delete_user(user=user, confirm=confirm, purge=purge)
        said = ", ".join(f"{n} {k}" for k, n in deleted.items() if n)
        say({"user": user, "deleted": deleted}, as_json,
            f"deleted the memory of {escape(user)}: {said}" if said else f"nothing stored for {escape(user)}: nothing deleted")


@app.command("export")
def export_cmd(
    user: User,
    home: Home = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="File to write (default, or -: stdout).")] = None,
) -> None:
    """Export a user's whole memory as one JSON envelope (written as it is read: any size)."""
    with open_memory(home, create=False) as mem:
        held = mem.stats(user=user)["users"].get(user, {})
        if not any(held.get(k) for k in ("episodes", "facts", "notes", "knowledge")) and not any(
                s.summary for s in mem.profile(user=user).sections().values()):
            # an empty envelope is a valid export, but most often the sign of a mistyped id
            err_console.print(f"note: nothing is stored for user {escape(user)!r} in this home "
                              "(`reverie stats` lists its users); the export is empty")
        if output is None or str(output) == "-":
            mem.export_to(sys.stdout, user=user)
            return
        if output.exists() and not output.is_file() and not output.is_dir():
            # a device, a pipe (/dev/stdout): written through, never replaced by a renamed file
            with output.open("w", encoding="utf-8") as out:
                mem.export_to(out, user=user)
            return
        partial = output.with_name(f".{output.name}.partial")
        try:
            with partial.open("w", encoding="utf-8") as out:
                mem.export_to(out, user=user)
            os.replace(partial, output)  # a failed export leaves no half-written file
        except OSError as exc:  # a missing folder, a folder given as the file, no permission
            partial.unlink(missing_ok=True)
            raise InvalidInput(f"cannot write the export to {output}: {exc.strerror or exc}",
                               field="output") from exc
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        console.print(f"exported to {output}")


@app.command("import")
def import_cmd(
    file: Annotated[Path, typer.Argument(help="An export envelope or a deer-flow memory.json.", exists=True, dir_okay=False)],
    user: User,
    home: Home = None,
    lenient: Annotated[bool, typer.Option("--lenient", help="Correct a wrong value or skip an unusable item (counted) "
                                          "instead of refusing the whole file; a long profile section keeps its newest part.")] = False,
    as_json: Json = False,
) -> None:
    """Import an export (or a deer-flow memory.json); all or nothing (--lenient: corrected and skipped, counted)."""
    with open_memory(home) as mem:
        with Progress(console=err_console, transient=True, disable=as_json) as progress:
            task = progress.add_task(f"importing {file.name}", total=None)

            def shown(counts: dict[str, int]) -> None:
                done = ", ".join(f"{v:,} {k}" for k, v in counts.items() if v and k != "replaced")
                progress.update(task, description=f"importing {file.name}: {done}")

            counts = mem.import_file(file, user=user, on_progress=shown, strict=not lenient)
        say(counts, as_json, "imported " + ", ".join(f"{v} {k}" for k, v in counts.items()))


@app.command()
def stats(user: Annotated[Optional[str], typer.Option("--user", "-u", help="Only this user.")] = None, home: Home = None, as_json: Json = False) -> None:
    """Counts per user: episodes, facts, notes, tags."""
    with open_memory(home, create=False) as mem:
        data = mem.stats(user=user)
        if as_json:
            emit_json(data)
            return
        table = Table(title=f"reverie at {escape(data['store'])} (schema v{data['schema_version']})")
        for col in ("user", "episodes", "facts", "notes", "knowledge", "tags", "threads"):
            table.add_column(col)
        for name, s in data["users"].items():
            tags = ", ".join(f"{k} {v}" for k, v in s["tags"].items())
            table.add_row(name, str(s["episodes"]), str(s["facts"]), str(s["notes"]), str(s["knowledge"]), tags, str(s["threads"]))
        console.print(table)


@tags_app.command("list")
def tags_list(
    user: User,
    home: Home = None,
    status: Annotated[Optional[str], typer.Option(help="unexamined, active, deprecated or merged.")] = None,
    limit: Limit = 100,
    after: After = None,
    as_json: Json = False,
) -> None:
    """List tags by name with their status and how many items carry them, --limit at a time."""
    with open_memory(home, create=False) as mem:
        page = mem.tag_page(user=user, status=status, after=after, limit=limit)
        tags = page.items
        if as_json:
            emit_json(tags)
        else:
            table = Table(title=f"tags of {user}")
            for col in ("name", "status", "items", "relations", "merged to"):
                table.add_column(col)
            for t in tags:
                rel = ", ".join(f"{r['target']} ({r['level']})" for r in t["relations"])
                table.add_row(t["name"], t["status"], str(t["items"]), rel, t["merged_to"] or "")
            console.print(table)
        more(page.next, command_line("tags list", user=user, home=home, status=status, limit=limit))


@tags_app.command("merge")
def tags_merge(
    old: Annotated[str, typer.Argument(help="The tag to retire (kept as a redirect).")],
    new: Annotated[str, typer.Argument(help="The tag that takes its items.")],
    user: User,
    home: Home = None,
    as_json: Json = False,
) -> None:
    """Merge tag OLD into NEW (journaled: `reverie changes` lists it, `reverie undo` takes it back)."""
    with open_memory(home) as mem:
        moved = mem.merge_tags(old, new, user=user)
        say({"moved": moved}, as_json, f"merged {old!r} into {new!r}: {moved} items moved")



knowledge_app = typer.Typer(help="Knowledge: whole markdown documents, recalled when they match.", no_args_is_help=True)
app.add_typer(knowledge_app, name="knowledge")


@knowledge_app.command("add")
def knowledge_add(
    file: Annotated[Path, typer.Argument(help="A markdown file.", exists=True, dir_okay=False)],
    user: User,
    home: Home = None,
    title: Annotated[Optional[str], typer.Option(help="Title (default: the file's first heading, else its name).")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", help="A feature tag (repeatable).")] = None,
    scope: Annotated[str, typer.Option(help="global (every recall), agent (that agent's) or project.")] = "global",
    agent: Annotated[Optional[str], typer.Option(help="The agent a scope-agent document belongs to.")] = None,
    project: Annotated[Optional[str], typer.Option(help="The project a scope-project document belongs to.")] = None,
    as_json: Json = False,
) -> None:
    """Add a markdown document to a user's knowledge (the same document again is not stored twice)."""
    with open_memory(home) as mem:
        try:
            body = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{file.name} is not UTF-8 text (byte {exc.start}: {exc.reason})", field="file") from exc
        heading = next((line.lstrip("# ").strip() for line in body.splitlines() if line.startswith("#")), None)
        doc, new = created_by(lambda: mem.add_knowledge(title or heading or file.stem, body, user=user, tags=tag or [],
                                                        scope=scope, agent=agent, project=project))
        verb = "added" if new else "already stored, nothing added:"
        say(doc, as_json, f"{verb} {doc.id}: {escape(doc.title)}")


@knowledge_app.command("delete")
def knowledge_delete(
    doc_id: Annotated[str, typer.Argument(help="The document's id (`reverie knowledge list` shows them).")],
    user: User,
    home: Home = None,
    as_json: Json = False,
) -> None:
    """Delete a knowledge document for good (a new version is a document of its own: delete the old one)."""
    with open_memory(home, create=False) as mem:
        doc = mem.delete_knowledge(doc_id, user=user)
        say(doc, as_json, f"deleted {doc.id}: {escape(doc.title)}")


@knowledge_app.command("list")
def knowledge_list(
    user: User,
    home: Home = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100, help="Documents a page (1-100: each may hold 100,000 characters).")] = 20,
    after: After = None,
    as_json: Json = False,
) -> None:
    """List a user's knowledge documents, the newest first, --limit at a time (the next command to run is printed)."""
    with open_memory(home, create=False) as mem:
        page = mem.knowledge_page(user=user, after=after, limit=limit)
        if as_json:
            emit_json(dump(page.items))
        else:
            table = Table(title=f"knowledge of {user}")
            for col in ("id", "title", "scope", "tags"):
                table.add_column(col, no_wrap=col == "id")
            for d in page.items:
                table.add_row(d.id, escape(d.title), d.scope, ", ".join(d.tags))
            console.print(table)
        more(page.next, command_line("knowledge list", user=user, home=home, limit=limit))
