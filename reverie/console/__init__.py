"""The web console: see, search, correct and take back a user's memory in the browser.

``mount_console(app, memory)`` adds it to the REST app at ``/console`` (``/`` redirects
there), with the same API keys and the same :class:`reverie.Memory` calls as REST.
Pages are rendered on the server (Jinja2, everything escaped); a little plain
JavaScript polls a running dream. Every asset ships in the package: the console, and
``/docs`` (Swagger UI from the ``swagger-ui-bundle`` package), work with no network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, FastAPI
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from reverie.console.docs import mount_docs
from reverie.console.pages import add_routes
from reverie.console.session import Sessions
from reverie.console.web import PREFIX, STATIC, Console, ConsoleRoute

if TYPE_CHECKING:
    from reverie.memory import Memory


def mount_console(app: FastAPI, memory: "Memory", *, auth: bool = True, default_user: str = "default") -> None:
    """The console at /console (and / redirecting there) over ``memory``; ``auth=False`` opens
    it without a key (the app then answers only 127.0.0.1 / localhost, as REST does)."""
    console = Console(memory, Sessions(memory.store, auth=auth, default_user=default_user), auth)
    app.state.reverie_console = console
    router = APIRouter(prefix=PREFIX, route_class=ConsoleRoute, include_in_schema=False)
    add_routes(router, console)
    app.include_router(router)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=str(STATIC)), name="console-static")

    @app.get("/", include_in_schema=False)
    def home() -> Response:
        return RedirectResponse(PREFIX, status_code=307)


__all__ = ["mount_console", "mount_docs"]
