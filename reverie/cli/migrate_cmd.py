"""``reverie migrate --to postgresql://...``: a SQLite home copied into PostgreSQL, and checked."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import Progress

from reverie.cli.common import (
    Home,
    Json,
    Table,
    app,
    chosen_store,
    console,
    drop_chosen_store,
    emit_json,
    err_console,
    fail_cleanly,
    open_memory,
)
from reverie.errors import InvalidInput, StoreError
from reverie.migrate import count_home
from reverie.settings import Settings
from reverie.store.postgres import is_postgres_url, migration_target_problem, redact_url


@app.command("migrate")
def migrate(
    to: Annotated[str, typer.Option("--to", help="The PostgreSQL database to copy into: postgresql://... (empty; "
                                                 "?schema=NAME for a schema of its own).")],
    home: Home = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would be copied; change nothing.")] = False,
    as_json: Json = False,
) -> None:
    """Copy a SQLite home (every user, API key, journal and document) into PostgreSQL and check it.

    The check counts rows of every kind on both sides and compares each user's export."""
    with contextlib.ExitStack() as stack:
        if chosen_store() == to:
            # `export REVERIE_STORE=<target>` before migrating (the order docs/postgres.md gives)
            # names the target, not the SQLite home that is copied
            drop_chosen_store()
            if os.environ.get("REVERIE_STORE") == to:
                stack.callback(os.environ.__setitem__, "REVERIE_STORE", os.environ.pop("REVERIE_STORE"))
        with fail_cleanly():
            if not is_postgres_url(to):  # said before the home is read or opened
                raise InvalidInput("--to must be a postgresql:// URL", field="to")
            settings = Settings.load(home, **({"store": chosen_store()} if chosen_store() else {}))
            if is_postgres_url(settings.store) and settings.store == to.strip() and not chosen_store():
                # the home's config.toml already names the target (the first step docs/postgres.md
                # gives): what is copied is still the home's own SQLite store
                settings = Settings.load(home, store="")
            if is_postgres_url(settings.store):
                raise InvalidInput("migrate copies a SQLite home; this memory is already in PostgreSQL", field="store")
            if dry_run:  # the home is read as it is, not opened: nothing of it changes
                report = count_home(settings.home, to, db=Path(settings.store) if settings.store else None)
            else:
                # what would stop the copy is said before the home is opened (and upgraded, if
                # an older reverie wrote it): a refused migration leaves the home as it was
                problem = migration_target_problem(to)
                if problem:
                    raise StoreError(f"nothing was copied: {problem}")
        if not dry_run:
            with fail_cleanly(), open_memory(home, create=False, home_store=True) as mem, \
                    Progress(console=err_console, transient=True, disable=as_json) as progress:
                task = progress.add_task("reading the home", total=None)
                report = mem.migrate_to(to, on_progress=lambda step: progress.update(task, description=step))
    if as_json:
        emit_json(report.as_dict())
        if report.problems:
            raise typer.Exit(1)
        return
    table = Table(title=f"{'would copy' if dry_run else 'copied'} {report.source} -> {escape(redact_url(to))}")
    kinds = list(report.totals())[:-2]  # per user (API keys and settings belong to the install)
    table.add_column("user")
    for kind in kinds:
        table.add_column(kind.replace("_", " "), justify="right")
    for user, counts in report.users.items():
        table.add_row(escape(user), *(str(counts.get(k, 0)) for k in kinds))
    console.print(table)
    console.print(f"API keys: {report.api_keys}; install settings: {report.settings}")
    if dry_run:
        console.print("dry run: nothing was copied")
        for problem in report.problems:  # what the copy itself would refuse
            err_console.print(f"[bold red]the copy would fail:[/] {escape(problem)}", soft_wrap=True)
        if report.problems:
            raise typer.Exit(1)
    else:
        console.print("[green]checked:[/] the counts match and every user's export is the same in PostgreSQL")
