"""``reverie console``: the web console on 127.0.0.1, with the URL to open."""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer
from rich.markup import escape

from reverie.cli.common import ApiKey, BaseUrl, Engine, Home, Model, app, console, open_memory
from reverie.cli.server_cmds import serve
from reverie.keys import create_key, list_keys
from reverie.store import is_postgres_url, redact_url


@app.command("console")
def console_cmd(
    home: Home = None,
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port on 127.0.0.1 (1-65535).")] = 8765,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="Open it without a key (this machine only).")] = False,
    user: Annotated[str, typer.Option("--user", "-u", envvar="REVERIE_USER", help="The user shown first (with --no-auth, or for the first key).")] = "",
    open_browser: Annotated[bool, typer.Option("--open", help="Also open the URL in a browser.")] = False,
    engine: Engine = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key: ApiKey = None,
) -> None:
    """Serve the web console (and the REST API) on 127.0.0.1 and print the URL to open.

    Sign in with an API key. When the home has none yet, an admin key is created and
    printed once (revoke it with `reverie keys revoke ID`).
    """
    url = f"http://127.0.0.1:{port}/console"
    how = "" if no_auth else " and sign in with an API key (`reverie keys create --user NAME [--admin]` makes one)"
    with open_memory(home) as mem:
        first = user or next(iter(mem.users()), "default")
        if not no_auth and not any(k.revoked_at is None for k in list_keys(mem.store)):
            new = create_key(mem.store, user=first, name="console", admin=True)
            console.print(f"No API key yet: created admin key [bold]{new.key.id}[/] for {escape(first)} "
                          "(it is not shown again):")
            console.print(new.secret, markup=False, highlight=False, soft_wrap=True)
            how = " and sign in with that key"
        # the memory it shows: the home's store, or the PostgreSQL store named (where the home may not exist)
        store = mem.settings.store
        where = redact_url(store) if store is not None and is_postgres_url(store) else str(mem.home)
    console.print(f"reverie console for {escape(where)}: open [bold]{url}[/]{how}")
    if open_browser:
        webbrowser.open(url)
    serve(home=home, host="127.0.0.1", port=port, no_auth=no_auth, user=first, engine=engine, base_url=base_url,
          model=model, api_key=api_key, workers=1)
