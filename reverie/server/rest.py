"""The REST door: a FastAPI app whose every endpoint is one call into :class:`reverie.Memory`.

    app = create_app(Memory("./mem"))          # API keys required
    uvicorn.run(app, host="127.0.0.1", port=8765)

Requests carry ``Authorization: Bearer rv_...`` (or ``X-API-Key``); the key
decides whose memory is used, and an admin key may name another user with
``?user=``. Another user's item answers 404, exactly like a missing one.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import sqlite3
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Literal

import anyio.to_thread
from fastapi import APIRouter, Body, Depends, FastAPI, Path, Query, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import INVALID_REQUEST
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers, QueryParams
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from reverie.console import mount_console, mount_docs
from reverie.curation import KNOWLEDGE_PAGE_LIMIT, EpisodeDeleted, created_by, remembered
from reverie.dream import DIARY_PAGE_LIMIT
from reverie.errors import (
    AccessDenied,
    Conflict,
    EngineError,
    InvalidInput,
    NotFound,
    ReverieError,
    StoreBusy,
    StoreError,
)
from reverie.ingest import IngestReport
from reverie.inputs import check_user
from reverie.keys import authorize
from reverie.models import (
    MAX_BUDGET,
    Episode,
    EpisodeStatus,
    Fact,
    FactStatus,
    FeedbackStatus,
    KnowledgeDoc,
    KnowledgeScope,
    Profile,
    TagStatus,
)
from reverie.observe import metrics_text
from reverie.redact import redact
from reverie.store.failures import store_failure
from reverie.server.mcp_server import USER_SCOPE, create_mcp
from reverie.server.shapes import ErrorAnswer, FieldError, MessageIn, TurnCompleted, TurnOpened, raw_messages
from reverie.version import __version__

if TYPE_CHECKING:
    from reverie.memory import Memory
    from reverie.store.base import Page

_STATUS: tuple[tuple[type[ReverieError], int], ...] = (
    (InvalidInput, 400),
    (NotFound, 404),
    (Conflict, 409),
    (EngineError, 502),
    (StoreError, 503),
)
# what each error status means, for the OpenAPI description (every one answers ErrorAnswer)
_MEANING = {
    400: "Bad input: `field` names it, and `detail` starts with it (a body that is not JSON names `body`)",
    401: "No API key, or an unknown or revoked one",
    403: "The key may not act for the user it names (`?user=` needs an admin key)",
    404: "No such item for this user (another user's item answers the same)",
    408: "The body did not arrive whole in time (30 s after the headers): nothing was written, the connection is closed",
    409: "The request clashes with the current state (e.g. completing a turn twice)",
    413: "The body is larger than max_body_bytes",
    415: "The body was sent with another Content-Type than application/json",
    422: "The request does not fit the schema: `errors` holds each refused part (never the value sent)",
    503: "The store could not be reached; with Retry-After when it was busy (nothing was written)",
}
LOCAL_HOSTS = ("127.0.0.1", "localhost")
# an Authorization header that carries no Bearer key (the key alone, or another scheme)
_NOT_BEARER = ("the Authorization header holds no Bearer key: write it as `Authorization: Bearer` followed by "
               "the key (rv_...), or send the key alone in an X-API-Key header")
# how long a request body may take to arrive whole, from the end of its headers (a 408 after)
BODY_SECONDS = 30.0
DATE = Path(pattern=r"^\d{4}-\d{2}-\d{2}$", description="YYYY-MM-DD")


# ------------------------------------------------------------ request bodies
class _Body(BaseModel):
    # an unknown field is a typo the caller should hear about, not silently dropped
    model_config = ConfigDict(extra="forbid")


class FactIn(_Body):
    content: str
    category: str = "other"
    area: str | None = None
    agent: str | None = None
    confidence: float = 1.0
    tags: list[str] = Field(default_factory=list)


class FactChanges(_Body):
    content: str | None = None
    category: str | None = None
    area: str | None = None
    confidence: float | None = None
    status: FactStatus | None = None


class SectionIn(_Body):
    summary: str


class RecallIn(_Body):
    query: str
    budget: int | None = Field(default=None, ge=1, le=MAX_BUDGET, description="Token budget (default: the configured one).")
    thread: str | None = None
    agent: str | None = None
    explain: bool = False


class TurnIn(_Body):
    message: str
    thread: str = "default"
    agent: str | None = None
    budget: int | None = Field(default=None, ge=1, le=MAX_BUDGET)


class RememberedFact(Fact):
    outcome: Literal["created", "superseded", "reinforced"] = Field(
        description="created; superseded (archived the older value it updates); reinforced (a near-duplicate: "
                    "the stored fact gained a use and is returned, this wording was not kept)")


class IngestIn(_Body):
    messages: list[MessageIn] = Field(description="{role|speaker, content, at?, source_id?} messages of a past conversation.")
    thread: str | None = Field(None, description="Thread for the messages (default: 'default').")
    learn: bool = Field(True, description="Learn right away instead of after the debounce.")


class KnowledgeIn(_Body):
    title: str
    body: str = Field(description="Markdown.")
    tags: list[str] = Field(default_factory=list)
    scope: KnowledgeScope = Field("global", description="global, agent or project")
    agent: str | None = None
    project: str | None = None


class ReplyIn(_Body):
    reply: str


class FeedbackIn(_Body):
    id: str = Field(description="The recalled episode's id.")
    status: FeedbackStatus = Field(description="confirmed, rejected, ignored or partial")
    reason: str = ""


class MemoryMdIn(_Body):
    text: str = Field(description="The whole of MEMORY.md as edited.")
    base: str | None = Field(default=None, description="The sha256 of the text the edit started from "
                                                        "(GET /api/memory/memory-md gives it): a 409 if it changed since.")


class DreamIn(_Body):
    days: int | None = Field(default=None, description="How many days back (default: the configured dream_days).")


# ------------------------------------------------------------ errors
def error_response(exc: ReverieError) -> JSONResponse:
    """One mapping from reverie's errors to HTTP, for the API and the MCP door alike. The
    message is redacted (:func:`reverie.redact.redact`): one built from a value sent (a
    date, a section, an id, a user) must not carry a secret typed there back, into a log."""
    if isinstance(exc, AccessDenied):
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse({"detail": redact(str(exc))}, status_code=exc.status, headers=headers)
    status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 400)
    body: dict[str, Any] = {"detail": redact(str(exc))}
    if isinstance(exc, InvalidInput) and exc.field:
        if exc.field not in body["detail"]:
            body["detail"] = f"{exc.field}: {body['detail']}"
        body["field"] = exc.field
    # a busy store wrote nothing: the same request may be sent again in a moment
    return JSONResponse(body, status_code=status, headers={"Retry-After": "1"} if isinstance(exc, StoreBusy) else None)


def _on_errors(store_path: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The handlers of reverie's errors and of SQLite's own, for a store at ``store_path``:
    a damaged store file, or one in a folder this user may not write, is a 503 that says so
    and what to do (reverie.store.failures), not a 500."""

    async def on_reverie_error(_: Request, exc: ReverieError) -> JSONResponse:
        return error_response((store_failure(exc, store_path) if isinstance(exc, StoreError) else None) or exc)

    async def on_sqlite_error(_: Request, exc: sqlite3.DatabaseError) -> JSONResponse:
        failure = store_failure(exc, store_path)
        if failure is None:
            raise exc  # not the file's state: a 500, as any other fault
        return error_response(failure)

    return on_reverie_error, on_sqlite_error


async def _on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 whose message starts with the field, like the library's own 400s; a body that is
    not JSON at all is a 400 that says so."""
    errors = jsonable_encoder(exc.errors())
    broken = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if broken is not None:
        at = broken.get("loc", ["body", "?"])[-1]
        reason = (broken.get("ctx") or {}).get("error") or broken.get("msg", "")
        return JSONResponse({"detail": redact(f"body: not valid JSON (at character {at}: {reason})"), "field": "body"},
                            status_code=400)
    kind = request.headers.get("content-type", "")
    if kind.split(";")[0].strip().lower() not in ("application/json", "") and any(
            list(e.get("loc", [])) == ["body"] for e in errors):
        return JSONResponse({"detail": redact(f"body: send JSON with 'Content-Type: application/json', not {kind[:80]!r}"),
                             "field": "body"}, status_code=415)
    # a misspelled field shows as "unknown" first, not as the missing field it was meant to be
    unknown = [e for e in errors if e.get("type") == "extra_forbidden"]
    first = (unknown or errors or [{"loc": ["body"], "msg": "invalid request"}])[0]
    field = _field(first)
    message = first.get("msg", "invalid")
    if unknown:
        missing = [_field(e) for e in errors if e.get("type") == "missing"]
        message = "unknown field" + (f" (did you mean {missing[0]}?)" if missing else "")
    # where and why, never the value sent: a secret the caller mistyped must not come back (and
    # end up in logs); FieldError keeps loc, msg and type only
    # (a field's name is sent too: an unknown one may be a secret typed as a key)
    refused = [FieldError.model_validate({**e, "loc": [redact(p) if isinstance(p, str) else p for p in e.get("loc", [])]})
               .model_dump() for e in errors]
    return JSONResponse({"detail": redact(f"{field}: {message}"), "field": field, "errors": refused}, status_code=422)


def _field(error: dict[str, Any]) -> str:
    loc = [str(part) for part in error.get("loc", [])]
    return redact(".".join(loc[1:]) or (loc[0] if loc else "body"))


async def _on_http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """Starlette's own errors keep their status; a body that cannot be parsed names the body."""
    if isinstance(exc, _TooLarge):
        return _too_large(exc.limit, request.url.path)
    if isinstance(exc, _TooSlow):
        return _too_slow(exc.seconds)
    if exc.status_code == 400 and "parsing the body" in str(exc.detail):
        return JSONResponse({"detail": "body: not a JSON document reverie can read (malformed or nested too deeply)",
                             "field": "body"}, status_code=400)
    if isinstance(exc.detail, str) and redact(exc.detail) != exc.detail:
        exc = StarletteHTTPException(exc.status_code, redact(exc.detail), exc.headers)
    return await http_exception_handler(request, exc)


class _SendWatch:
    """An ASGI ``send`` passed through, noting whether the answer has begun (after which a
    refusal can no longer be sent)."""

    def __init__(self, send: Send):
        self.send = send
        self.started = False

    async def __call__(self, message: Any) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        await self.send(message)


MCP_PATH = "/mcp"
# how long /readyz waits for the store to answer
READY_SECONDS = 2.0


def for_door(scope: Scope, answer: JSONResponse) -> JSONResponse:
    """An error answer as the door asked speaks it: at /mcp a JSON-RPC error whose message
    is REST's detail (an MCP client hands that message on; REST's body it reads as "Server
    returned an error response"), with the same status and headers; elsewhere as it is.
    The request was not read, so its id is unknown (null), as JSON-RPC has it."""
    if not str(scope.get("path", "")).startswith(MCP_PATH):
        return answer
    detail = json.loads(bytes(answer.body)).get("detail", "")
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": str(detail)}}
    headers = {k: v for k, v in answer.headers.items() if k.lower() not in ("content-length", "content-type")}
    return JSONResponse(body, status_code=answer.status_code, headers=headers)


class LocalHostsOnly:
    """ASGI middleware of a server without keys: a request whose ``Host`` is not one of
    ``hosts`` (a page elsewhere reaching us through DNS rebinding, or this server reached by
    another name) is a 400 that says so and why, as every error is (starlette's
    TrustedHostMiddleware answered a bare "Invalid host header" in plain text)."""

    def __init__(self, app: Any, hosts: tuple[str, ...]):
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        sent = Headers(scope=scope).get("host", "")
        if _host_name(sent) in self.hosts:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        said = f"Host {sent[:100]!r}" if sent else "a request without a Host header"
        answer = JSONResponse({"detail": redact(
            f"{said} is not {' or '.join(self.hosts)}: a server without API keys (--no-auth) answers only "
            "requests addressed to this machine by one of those names (open it as "
            f"http://{self.hosts[0]}:PORT/, or serve with keys to be reached by another name)"),
            "field": "headers"}, status_code=400)
        await for_door(scope, answer)(scope, receive, send)


def _host_name(header: str) -> str:
    """The name of a ``Host`` header, without its port (``[::1]:8765`` is ``[::1]``), lower case."""
    name = header.strip().lower()
    if name.startswith("["):
        return name[: name.find("]") + 1] if "]" in name else name
    return name.rsplit(":", 1)[0] if ":" in name else name


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is a 413, whether it declares its
    length or streams it; nothing of it reaches an endpoint."""

    def __init__(self, app: Any, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(scope, receive, send)
            return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(self.limit)
            return message

        watched = _SendWatch(send)
        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not watched.started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await for_door(scope, _too_large(self.limit, scope.get("path", "")))(scope, receive, send)


class BodyDeadline:
    """ASGI middleware: a request body that has not arrived whole ``seconds`` after the
    request's headers did is a 408 (``Connection: close``), whether it trickles or stalls
    short of its Content-Length; nothing of it reaches an endpoint. Once the body is in,
    ``receive`` is passed through as it is (a streamed answer listens on it for the client
    going away, for as long as it streams)."""

    def __init__(self, app: Any, seconds: float):
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.seconds
        whole = False

        async def timed() -> Any:
            nonlocal whole
            if whole:
                return await receive()
            try:
                with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                    message = await receive()
            except TimeoutError:
                raise _TooSlow(self.seconds) from None
            whole = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        watched = _SendWatch(send)
        try:
            await self.app(scope, timed, watched)
        except _TooSlow:
            if not watched.started:
                await for_door(scope, _too_slow(self.seconds))(scope, receive, send)


class _TooSlow(StarletteHTTPException):
    """Raised while the body is awaited past BodyDeadline's time (answered 408 by _on_http_error)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(status_code=408)
        self.seconds = seconds


def _too_slow(seconds: float) -> JSONResponse:
    return JSONResponse({"detail": f"the request body did not arrive whole within {seconds:g} seconds",
                         "field": "body"}, status_code=408, headers={"Connection": "close"})


class _TooLarge(StarletteHTTPException):
    """Raised while the body streams in: FastAPI re-raises HTTP errors as they are, so the
    answer is this 413 (by _on_http_error) even when the body is read inside an endpoint."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413)
        self.limit = limit


def _too_large(limit: int, path: str = "") -> JSONResponse:
    """The one 413, whether the body declared its length or streamed past the limit. An export
    is streamed at any size, but an import is a body like any other: its 413 says where a
    larger one goes in."""
    said = f"request body is larger than {limit} bytes (max_body_bytes)"
    if path == IMPORT_PATH:
        said += ("; import a larger export with `reverie import FILE --user USER` (read a page at a time), "
                 "or raise max_body_bytes")
    return JSONResponse({"detail": said, "field": "body"}, status_code=413)


IMPORT_PATH = "/api/memory/import"


class RedactedAccessLog(logging.Filter):
    """uvicorn's access log line names the path and query of each request: a secret sent in
    one (a fact id, a section, ``?user=``) is redacted there as in every answer."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def redact_access_log() -> None:
    """Put :class:`RedactedAccessLog` on uvicorn's access logger (once a process)."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactedAccessLog) for f in access.filters):
        access.addFilter(RedactedAccessLog())


# route (by id: routes live as long as their app) -> the query parameters it takes
_KNOWN_QUERY: dict[int, frozenset[str]] = {}


def _query_names(dependant: Any) -> set[str]:
    """The query parameters an endpoint takes: its own and its dependencies' (the caller's ``user``)."""
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def known_query(request: Request) -> None:
    """A query parameter the endpoint does not take is a 400 that names it, as an unknown
    body field is: a typo (``?purg=true``) must not quietly do the other thing."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    known = _KNOWN_QUERY.get(id(route))
    if known is None:  # (read from the endpoint's dependencies once a route, not per request)
        known = _KNOWN_QUERY[id(route)] = frozenset(_query_names(dependant))
    unknown = sorted(k for k in request.query_params if k not in known)
    if unknown:
        raise InvalidInput(f"{unknown[0]}: unknown query parameter; this endpoint takes "
                           f"{', '.join(sorted(known)) or 'none'}", field=unknown[0])


# ------------------------------------------------------------ the app
def create_app(memory: "Memory", *, auth: bool = True, default_user: str = "default", mcp: bool = True) -> FastAPI:
    """The REST API (and, with ``mcp=True``, the MCP door at ``/mcp``) over ``memory``.

    ``auth=False`` trusts every caller: ``?user=`` picks the user (default
    ``default_user``) and only requests to 127.0.0.1 / localhost are accepted.
    """
    mcp_server = _mcp_server(memory, auth) if mcp else None
    redact_access_log()

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if mcp_server is None:
            yield
            return
        async with mcp_server.session_manager.run():
            yield

    app = FastAPI(
        title="reverie",
        version=__version__,
        description="Local-first long-term memory for AI agents. Every call acts for the API key's user.",
        lifespan=lifespan,
        docs_url=None,  # /docs is served from local assets (reverie.console.mount_docs): it works offline
        redoc_url=None,
    )
    if not auth:
        # without keys, a page the browser loads must not reach us through DNS rebinding
        app.add_middleware(LocalHostsOnly, hosts=LOCAL_HOSTS)
    app.add_middleware(BodyLimit, limit=memory.settings.max_body_bytes)
    app.add_middleware(BodyDeadline, seconds=BODY_SECONDS)
    # starlette types every handler as taking Exception, not the class it is registered for
    # (Kludex/starlette#2417): a handler of a subclass is refused though it is sound
    on_reverie_error, on_sqlite_error = _on_errors(getattr(memory.store, "path", None))
    app.add_exception_handler(ReverieError, on_reverie_error)
    app.add_exception_handler(sqlite3.DatabaseError, on_sqlite_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _on_http_error)  # type: ignore[arg-type]

    def who(secret: str | None, named: str | None, authorization: str | None = None) -> str:
        if not auth:
            return check_user(named or default_user)
        if not secret and authorization and not authorization.strip().lower().startswith("bearer "):
            # a key sent without the word Bearer (or Basic credentials) is not "no API key"
            raise AccessDenied(_NOT_BEARER)
        return authorize(memory.store, secret, user=named)

    bearer = HTTPBearer(auto_error=False, description="An API key from `reverie keys create`.")
    header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The same key, in a header of its own.")

    def caller(
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
        api_key: str | None = Depends(header),
        user: str | None = Query(None, description="Act for this user (admin keys only)."),
    ) -> str:
        return who(credentials.credentials if credentials else api_key, user, request.headers.get("authorization"))

    _routes(app, memory, Depends(caller))
    mount_docs(app)
    mount_console(app, memory, auth=auth, default_user=default_user)  # the web console at /console
    if mcp_server is not None:
        app.router.routes.append(Route(MCP_PATH, endpoint=_McpDoor(mcp_server, who, getattr(memory.store, "path", None))))

    @app.get("/metrics", tags=["server"], response_class=PlainTextResponse)
    def metrics() -> Response:
        """Prometheus metrics (no key needed: counts and timings only, nothing of any user)."""
        return Response(metrics_text(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz", tags=["server"])
    def healthz() -> dict[str, str]:
        """Liveness: no key needed."""
        return {"status": "ok", "version": __version__}

    @app.get("/readyz", tags=["server"], responses={503: {"description": "The store does not answer"}})
    def readyz() -> Response:
        """Readiness: no key needed. 503 while the store does not answer within 2 s (a
        PostgreSQL server down or out of reach): a balancer sends requests elsewhere meanwhile,
        where each would otherwise wait for a connection and fail."""
        try:
            memory.store.ping(READY_SECONDS)
        except ReverieError as exc:
            return JSONResponse({"status": "unavailable", "detail": redact(str(exc))}, status_code=503)
        return JSONResponse({"status": "ok", "version": __version__})

    return app


# a list that grows with the store comes a page at a time: ``limit`` items (at most
# PAGE_LIMIT), and when there are more, a ``Link: <...&after=CURSOR>; rel="next"`` header
PAGE_LIMIT = 1000
AFTER = Query(None, max_length=2000, description="The cursor of the page before (from the `Link` header's rel=\"next\").")


def _answers(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The error answers ``codes`` as OpenAPI ``responses``: each one an ErrorAnswer (a route
    that takes a body, 415, may also answer that it came too slowly, 408)."""
    codes = (*codes, 408) if 415 in codes else codes
    return {code: {"model": ErrorAnswer, "description": _MEANING[code]} for code in codes}


def _page(request: Request, response: Response, page: Page[Any]) -> list[Any]:
    """A page's items; the URL of the next page, when there is one, in a ``Link`` header
    (the same path and query, the cursor as ``after``)."""
    if page.next is not None:
        query = QueryParams({**request.query_params, "after": page.next})
        response.headers["Link"] = f'<{request.url.path}?{query}>; rel="next"'
    return page.items


def _routes(app: FastAPI, memory: "Memory", caller: Any) -> None:
    """Every endpoint: parse, call the library once, return what it returned."""
    # what any endpoint may answer besides its own errors: a bad ?user=, the key, the body
    # limit, the store (each route adds the statuses of its own, for OpenAPI)
    api = APIRouter(responses=_answers(400, 401, 403, 413, 422, 503), dependencies=[Depends(known_query)])

    @api.get("/api/memory", tags=["memory"])
    def overview(user: str = caller) -> dict[str, Any]:
        """The profile, the 100 most used live facts (``facts_next``: the cursor of the rest,
        for ``GET /api/memory/facts?after=``, or null) and counts."""
        facts = memory.fact_page(user=user, limit=100)
        encoded: dict[str, Any] = jsonable_encoder({
            "user": user,
            "profile": memory.profile(user=user),
            "facts": facts.items,
            "facts_next": facts.next,
            "counts": memory.stats(user=user)["users"][user],
        })
        return encoded

    @api.delete("/api/memory", tags=["memory"])
    def delete_memory(
        user: str = caller,
        confirm: str = Query(..., description="The user id again: deleting a whole memory cannot be undone."),
        purge: bool = Query(False, description="Then rewrite the store so no byte of it stays in its files "
                                               "(slow on a large store; other writers wait)."),
    ) -> dict[str, Any]:
        """Delete the user's whole memory: every row and every file. Irreversible."""
        return {"user": user, "deleted": memory.delete_user(user=user, confirm=confirm, purge=purge)}

    @api.get("/api/memory/profile", response_model=Profile, tags=["profile"])
    def get_profile(user: str = caller) -> Profile:
        return memory.profile(user=user)

    @api.put("/api/memory/profile/{section}", response_model=Profile, tags=["profile"], responses=_answers(415))
    def put_profile(section: str, body: SectionIn, user: str = caller) -> Profile:
        """Set one section, e.g. ``user.cognitiveStyle`` or ``history.recentMonths``."""
        return memory.set_profile(section, body.summary, user=user)

    @api.get("/api/memory/facts", response_model=list[Fact], tags=["facts"])
    def list_facts(
        request: Request,
        response: Response,
        user: str = caller,
        status: FactStatus | None = Query(None, description="pending, consolidated or archived"),
        category: str | None = None,
        order: str = Query("uses", description="uses (most used first), recent (newest first), last_used or "
                           "confidence. A fact used while pages are read can move to a page already read in "
                           "the orders that use moves; recent is a walk that meets every fact once"),
        limit: int = Query(100, ge=1, le=PAGE_LIMIT),
        after: str | None = AFTER,
    ) -> list[Fact]:
        """Facts, most used first (or by ``order``), a page at a time (the next page's URL in ``Link``)."""
        return _page(request, response, memory.fact_page(user=user, status=status, category=category,
                                                         order=order, after=after, limit=limit))

    @api.post("/api/memory/facts", response_model=RememberedFact, status_code=201, tags=["facts"],
              responses={200: {"model": RememberedFact,
                               "description": "A near-duplicate: the stored fact was reinforced (outcome 'reinforced')"},
                         **_answers(415)})
    def add_fact(body: FactIn, response: Response, user: str = caller) -> RememberedFact:
        """Store a fact the caller vouches for: 201 with ``outcome`` ``created``, or ``superseded``
        when it archived the older value it updates; a near-duplicate reinforces the stored
        fact instead (200, ``outcome`` ``reinforced``: that fact is returned, this wording is
        not kept)."""
        fact, outcome = remembered(lambda: memory.remember(body.content, user=user, **body.model_dump(exclude={"content"})))
        if outcome == "reinforced":
            response.status_code = 200
        return RememberedFact.model_validate({**fact.model_dump(), "outcome": outcome})

    @api.get("/api/memory/facts/{fact_id}", response_model=Fact, tags=["facts"], responses=_answers(404))
    def get_fact(fact_id: str, user: str = caller) -> Fact:
        return memory.fact(fact_id, user=user)

    @api.patch("/api/memory/facts/{fact_id}", response_model=Fact, tags=["facts"], responses=_answers(404, 415))
    def edit_fact(fact_id: str, body: FactChanges, user: str = caller) -> Fact:
        # what the body names, nulls included: {"area": null} clears the area
        return memory.update_fact(fact_id, user=user, **body.model_dump(exclude_unset=True))

    @api.delete("/api/memory/facts/{fact_id}", tags=["facts"], responses=_answers(404))
    def delete_fact(
        fact_id: str, user: str = caller, hard: bool = Query(False, description="Delete for good."),
        purge: bool = Query(False, description="With hard=true: then rewrite the store so no byte of the fact "
                                               "stays in its files (slow on a large store; other writers wait)."),
    ) -> dict[str, str]:
        """Archive a fact (reversible), or delete it with ``hard=true``."""
        fact = memory.forget(fact_id, user=user, hard=hard, purge=purge)
        return {"id": fact.id, "status": "deleted" if hard else fact.status}

    @api.post("/api/memory/facts/{fact_id}/reinforce", response_model=Fact, tags=["facts"], responses=_answers(404))
    def reinforce_fact(fact_id: str, user: str = caller) -> Fact:
        """``[Nx]`` + 1; a pending fact is promoted."""
        return memory.reinforce(fact_id, user=user)

    @api.delete("/api/memory/episodes/{episode_id}", response_model=EpisodeDeleted, tags=["episodes"],
                responses=_answers(404))
    def delete_episode(
        episode_id: str, user: str = caller,
        purge: bool = Query(False, description="Then rewrite the store so no byte of the episode stays in its "
                                               "files (slow on a large store; other writers wait)."),
    ) -> EpisodeDeleted:
        """Delete one conversation's episode for good, with the daily-note lines drawn from it;
        the facts learned from it stay and are listed in ``facts`` (DELETE each if it should
        go too). Another user's episode is a 404."""
        return memory.delete_episode(episode_id, user=user, purge=purge)

    @api.get("/api/memory/episodes", response_model=list[Episode], tags=["episodes"])
    def list_episodes(
        request: Request,
        response: Response,
        user: str = caller,
        thread: str | None = None,
        status: EpisodeStatus | None = Query(None, description="pending, completed, interrupted or failed"),
        limit: int = Query(50, ge=1, le=PAGE_LIMIT),
        after: str | None = AFTER,
    ) -> list[Episode]:
        """Episodes, newest first, a page at a time (the next page's URL in ``Link``)."""
        return _page(request, response, memory.episode_page(user=user, thread=thread, status=status,
                                                            after=after, limit=limit))

    @api.post("/api/memory/recall", tags=["recall"], response_model=dict[str, Any], responses=_answers(415))
    def recall(body: RecallIn, user: str = caller) -> Response:
        """The ``<memory>`` block for a message, and why each item is in it."""
        found = memory.recall(
            body.query, user=user, budget=body.budget, thread=body.thread, agent=body.agent, explain=body.explain
        )
        # already JSON's types: sent as they are, not walked again by FastAPI's encoder (which
        # took longer than turning them into JSON)
        return JSONResponse(found.as_dict())

    @api.post("/api/turns", status_code=201, response_model=TurnOpened, tags=["turns"], responses=_answers(415))
    def open_turn(body: TurnIn, user: str = caller) -> TurnOpened:
        """Phase one: store the message as a pending turn and return the memory context for it."""
        turn = memory.turn(body.message, user=user, thread=body.thread, agent=body.agent, budget=body.budget)
        return TurnOpened.of(turn)

    @api.post("/api/turns/{turn_id}/complete", response_model=TurnCompleted, tags=["turns"],
              responses=_answers(404, 409, 415))
    def complete_turn(turn_id: str, body: ReplyIn, user: str = caller) -> TurnCompleted:
        """Phase two: store the reply; completing a finished turn is a 409."""
        return TurnCompleted.of(memory.complete_turn(turn_id, body.reply, user=user))

    @api.post("/api/memory/ingest", response_model=IngestReport, tags=["memory"], responses=_answers(415))
    def ingest(body: IngestIn, user: str = caller) -> IngestReport:
        """Ingest a past conversation (input stored before is skipped and counted), then learn."""
        return memory.ingest(raw_messages(body.messages), user=user, thread=body.thread, learn=body.learn)

    @api.post("/api/memory/feedback", response_model=Episode, tags=["episodes"], responses=_answers(404, 415))
    def feedback(body: FeedbackIn, user: str = caller) -> Episode:
        return memory.feedback(body.id, body.status, reason=body.reason, user=user)

    @api.post("/api/memory/dream", status_code=202, tags=["dream"], responses=_answers(409, 415))
    def dream(request: Request, response: Response, body: DreamIn | None = None, user: str = caller) -> dict[str, Any]:
        """Start a dream run in the background; poll the returned status URL."""
        run = memory.dream(user=user, days=(body.days if body else None), background=True)
        url = request.app.url_path_for("dream_status", run_id=run.id)
        response.headers["Location"] = url
        return {**jsonable_encoder(run), "status_url": url}

    @api.get("/api/memory/dream/{run_id}", name="dream_status", tags=["dream"], responses=_answers(404))
    def dream_status(run_id: str, user: str = caller) -> Any:
        return jsonable_encoder(memory.dream_status(run_id, user=user))

    @api.get("/api/memory/diaries", tags=["dream"])
    def diaries(
        request: Request, response: Response, user: str = caller,
        limit: int = Query(30, ge=1, le=DIARY_PAGE_LIMIT), after: str | None = AFTER,
    ) -> dict[str, str]:
        """Dream diaries, date -> markdown, the newest day first, a page at a time (the next
        page's URL in ``Link``)."""
        return dict(_page(request, response, memory.diary_page(user=user, after=after, limit=limit)))

    @api.get("/api/memory/diaries/{date}", tags=["dream"], responses=_answers(404))
    def diary(date: str = DATE, user: str = caller) -> dict[str, str]:
        """The dream diary of one day (date -> markdown)."""
        found = memory.diaries(user=user, date=date)
        if not found:
            raise NotFound(f"no dream diary for {date}")
        return found

    @api.get("/api/memory/notes", tags=["notes"])
    def notes(
        request: Request, response: Response, user: str = caller,
        limit: int = Query(100, ge=1, le=PAGE_LIMIT), after: str | None = AFTER,
    ) -> Any:
        """Daily-note lines, the newest day first (a day's lines in the order written), a page
        at a time (the next page's URL in ``Link``)."""
        return jsonable_encoder(_page(request, response, memory.note_page(user=user, after=after, limit=limit)))

    @api.get("/api/memory/notes/{date}", tags=["notes"])
    def notes_of(date: str = DATE, user: str = caller) -> Any:
        return jsonable_encoder(memory.notes(user=user, date=date))

    @api.get("/api/memory/export", tags=["portability"], response_class=StreamingResponse,
             responses={200: {"content": {"application/json": {}}, "description": "The export envelope"}})
    def export(user: str = caller) -> StreamingResponse:
        """The whole memory of the user as one JSON envelope, sent as it is read (a page at a
        time: a memory of any size in bounded memory)."""
        chunks = memory.export_chunks(user=user)
        first = next(chunks)  # the head: a store that fails to read fails here, with a status
        return StreamingResponse(itertools.chain([first], chunks), media_type="application/json")

    @api.post(IMPORT_PATH, tags=["portability"], responses=_answers(415))
    def import_(
        data: dict[str, Any] = Body(..., description="An export envelope or a deer-flow memory.json."),
        user: str = caller,
        lenient: bool = Query(False, description="Correct a wrong value or skip an unusable item (counted in "
                              "corrected and skipped) instead of refusing the whole import"),
    ) -> dict[str, Any]:
        """All or nothing (with ``lenient``, wrong values corrected and unusable items skipped, counted)."""
        return memory.import_(data, user=user, strict=not lenient)

    @api.get("/api/memory/health", tags=["maintenance"])
    def health(user: str = caller) -> Any:
        return jsonable_encoder(memory.health(user=user))

    @api.get("/api/memory/changes", tags=["maintenance"])
    def changes(
        request: Request, response: Response, user: str = caller,
        limit: int = Query(50, ge=1, le=PAGE_LIMIT), after: str | None = AFTER,
    ) -> Any:
        """Journaled operations (dreams, consolidate, tidy, sync, clean, capacity), newest first,
        a page at a time (the next page's URL in ``Link``)."""
        return jsonable_encoder(_page(request, response, memory.change_page(user=user, after=after, limit=limit)))

    @api.post("/api/memory/changes/{change_id}/undo", tags=["maintenance"], responses=_answers(404, 409))
    def undo(change_id: str, user: str = caller) -> Any:
        """Take one journaled operation back; undoing it twice is a 409."""
        return jsonable_encoder(memory.undo(change_id, user=user))

    @api.get("/api/memory/knowledge", response_model=list[KnowledgeDoc], tags=["knowledge"])
    def list_knowledge(
        request: Request, response: Response, user: str = caller,
        limit: int = Query(20, ge=1, le=KNOWLEDGE_PAGE_LIMIT), after: str | None = AFTER,
    ) -> list[KnowledgeDoc]:
        """Knowledge documents, the newest first, a page at a time (each may hold 100,000
        characters, so a page holds at most 100; the next page's URL in ``Link``)."""
        return _page(request, response, memory.knowledge_page(user=user, after=after, limit=limit))

    @api.post("/api/memory/knowledge", response_model=KnowledgeDoc, status_code=201, tags=["knowledge"],
              responses={200: {"model": KnowledgeDoc,
                               "description": "The same document was stored before: that one, nothing added"},
                         **_answers(415)})
    def add_knowledge(body: KnowledgeIn, response: Response, user: str = caller) -> KnowledgeDoc:
        """A whole markdown document (a reusable pattern), recalled when matched; the same
        document again is a 200 with the stored one (nothing added)."""
        doc, new = created_by(lambda: memory.add_knowledge(body.title, body.body, user=user, tags=body.tags,
                                                           scope=body.scope, agent=body.agent, project=body.project))
        if not new:
            response.status_code = 200
        return doc

    @api.delete("/api/memory/knowledge/{doc_id}", response_model=KnowledgeDoc, tags=["knowledge"],
                responses=_answers(404))
    def delete_knowledge(doc_id: str, user: str = caller) -> KnowledgeDoc:
        """Delete a knowledge document for good (a new version is a document of its own:
        delete the old one); answers the document deleted. Another user's is a 404."""
        return memory.delete_knowledge(doc_id, user=user)

    @api.get("/api/tags", tags=["tags"])
    def tags(
        request: Request, response: Response, user: str = caller,
        status: TagStatus | None = Query(None, description="unexamined, active, deprecated or merged"),
        limit: int = Query(100, ge=1, le=PAGE_LIMIT), after: str | None = AFTER,
    ) -> list[dict[str, Any]]:
        """The tag dictionary by name, a page at a time (the next page's URL in ``Link``)."""
        return _page(request, response, memory.tag_page(user=user, status=status, after=after, limit=limit))

    @api.post("/api/memory/flush", tags=["memory"])
    def flush(user: str = caller) -> dict[str, Any]:
        """Learn now from the user's queued episodes instead of after the debounce: how many
        were learned, how many still wait (learning failed: they are kept) and the newest error."""
        learned = memory.flush(user=user)
        waiting, error = memory.learning_backlog(user=user)
        return {"learned": learned, "waiting": waiting, "error": error}

    @api.get("/api/memory/memory-md", tags=["dream"])
    def memory_md(user: str = caller) -> dict[str, Any]:
        """MEMORY.md as the last dream or edit left it ("" before the first dream), with its sha256."""
        text = memory.memory_md(user=user)
        return {"text": text, "sha": hashlib.sha256(text.encode("utf-8")).hexdigest() if text else None}

    @api.put("/api/memory/memory-md", tags=["dream"], responses=_answers(409, 415))
    def edit_memory_md(body: MemoryMdIn, user: str = caller) -> Any:
        """Save an edited MEMORY.md and sync it into the store (edited, added and deleted lines, and
        in ``duplicates`` added lines that repeat a fact, merged into it; undoable); with ``base``,
        a 409 if MEMORY.md changed since the edit began. ``sha`` is that of MEMORY.md as the edit
        left it (rewritten by the sync): the ``base`` of the next."""
        return jsonable_encoder(memory.save_memory_md(body.text, user=user, base=body.base))  # (its sha read in the same step)

    app.include_router(api)


# ------------------------------------------------------------ the MCP door
def _mcp_server(memory: "Memory", auth: bool) -> MCPServer:
    server = create_mcp(memory)
    # called for the session manager it sets up (which _McpDoor feeds), not for the
    # app it returns; stateless, so that each request stands alone with its own key
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        # with keys the key is the guard; without, only local Host headers get in
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False) if auth else None,
        host="127.0.0.1",
    )
    return server


class _McpDoor:
    """ASGI endpoint at /mcp: authorize the key, then hand the request to the MCP SDK
    with the key's user written into the scope."""

    def __init__(self, server: MCPServer, who: Callable[[str | None, str | None, str | None], str],
                 store_path: Any = None):
        self.manager = server.session_manager
        self.who = who
        self.store_path = store_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        authorization = headers.get("authorization", "")
        secret = authorization[7:].strip() if authorization.lower().startswith("bearer ") else headers.get("x-api-key")
        named = QueryParams(scope.get("query_string", b"")).get("user")
        try:
            user = await anyio.to_thread.run_sync(self.who, secret, named, authorization)
        except ReverieError as exc:
            await for_door(scope, error_response(store_failure(exc, self.store_path) or exc))(scope, receive, send)
            return
        except sqlite3.DatabaseError as exc:  # the keys' table of a damaged store file
            failure = store_failure(exc, self.store_path)
            if failure is None:
                raise
            await for_door(scope, error_response(failure))(scope, receive, send)
            return
        await self.manager.handle_request({**scope, USER_SCOPE: user}, receive, _SdkRefusals(send))


# the MCP SDK's answer to a message that is no JSON-RPC message it takes: pydantic's text,
# several lines long, with the head and tail of the value sent (a secret typed there too)
_SDK_INVALID = "Validation error:"
_NOT_A_MESSAGE = ("not a JSON-RPC message this server takes: send one request object per POST "
                  "({\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ..., \"params\": {...}})")
_A_BATCH = ("a JSON-RPC batch (a JSON array) is not taken: send one request object per POST "
            "({\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ..., \"params\": {...}})")


class _SdkRefusals:
    """The ``send`` of the MCP door: the SDK's own refusals (a 4xx it writes before any tool
    runs) pass as one line that never carries the value sent, redacted as every answer is;
    any other answer passes as it is, streamed."""

    def __init__(self, send: Send):
        self.send = send
        self.start: dict[str, Any] | None = None
        self.held = b""

    async def __call__(self, message: Any) -> None:
        if message["type"] == "http.response.start" and 400 <= message["status"] < 500:
            self.start = message  # hold the head: the body it announces may be rewritten
            return
        if self.start is None or message["type"] != "http.response.body":
            await self.send(message)
            return
        self.held += message.get("body", b"")
        if message.get("more_body", False):
            return
        body = _cleaned(self.held)
        headers = [(k, v) for k, v in self.start.get("headers", []) if k.lower() != b"content-length"]
        await self.send({**self.start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await self.send({"type": "http.response.body", "body": body})


def _cleaned(body: bytes) -> bytes:
    """A JSON-RPC error body with its message made one line that holds nothing sent."""
    try:
        answer = json.loads(body)
        said = answer["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return body
    if not isinstance(said, str):
        return body
    if said.startswith(_SDK_INVALID):
        said = _A_BATCH if "input_type=list" in said else _NOT_A_MESSAGE
    answer["error"]["message"] = redact(said)
    return json.dumps(answer).encode()
