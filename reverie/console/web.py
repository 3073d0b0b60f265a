"""The console's plumbing: templates, the session of each request, CSRF, flash messages,
and how an error becomes a page.

Every console route is a :class:`ConsoleRoute`: a :class:`~reverie.errors.ReverieError`
raised while serving a page becomes an HTML error page with the status REST would
answer (400, 403, 404, 409...), and one raised by a form post becomes a message on the
page the form came from. Every response carries a strict Content-Security-Policy
(scripts and styles from the console's own static files only), ``no-store`` caching and
no framing.
"""

from __future__ import annotations

import base64
import html
import json
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Mapping
from urllib.parse import SplitResult, quote, urlencode, urlsplit

from fastapi import Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from reverie.console.session import COOKIE, FLASH_COOKIE, Session, Sessions, same_token
from reverie.errors import AccessDenied, Conflict, EngineError, InvalidInput, NotFound, ReverieError, StoreError
from reverie.redact import redact
from reverie.version import __version__

if TYPE_CHECKING:
    from reverie.memory import Memory

PACKAGE = Path(str(resources.files("reverie.console")))
TEMPLATES = PACKAGE / "templates"
STATIC = PACKAGE / "static"
PREFIX = "/console"
# a flash cookie's value at most (the browser keeps a cookie of up to 4,096 bytes, name and all)
FLASH_BYTES = 3800
# form fields never carried back into a refused form: the token, where it returns, an API key
_NOT_KEPT = frozenset({"csrf", "next", "key", "confirm"})
# a form post's last path segment that names an action on the page above it
_ACTIONS = frozenset({"forget", "restore", "confirm", "feedback", "undo", "revoke", "merge", "status", "archive"})

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_STATUS: tuple[tuple[type[ReverieError], int], ...] = (
    (InvalidInput, 400), (NotFound, 404), (Conflict, 409), (EngineError, 502), (StoreError, 503),
)


def status_of(exc: ReverieError) -> int:
    if isinstance(exc, AccessDenied):
        return exc.status
    return next((code for kind, code in _STATUS if isinstance(exc, kind)), 400)


def message_of(exc: ReverieError) -> str:
    """The message an error page or a flash shows, redacted (:func:`reverie.redact.redact`): one
    built from a value typed (a date, an id, a user) must not show a secret typed there again."""
    text = str(exc)
    if isinstance(exc, InvalidInput) and exc.field and exc.field not in text:
        text = f"{exc.field}: {text}"
    return redact(text)


# ------------------------------------------------------------ templates
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_FACT_MARKER = re.compile(r"\s*<!--\s*(fact_[0-9a-z]+)\s*-->")


def markdown(text: str, shift: int = 2) -> Markup:
    """Markdown as HTML, raw HTML in it escaped (never passed through); MEMORY.md's
    ``<!-- fact_… -->`` markers become links to the fact. Headings move ``shift`` levels
    down, under the page's own h1 and the section's h2."""
    text = _FACT_MARKER.sub(lambda m: f" [↗]({PREFIX}/facts/{m.group(1)})", text)
    tokens = _MARKDOWN.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + shift)}"
    # markdown-it escapes every HTML tag of the text (html=False): this is safe markup
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))


def when(value: datetime | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    if value is None:
        return ""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return value.strftime(fmt)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(enabled_extensions=("html",), default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = markdown
    env.filters["when"] = when
    # a recalled line as an agent reads it has < and > written as character references; a
    # person reads the text itself (the page escapes it again, as every text)
    env.filters["as_said"] = html.unescape
    env.filters["tojson_attr"] = lambda v: json.dumps(v, ensure_ascii=False)
    env.globals["prefix"] = PREFIX
    env.globals["version"] = __version__
    env.globals["favicon"] = "data:image/svg+xml," + quote((STATIC / "favicon.svg").read_text().strip(), safe=" /:=,'")
    return env


# ------------------------------------------------------------ the request's view
class NeedSignIn(Exception):
    """Raised by a page that needs a signed-in session: the answer is the sign-in page."""


@dataclass
class Console:
    """What every console route shares: the memory, the sessions and the templates."""

    memory: "Memory"
    sessions: Sessions
    auth: bool
    env: Environment = field(default_factory=_environment)

    def session_of(self, request: Request) -> Session | None:
        return self.sessions.decode(request.cookies.get(COOKIE))


@dataclass
class View:
    """One request to the console: who is signed in, whose memory it shows, and the
    cookies the answer must set."""

    console: Console
    request: Request
    session: Session
    fresh: bool = False  # the session changed: the answer sets the cookie again
    flash: dict[str, Any] | None = None
    form: dict[str, str] = field(default_factory=dict)  # a form post's fields (the last value of each)
    form_lists: dict[str, list[str]] = field(default_factory=dict)  # ... and every value of each

    @property
    def memory(self) -> "Memory":
        return self.console.memory

    @property
    def user(self) -> str:
        if self.session.user is None:
            raise NeedSignIn()
        return self.session.user

    @property
    def here(self) -> str:
        """This page's path and query (where a form on it returns to)."""
        query = self.request.url.query
        return self.request.url.path + (f"?{query}" if query and self.request.method == "GET" else "")

    def users(self) -> list[str]:
        """The users this session may switch to (every user with something stored)."""
        if not self.session.admin:
            return [self.user]
        return sorted({*self.memory.users(), self.user})

    def use_session(self, session: Session) -> None:
        self.session, self.fresh = session, True

    def typed(self, action: str, name: str, default: Any = "", **match: str) -> Any:
        """What was typed in field ``name`` of the form posting to ``action`` when that post was
        just refused (carried back with the error message), else ``default``. ``match``: other
        fields the refused post must have had (the profile section of one of several forms)."""
        draft = (self.flash or {}).get("draft")
        if not isinstance(draft, dict) or draft.get("action") != action:
            return default
        fields = draft.get("fields")
        if not isinstance(fields, dict) or any(fields.get(k) != v for k, v in match.items()):
            return default
        if fields.get("as_user") not in (None, "", self.session.user):
            return default  # typed for another user's memory: never offered on this one's form
        value = fields.get(name)
        return value if isinstance(value, str) else default

    # ------------------------------------------------------------ answers
    def render(self, template: str, *, status: int = 200, title: str = "", **context: Any) -> Response:
        page = self.console.env.get_template(template).render(
            view=self, session=self.session, user=self.session.user, csrf=self.session.csrf,
            flash=self.flash, title=title, path=self.request.url.path, here=self.here, auth=self.console.auth,
            url=self.url, **context,
        )
        return self.finish(HTMLResponse(page, status_code=status))

    def redirect(
        self, to: str, *, flash: str | None = None, error: bool = False, undo: str | None = None,
        draft: dict[str, Any] | None = None,
    ) -> Response:
        """A 303 to ``to`` with a message for the next page; ``draft`` (``{"action": path,
        "fields": {...}}``, a refused form's values) goes with it so that the form shows them
        again, as far as a cookie holds them. The message and what was typed are redacted
        first (:func:`reverie.redact.redact`): the cookie is signed, not encrypted, and a
        password typed into a refused form must not ride in it (nor come back in the form;
        storing it would have redacted it the same way)."""
        response = RedirectResponse(to, status_code=303)
        if flash:
            message: dict[str, Any] = {"text": redact(flash), "error": error, "undo": undo}
            value = _pack(message)
            if draft and draft.get("fields"):
                fields = {k: redact(v) if isinstance(v, str) else v for k, v in draft["fields"].items()}
                while fields:
                    value = _pack({**message, "draft": {**draft, "fields": fields}})
                    if len(value) <= FLASH_BYTES:
                        break
                    # too long for a cookie: drop the longest field (said in the message)
                    del fields[max(fields, key=lambda k: len(fields[k]))]
                    message["text"] = redact(flash) + " (What you typed was too long to keep here: it is not in the form.)"
                    value = _pack(message)
            response.set_cookie(FLASH_COOKIE, self.console.sessions.sign(value), httponly=True, samesite="strict",
                                path=PREFIX, secure=self.request.url.scheme == "https", max_age=60)
        return self.finish(response)

    def back(self, fallback: str) -> str:
        """Where a form post returns to: its ``next`` field (or parameter) if that is a console path."""
        return local_path(self.form.get("next")) or local_path(self.request.query_params.get("next")) or fallback

    def finish(self, response: Response) -> Response:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if self.fresh:
            set_session_cookie(self.console, self.request, response, self.session)
        if self.flash is not None:
            response.delete_cookie(FLASH_COOKIE, path=PREFIX)
        return response

    def url(self, path: str = "", **params: Any) -> str:
        """A console URL with the query parameters that are set."""
        query = urlencode({k: v for k, v in params.items() if v not in (None, "", False)})
        return f"{PREFIX}{path}" + (f"?{query}" if query else "")


def set_session_cookie(console: Console, request: Request, response: Response, session: Session) -> None:
    response.set_cookie(
        COOKIE, console.sessions.encode(session), httponly=True, samesite="strict", path="/",
        secure=request.url.scheme == "https", max_age=max(60, session.expires - int(datetime.now().timestamp())),
    )


def _pack(message: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(zlib.compress(json.dumps(message, ensure_ascii=False).encode(), 9)).decode()


def _unpack(raw: str) -> Any:
    return json.loads(zlib.decompress(base64.urlsafe_b64decode(raw)))


def _split(url: str) -> SplitResult:
    """``url``'s parts, or none at all for one that cannot be read (``http://[x``: urlsplit
    raises ValueError): a header a client sends must not make a request a 500."""
    try:
        return urlsplit(url)
    except ValueError:
        return SplitResult("", "", "", "", "")


def local_path(value: str | None) -> str | None:
    """``value`` if it is a path inside the console (never another site)."""
    if not value or not value.startswith(PREFIX) or value.startswith("//") or "\\" in value:
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    return value if not parts.scheme and not parts.netloc else None


def view_of(console: Console, request: Request) -> View:
    """The view of a request: its session (a fresh one if it has none) and its flash message."""
    session = console.session_of(request)
    view = View(console, request, session or console.sessions.new(), fresh=session is None)
    raw = console.sessions.unsign(request.cookies.get(FLASH_COOKIE))
    if raw:
        try:
            flash = _unpack(raw)
            view.flash = flash if isinstance(flash, dict) else None
        except (ValueError, zlib.error):
            view.flash = None
    named = request.query_params.get("user")
    if named and view.session.signed_in and named != view.session.user:
        # ?user= in a URL: an admin key (or no keys) switches to that user; a plain key is refused
        view.use_session(console.sessions.switch(view.session, named))
    return view


def check_csrf(view: View, form: Mapping[str, Any]) -> None:
    """A state-changing request must carry the session's CSRF token (a hidden form field or
    the X-CSRF-Token header) and, when the browser names one, come from this origin."""
    request = view.request
    origin = request.headers.get("origin")
    if origin and origin != "null" and _split(origin).netloc != request.headers.get("host"):
        raise AccessDenied("this form was sent from another site", status=403)
    if request.headers.get("sec-fetch-site") not in (None, "same-origin", "none"):
        raise AccessDenied("this form was sent from another site", status=403)
    token = form.get("csrf") or request.headers.get("x-csrf-token")
    if view.fresh or not same_token(view.session.csrf, token if isinstance(token, str) else None):
        raise AccessDenied("the form expired (or came from elsewhere): reload the page and try again", status=403)
    # the user a page showed when its form was drawn: another tab may have switched the
    # session's since, and the form must not write into that user's memory
    drawn_for = form.get("as_user")
    if isinstance(drawn_for, str) and drawn_for and drawn_for != view.session.user:
        raise Conflict(f"nothing was saved: this form was for {drawn_for}'s memory, and the console now shows "
                       f"{view.session.user}'s (switched in another tab); switch back to {drawn_for} and send it again")


# ------------------------------------------------------------ routes
class ConsoleRoute(APIRoute):
    """A console route: errors become pages (or, after a form post, a message on the page
    the form came from); every answer gets the security headers."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                response = await handler(request)
            except NeedSignIn:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return _secure(RedirectResponse(f"{PREFIX}/sign-in?" + urlencode({"next": target}), status_code=303))
            except ReverieError as exc:
                return _error(request, exc)
            return _secure(response)

        return answer


def _secure(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _error(request: Request, exc: ReverieError) -> Response:
    console: Console = request.app.state.reverie_console
    # the view of a form post that was read (its fields), or one made again from the request
    posted = getattr(request.state, "console_view", None)
    view = posted if isinstance(posted, View) else view_of_safely(console, request)
    status = status_of(exc)
    if request.method == "POST" and status != 403 and view.session.signed_in:
        return view.redirect(refused_back(view), flash=message_of(exc), error=True, draft=draft_of(view))
    if status == 401 and not view.session.signed_in:
        return _secure(RedirectResponse(f"{PREFIX}/sign-in", status_code=303))
    return view.render("error.html", status=status, title="Error", message=message_of(exc), status_code=status)


def refused_back(view: View) -> str:
    """Where a refused form post returns: the page the form came from, filters and all (the
    form's ``next`` field, a ``?next=``, the Referer, or the page the post's path belongs to)."""
    request = view.request
    referer = _split(request.headers.get("referer", ""))
    came_from = local_path(referer.path + (f"?{referer.query}" if referer.query else "") or None)
    return view.back("") or came_from or page_of(request.url.path)


def page_of(path: str) -> str:
    """The console page a form post's path belongs to: /facts/ID/forget → /facts/ID,
    /tags/merge → /tags, /changes/ID/undo → /dreams."""
    parts = path.rstrip("/").split("/")
    if len(parts) > 2 and parts[-1] in _ACTIONS:
        parts.pop()
    page = "/".join(parts)
    if page.startswith(f"{PREFIX}/changes") or page in (f"{PREFIX}/user", f"{PREFIX}/sign-out"):
        return f"{PREFIX}/dreams" if page.startswith(f"{PREFIX}/changes") else PREFIX
    if page.startswith(f"{PREFIX}/keys/"):
        return f"{PREFIX}/keys"
    return local_path(page) or PREFIX


def draft_of(view: View) -> dict[str, Any] | None:
    """A refused form's typed values, for the form to show again (never its token or a key)."""
    fields = {k: v for k, v in view.form.items() if k not in _NOT_KEPT and len(view.form_lists.get(k, [])) <= 1}
    return {"action": view.request.url.path, "fields": fields} if fields else None


def view_of_safely(console: Console, request: Request) -> View:
    try:
        return view_of(console, request)
    except ReverieError:
        # the ?user= that failed: show the error under the session as it is
        session = console.session_of(request)
        return View(console, request, session or console.sessions.new(), fresh=session is None)

