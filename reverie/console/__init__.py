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
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]  # ships no type information

from reverie.console.pages import add_routes
from reverie.console.session import Sessions
from reverie.console.web import PREFIX, STATIC, Console, ConsoleRoute

if TYPE_CHECKING:
    from reverie.memory import Memory

DOCS_ASSETS = "/docs/assets"


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


def mount_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI served from the package's own copy (the app must be made with
    ``docs_url=None``), so the API documentation works offline."""
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
        )


__all__ = ["mount_console", "mount_docs"]
