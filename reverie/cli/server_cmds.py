"""Server commands: ``reverie serve`` (REST + MCP over HTTP), ``reverie mcp`` (stdio), ``reverie keys``."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import tempfile
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from reverie.cli.common import (
    ApiKey,
    BaseUrl,
    Engine,
    Home,
    Json,
    Model,
    Table,
    User,
    app,
    console,
    emit_json,
    err_console,
    fail_cleanly,
    open_memory,
)
from reverie.inputs import check_user, clean_label
from reverie.keys import create_key, list_keys, revoke_key
from reverie.observe import configure_logging, share_metrics
from reverie.scheduler import Scheduler

# reverie.server (FastAPI, uvicorn, the MCP SDK) is imported by the commands that serve, not
# here: every other command would wait for it (2-3 s on a slow machine, most of the CLI's start)

keys_app = typer.Typer(help="API keys for `reverie serve`: create, list, revoke.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


@app.command()
def serve(
    home: Home = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port (1-65535).")] = 8765,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="No API keys (only on 127.0.0.1 / localhost).")] = False,
    user: Annotated[str, typer.Option("--user", "-u", envvar="REVERIE_USER", help="With --no-auth: the user when a request names none.")] = "default",
    engine: Engine = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key: ApiKey = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Server processes (each core serves requests); learning and the nightly dream still run once.")] = 1,
) -> None:
    """Serve the REST API (OpenAPI at /docs) and MCP at /mcp, with the learning queue and the nightly dream.

    SIGTERM drains the learning queue before the server exits.
    """
    import uvicorn

    from reverie.server.balance import create_file
    from reverie.server.rest import LOCAL_HOSTS, create_app
    from reverie.server.workers import CONFIG_ENV, NoDelayHttpProtocol, settle_heap, worker_config

    if no_auth and host not in LOCAL_HOSTS:
        err_console.print(f"[bold red]error:[/] --no-auth is allowed only on {' or '.join(LOCAL_HOSTS)}, not {host}")
        raise typer.Exit(2)
    learn = "poll" if workers > 1 else "here"
    # a server's log: one plain line a record (the MCP SDK puts a wrapping handler on the root)
    configure_logging(default="warning")
    with contextlib.ExitStack() as stack:
        mem = stack.enter_context(open_memory(home, engine=engine, base_url=base_url, model=model,
                                              api_key=api_key, background=True, learn=learn, server=True))
        app_: Any = create_app(mem, auth=not no_auth, default_user=user)
        options: dict[str, Any] = {}
        if workers > 1:
            # the workers serve; this process learns what they complete and dreams at night
            llm = {k: v for k, v in (("base_url", base_url), ("model", model), ("api_key", api_key)) if v}
            overrides = {**({"engine": engine} if engine else {}), **({"llm": llm} if llm else {}),
                         **({"store": mem.settings.store} if mem.settings.store else {})}
            # the workers keep their connections even through this file (reverie.server.balance)
            shared = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="reverie-serve-")))
            balance = create_file(shared / "balance", workers)
            # /metrics of any worker: every worker's and this process's, summed (reverie.observe)
            metrics = shared / "metrics"
            metrics.mkdir()
            stack.callback(share_metrics(metrics).stop)
            os.environ[CONFIG_ENV] = worker_config(str(mem.home), auth=not no_auth, default_user=user,
                                                   overrides=overrides, balance=str(balance), metrics=str(metrics),
                                                   parent=os.getpid())
            # a worker imports reverie before it answers uvicorn's first check: seconds on a busy
            # machine, past uvicorn's 5 s, which killed the first workers of every start
            app_, options = "reverie.server.workers:worker_app", {"factory": True, "workers": workers,
                                                                    "timeout_worker_healthcheck": WORKER_START_SECONDS}
        if not no_auth and not any(k.revoked_at is None for k in list_keys(mem.store)):
            err_console.print("[yellow]no API keys yet:[/] create one with `reverie keys create --user NAME`")
        scheduler = Scheduler(mem).start()
        # uvicorn shuts down gracefully on SIGTERM, then re-raises it under the handler
        # it found: make that a clean exit, so that open_memory closes the memory and
        # so drains the learning queue on the way out
        previous = signal.signal(signal.SIGTERM, _exit_cleanly)
        try:
            settle_heap()
            # httptools' parser, with the size and time of a request's head bounded (and
            # TCP_NODELAY): reverie.server.limits, documented in docs/front-doors.md
            uvicorn.run(app_, host=host, port=port, log_level="info", http=NoDelayHttpProtocol, **options)
        finally:
            signal.signal(signal.SIGTERM, previous)
            scheduler.stop()


# how long a worker may take to start (import reverie, open the store) before uvicorn kills it
WORKER_START_SECONDS = 30


def _exit_cleanly(signum: int, frame: Any) -> None:
    raise SystemExit(0)


@app.command("mcp")
def mcp_cmd(
    user: User,
    home: Home = None,
    engine: Engine = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key: ApiKey = None,
) -> None:
    """Serve one user's memory to an MCP client over stdio."""
    from reverie.server.mcp_server import run_stdio
    from reverie.server.workers import settle_heap

    with open_memory(home, engine=engine, base_url=base_url, model=model, api_key=api_key, background=True) as mem:
        with fail_cleanly():
            settle_heap()
            run_stdio(mem, user=user)


@keys_app.command("create")
def keys_create(
    user: User,
    home: Home = None,
    admin: Annotated[bool, typer.Option("--admin", help="May act for any user it names (?user=).")] = False,
    name: Annotated[str, typer.Option(help="A label, e.g. the client that will use it.")] = "",
    as_json: Json = False,
) -> None:
    """Create an API key for a user; the key is printed once and never again."""

    with open_memory(home) as mem:
        # a label is printed by `keys list` and the console: no control character (a terminal's
        # escape sequence) is kept in it
        new = create_key(mem.store, user=user, name=clean_label(name, "name"), admin=admin)
        if as_json:
            emit_json({**_key_row(new.key), "key": new.secret})
            return
        kind = "admin key" if admin else "key"
        console.print(f"created {kind} [bold]{new.key.id}[/] for {escape(user)}; copy it now, it is not shown again:")
        console.print(new.secret, markup=False, highlight=False, soft_wrap=True)


@keys_app.command("list")
def keys_list(
    home: Home = None,
    user: Annotated[Optional[str], typer.Option("--user", "-u", help="Only this user's keys.")] = None,
    as_json: Json = False,
) -> None:
    """List keys (never the keys themselves: only their ids)."""

    with open_memory(home, create=False) as mem:
        # a user id no key can have ("../x") is refused as everywhere, not listed as no keys
        rows = [_key_row(k) for k in list_keys(mem.store, user=check_user(user) if user is not None else None)]
        if as_json:
            emit_json(rows)
            return
        table = Table(title="API keys")
        for col in ("id", "user", "name", "admin", "created", "revoked"):
            table.add_column(col)
        for r in rows:
            table.add_row(r["id"], escape(r["user"]), escape(_CONTROL.sub("", r["name"])), "yes" if r["admin"] else "", r["created_at"][:16], (r["revoked_at"] or "")[:16])
        console.print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (from `reverie keys list`).")],
    home: Home = None,
    as_json: Json = False,
) -> None:
    """Revoke a key: requests carrying it are refused from now on."""

    with open_memory(home) as mem:
        key = revoke_key(mem.store, key_id)
        emit_json(_key_row(key)) if as_json else console.print(f"revoked {key.id} ({escape(key.user)})")


# a label stored before labels were cleaned may hold a terminal's escape sequence: never printed
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _key_row(key: Any) -> dict[str, Any]:
    return {
        "id": key.id, "user": key.user, "name": key.name, "admin": key.admin,
        "created_at": key.created_at.isoformat(),
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
    }
