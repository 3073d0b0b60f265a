"""What every ``reverie`` command shares: the app, the options, opening a memory, and
printing results (JSON for scripts, rich text for people)."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sqlite3
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Iterable, Iterator, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table as RichTable
from typer.core import TyperGroup

from reverie.errors import NotFound, ReverieError, StoreError
from reverie.memory import Memory
from reverie.observe import configure_logging
from reverie.settings import Settings
from reverie.store import holds_store, is_postgres_url, redact_url
from reverie.store.failures import store_failure
from reverie.version import __version__

_STORE: ContextVar[str | None] = ContextVar("reverie_cli_store", default=None)
# the SQLite file of the memory this command opened, for what its failures say (fail_cleanly)
_STORE_FILE: ContextVar[Path | None] = ContextVar("reverie_cli_store_file", default=None)


def _store_option() -> Any:
    """``--store`` (or ``$REVERIE_STORE``) as a parameter of its own, recorded for open_memory."""
    probe = typer.Typer()

    @probe.command()
    def probe_command(
        store: Annotated[Optional[str], typer.Option(
            "--store", envvar="REVERIE_STORE", show_default=False,
            help="Where the memory lives: a postgresql:// URL (pip install 'reverie\\[postgres]'); "
                 "default SQLite in the home.")] = None,
    ) -> None: ...

    param = typer.main.get_command(probe).params[0]
    param.expose_value = False

    def note(ctx: Any, given: Any, value: str | None) -> str | None:
        _STORE.set(value or None)
        return value

    param.callback = note
    return param


class _EveryCommandTakesStore(TyperGroup):
    """The command group that gives each command, however deep, the ``--store`` option."""

    def __init__(self, **attrs: Any):
        super().__init__(**attrs)
        option = _store_option()

        def walk(group: Any) -> None:
            for command in group.commands.values():
                if hasattr(command, "commands"):
                    walk(command)
                elif not any(p.name == "store" for p in command.params):
                    command.params.append(option)

        walk(self)


def chosen_store() -> str | None:
    """The store this command was given with ``--store`` (or ``$REVERIE_STORE``), if any."""
    return _STORE.get()


def drop_chosen_store() -> None:
    """This command reads the home's own store, whatever ``--store`` / ``$REVERIE_STORE`` said."""
    _STORE.set(None)


app = typer.Typer(
    cls=_EveryCommandTakesStore,
    name="reverie",
    help="Local-first long-term memory for AI agents.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
def _version(value: bool) -> None:
    if value:
        print(f"reverie {__version__}")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", callback=_version,
                                          is_eager=True)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each engine step (as REVERIE_LOG=debug).")] = False,
) -> None:
    """Local-first long-term memory for AI agents."""
    # runs before the command's own options: a --json of an earlier command in this process
    # (a test, a host calling the app) must not make this one's errors JSON
    _AS_JSON.set(False)
    try:
        configure_logging("debug" if verbose else None)
    except ValueError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None


# a person at a terminal gets boxes and colour; output piped to another program is plain:
# no box drawing, no colour, and lines as long as they need to be (nothing wrapped or cut)
_PIPED = not sys.stdout.isatty()
console = Console(width=1_000_000 if _PIPED else None, soft_wrap=_PIPED)
err_console = Console(stderr=True)


def print_block(title: str, body: str) -> None:
    """A titled block of text (markup): boxed at a terminal; piped, the title on its own
    line and the text as it is (a box would be drawn to the piped console's full width)."""
    if _PIPED:
        console.print(f"== {title}")
        console.print(body)
    else:
        console.print(Panel(body, title=title, title_align="left"))


class Table(RichTable):
    """A rich table that never cuts or wraps an id, and is plain text when piped."""

    def __init__(self, *args: Any, **kwargs: Any):
        if _PIPED:
            kwargs.update(box=None, show_edge=False, pad_edge=False)
        super().__init__(*args, **kwargs)

    def add_column(self, header: Any = "", *args: Any, **kwargs: Any) -> None:
        if header in ("id", "fact", "episode", "key"):
            kwargs.update(no_wrap=True, overflow="ignore", min_width=20)
        super().add_column(header, *args, **kwargs)

Home = Annotated[
    Path | None,
    typer.Option("--home", envvar="REVERIE_HOME", help="Memory home folder (default ~/.reverie).", show_default=False),
]
User = Annotated[str, typer.Option("--user", "-u", envvar="REVERIE_USER", help="Whose memory.")]
_AS_JSON: ContextVar[bool] = ContextVar("reverie_cli_json", default=False)


def _note_json(value: bool) -> bool:
    """Remember whether this command prints JSON, so that its errors are JSON too."""
    _AS_JSON.set(bool(value))
    return value


Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (errors too).", callback=_note_json)]
Limit = Annotated[int, typer.Option("--limit", min=1, max=1000, help="How many to print (1-1000).")]
After = Annotated[Optional[str], typer.Option("--after", help="Go on from where a listing stopped (the cursor it printed).")]
Engine = Annotated[str | None, typer.Option("--engine", help="Engine for every step: heuristic or openai.")]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1")]
Model = Annotated[str | None, typer.Option("--model", help="Model name for the openai engine.")]
ApiKey = Annotated[str | None, typer.Option("--api-key", envvar="REVERIE_LLM_API_KEY", help="API key for the openai engine.")]


@contextmanager
def open_memory(
    home: Path | None,
    *,
    engine: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    background: bool = False,
    create: bool = True,
    learn: str = "here",
    server: bool = False,
    home_store: bool = False,
) -> Iterator[Memory]:
    """A Memory for one command; errors become a clear message and exit code 2.
    ``server``: the settings of a server process (:meth:`Settings.for_server`).
    ``home_store``: the home's own SQLite store, whatever store the configuration names.

    ``create=False`` (commands that only read): a home without a store is an error, and
    nothing is created there; a typo in ``--home`` must not leave an empty store behind."""
    llm = {k: v for k, v in (("base_url", base_url), ("model", model), ("api_key", api_key)) if v}
    overrides: dict[str, Any] = {}
    if engine:
        overrides["engine"] = engine
    if llm:
        overrides["llm"] = llm
    if chosen_store():
        overrides["store"] = chosen_store()
    if home_store:
        overrides["store"] = ""  # an empty store setting is SQLite in the home
    with fail_cleanly():
        settings = Settings.load(home, **overrides)
        if server:
            settings = settings.for_server()
        if not is_postgres_url(settings.store):  # a PostgreSQL store needs no home folder to exist
            check_home(settings.home, create=create, db=Path(settings.store) if settings.store else None)
            _STORE_FILE.set(Path(settings.store) if settings.store else settings.home / "reverie.db")
        elif not create and settings.store:
            check_pg_store(settings.store)
        try:
            mem = Memory(settings=settings, background=background, learn=learn)
        except OSError as exc:  # e.g. a home folder that cannot be created or read
            raise StoreError(f"cannot open the reverie home at {settings.home}: {exc.strerror or exc}") from exc
        try:
            yield mem
        finally:
            mem.close()


def check_home(home: Path, *, create: bool, db: Path | None = None) -> None:
    """``home`` can hold a store: a folder (or nothing yet, when ``create``) with a readable
    ``reverie.db`` (or ``db``; none yet, when ``create``). Creates nothing."""
    try:
        if home.exists() and not home.is_dir():
            raise StoreError(f"the reverie home {home} is not a folder; pass --home with a folder")
        if not create and not (db or home / "reverie.db").exists():
            raise NotFound(f"no reverie home at {home}; ingest or remember something first, or pass --home")
    except OSError as exc:
        raise StoreError(f"cannot read the reverie home at {home}: {exc.strerror or exc}") from exc


def check_pg_store(url: str) -> None:
    """The schema of ``url`` holds a reverie store (for commands that only read): a typo in
    ?schema= must not create an empty store and read it as one. Creates nothing."""
    if not holds_store(url):
        raise NotFound(f"no reverie store at {redact_url(url)}; check the URL and its ?schema=, or ingest or "
                       "remember something there first")


@contextmanager
def fail_cleanly() -> Iterator[None]:
    try:
        yield
    except (ReverieError, sqlite3.DatabaseError) as caught:  # one line, whatever the width of the terminal
        # a damaged store file, or one in a folder this user may not write, says so and what to do
        exc = _store_failure(caught) or caught
        if not isinstance(exc, ReverieError):
            raise  # SQLite failed for another reason: a fault of reverie's, with its traceback
        if _json_requested():  # a script asked for JSON: the error is JSON too, on stdout
            error: dict[str, Any] = {"error": str(exc), "type": type(exc).__name__}
            field = getattr(exc, "field", None)
            if field:
                error["field"] = field
            emit_json(error)
        else:
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None


def _store_failure(exc: BaseException) -> ReverieError | None:
    """What SQLite's own error about the store file means for a person
    (:func:`reverie.store.failures.store_failure`), or None."""
    if not isinstance(exc, (sqlite3.Error, StoreError)):
        return None
    return store_failure(exc, _STORE_FILE.get())


def _json_requested() -> bool:
    return _AS_JSON.get()


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def command_line(name: str, **options: Any) -> str:
    """``reverie NAME --option value ...`` of the options given (None and False left out)."""
    parts = ["reverie", *name.split()]
    store = chosen_store()
    if store is not None and store != os.environ.get("REVERIE_STORE"):
        options = {**options, "store": redact_url(store)}  # given as --store: the next command needs it too
    for key, value in options.items():
        if value is None or value is False:
            continue
        parts.append("--" + key.replace("_", "-"))
        if value is not True:
            parts.append(shlex.quote(str(value)))
    return " ".join(parts)


def more(cursor: str | None, command: str) -> None:
    """A listing that stopped at --limit says how to go on (on stderr, so --json stays a list)."""
    if cursor is not None:
        err_console.print(f"more: {command} --after {cursor}", highlight=False, soft_wrap=True)


def say(data: Any, as_json: bool, text: str | Iterable[str]) -> None:
    """The one ending of every command that reports: ``data`` as JSON for scripts, ``text``
    (a line, or lines) for people."""
    if as_json:
        emit_json(dump(data))
        return
    for line in [text] if isinstance(text, str) else text:
        console.print(line)


def dump(model: Any) -> Any:
    if isinstance(model, list):
        return [dump(m) for m in model]
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(model) and not isinstance(model, type):
        return dataclasses.asdict(model)
    return model


def main() -> None:
    app()
