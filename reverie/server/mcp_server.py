"""The MCP door: seed 003's tools over the official ``mcp`` SDK.

One server serves either one user over stdio (``reverie mcp --user ana``) or,
mounted at ``/mcp`` inside ``reverie serve``, whichever user the request's API
key stands for. Every tool calls :class:`reverie.Memory` and answers JSON text.

    process_message(message, thread?)  -> turn_id, route, context    (before the reply)
    save_memory(turn_id, reply)        -> completes the turn          (after the reply)

The answers have the same shapes as REST's ``/api/turns`` (reverie.server.shapes).
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, Callable, cast

import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, Field, ValidationError

from reverie.curation import remembered
from reverie.errors import InvalidInput, ReverieError
from reverie.inputs import check_user
from reverie.models import FeedbackStatus
from reverie.recall import neutralize
from reverie.redact import redact
from reverie.store.failures import store_failure
from reverie.server.shapes import MessageIn, TurnCompleted, TurnOpened, raw_messages
from reverie.version import __version__

if TYPE_CHECKING:
    from reverie.memory import Memory

# the HTTP door writes the key's user under this name in the ASGI scope
USER_SCOPE = "reverie.user"

INSTRUCTIONS = """\
Long-term memory about the user. For every user message: call process_message
first and put the returned `context` in front of your answer; after answering,
call save_memory with the returned turn_id and your reply. Use remember for a
durable fact the user states, search to look something up, forget to drop a
wrong fact (restore brings it back), feedback to say how a recalled episode worked out."""

_user: ContextVar[str | None] = ContextVar("reverie_mcp_user", default=None)


class _BindUser:
    """Middleware: each request runs as the stdio user, or as the user the HTTP door
    authenticated (read from the request itself, so a session never outlives a key)."""

    def __init__(self, user: str | None):
        self.user = user

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        request = ctx.request
        user = request.scope.get(USER_SCOPE) if request is not None else self.user
        token = _user.set(user)
        try:
            return await call_next(ctx)
        finally:
            _user.reset(token)


def current_user() -> str:
    user = _user.get()
    if not user:
        raise InvalidInput("no user: serve over stdio with --user, or over HTTP with an API key", field="user")
    return user


def as_json(value: Any) -> str:
    return json.dumps(pydantic_core.to_jsonable_python(value, by_alias=True), ensure_ascii=False)


class _Refused(ToolError):
    """One of reverie's own errors, raised by a tool: its message is what the model reads
    (redacted on the way out, by _Server.call_tool) to correct its call."""

    def __init__(self, error: ReverieError):
        said = str(error)
        # as REST says it (reverie.server.rest.error_response): the field first, unless named
        if isinstance(error, InvalidInput) and error.field and error.field not in said:
            said = f"{error.field}: {said}"
        super().__init__(said)


def _answer(action: Callable[[str], Any]) -> str:
    """Run ``action(user)`` and answer JSON; reverie's own errors reach the model as tool
    errors (a result with isError) that say what is wrong: "save_memory: no turn 'abc'"."""
    try:
        return as_json(action(current_user()))
    except ReverieError as exc:
        raise _Refused(exc) from exc


class _Server(MCPServer):
    """The SDK's server, whose tool errors name the tool and then the problem, in one line:
    arguments that do not fit a tool's schema name each field ("search: limit: Input should
    be greater than or equal to 1", not pydantic's several lines and link), and reverie's own
    errors say their message ("save_memory: no turn 'abc' for user 'u1'", not the SDK's
    "Error executing tool save_memory: ..."). A fault of ours (any other exception) stays
    the SDK's "Error executing tool <name>": what it said stays in the server's log."""

    store_path: Any = None  # the SQLite file of the memory served, for what its failures say

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            # a damaged store file (or one that cannot be opened) says so and what to do
            failure = store_failure(exc, self.store_path)
            if failure is not None:
                raise ToolError(redact(f"{name}: {failure}")) from exc
            # every message is redacted (reverie.redact): one built from a value sent (an id, a
            # date) must not carry a secret typed there back to the client, or into its logs
            if isinstance(exc.__cause__, _Refused):
                raise ToolError(redact(f"{name}: {exc.__cause__}")) from exc.__cause__.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                said = redact(str(exc))
                if said == str(exc):
                    raise
                raise type(exc)(said) from exc.__cause__
            raise ToolError(redact(f"{name}: {_arguments_refused(exc.__cause__)}")) from exc.__cause__


def _arguments_refused(error: ValidationError) -> str:
    """Each refused argument and why, on one line (the values are left out: they are the caller's);
    an unknown one first, as REST names it: a misspelled argument, not the one it was meant to be."""
    errors = sorted(error.errors(), key=lambda e: e["type"] != "extra_forbidden")
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'arguments'}: "
        f"{'unknown field' if e['type'] == 'extra_forbidden' else e['msg']}" for e in errors
    )


def _closed(tool: Tool) -> Tool:
    """``tool`` refusing arguments it does not take (the SDK drops them: ``categry`` would
    store the fact as "other"), and its input schema saying so (additionalProperties false)."""
    loose = tool.fn_metadata.arg_model
    strict = cast(type[ArgModelBase], type(loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid")}))
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def create_mcp(memory: "Memory", *, user: str | None = None) -> MCPServer:
    """An MCP server over ``memory``: for ``user`` alone (stdio), or with ``user=None``
    for the HTTP door, where each request's API key names the user."""
    tools: list[Tool] = []

    def tool(
        *, read_only: bool = False, destructive: bool = False, idempotent: bool = False
    ) -> Callable[[Callable[..., str]], Callable[..., str]]:
        """A tool with hints a client may show or act on (MCP tool annotations), for the server below."""
        hints = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent,
                                open_world_hint=False)

        def register(fn: Callable[..., str]) -> Callable[..., str]:
            tools.append(_closed(Tool.from_function(fn, annotations=hints, structured_output=False)))
            return fn

        return register

    @tool()
    def process_message(
        message: Annotated[str, Field(description="The user's new message.")],
        thread: Annotated[str, Field(description="Conversation thread id.")] = "default",
    ) -> str:
        """Before answering: open a turn for the message and get the memory context
        (route shallow/medium/deep) to put in front of the answer."""
        return _answer(lambda user: TurnOpened.of(memory.turn(message, user=user, thread=thread)))

    @tool()
    def save_memory(
        turn_id: Annotated[str, Field(description="The turn_id process_message returned.")],
        reply: Annotated[str, Field(description="Your reply to the message.")],
    ) -> str:
        """After answering: complete the turn with your reply so it can be learned from."""
        return _answer(lambda user: TurnCompleted.of(memory.complete_turn(turn_id, reply, user=user)))

    @tool(idempotent=True)
    def ingest(
        messages: Annotated[list[MessageIn], Field(description="Messages of a past conversation: "
                                                               "{role or speaker, content, at?}.")],
        thread: Annotated[str | None, Field(description="Conversation thread id.")] = None,
    ) -> str:
        """Store a past conversation and learn from it; input stored before is skipped and counted."""
        return _answer(lambda user: memory.ingest(raw_messages(messages), user=user, thread=thread))

    @tool()
    def remember(
        content: Annotated[str, Field(description="One durable line about the user.")],
        category: Annotated[str, Field(description="preference, correction, context, goal, behavior, identity, "
                                                    "constraint, decision, cognitive, knowledge or other")] = "other",
    ) -> str:
        """Store a fact the user stated. The answer's ``outcome`` says what happened: created;
        superseded (it archived the older value it updates); or reinforced (a near-duplicate:
        the stored fact gained a use and is returned, this wording was not kept)."""

        def store(user: str) -> dict[str, Any]:
            fact, outcome = remembered(lambda: memory.remember(content, user=user, category=category))
            return {**fact.model_dump(mode="json", by_alias=True), "outcome": outcome}

        return _answer(store)

    @tool(read_only=True, idempotent=True)
    def search(
        query: Annotated[str, Field(description="What to look for.")],
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many items.")] = 10,
    ) -> str:
        """Search the user's facts, episodes, notes and knowledge; each item says why it matched.
        (The profile is not searched: read the memory://profile resource.)"""

        def find(user: str) -> dict[str, Any]:
            found = memory.recall(query, user=user, explain=True, track=False)
            # an item scored 0 matched nothing; the profile's lines lead every block whatever the
            # query (at 1.0): they would take the places of what the query found
            scored = [i.as_dict() for i in found.items if i.score > 0 and i.kind != "profile"]
            return {"query": query, "route": found.route, "items": scored[:limit]}

        return _answer(find)

    @tool(destructive=True, idempotent=True)
    def forget(id: Annotated[str, Field(description="The fact's id.")]) -> str:
        """Archive a wrong or outdated fact (reversible)."""
        return _answer(lambda user: _status(memory.forget(id, user=user)))

    @tool(idempotent=True)
    def restore(id: Annotated[str, Field(description="The archived fact's id (forget answered it).")]) -> str:
        """Bring back a fact that was forgotten or replaced by a newer value; a newer value it
        had given way to gives way to it in turn."""
        return _answer(lambda user: _status(memory.restore_fact(id, user=user)))

    @tool(idempotent=True)
    def feedback(
        id: Annotated[str, Field(description="The recalled episode's id.")],
        status: Annotated[FeedbackStatus, Field(description="confirmed, rejected, ignored or partial")],
    ) -> str:
        """Say how a recalled episode worked out; a rejected one is not recalled (until a later feedback changes it)."""
        return _answer(lambda user: {"id": memory.feedback(id, status, user=user).id, "feedback": status})

    @tool()
    def dream(days: Annotated[int | None, Field(ge=1, le=30, description="How many days back (1-30).")] = None) -> str:
        """Start distilling recent daily notes and facts into long-term memory (MEMORY.md).
        It runs in the background; ask dream_status with the returned id for the outcome."""
        return _answer(lambda user: memory.dream(user=user, days=days, background=True))

    @tool(read_only=True, idempotent=True)
    def dream_status(id: Annotated[str | None, Field(description="A dream run id; default: the latest.")] = None) -> str:
        """How a dream run went: queued, running, done, skipped or failed, with its report."""
        return _answer(lambda user: memory.dream_status(id, user=user))

    # WARNING: the SDK configures root logging in its constructor; keep that as quiet as the default
    server = _Server("reverie", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING", tools=tools)
    server.middleware.append(_BindUser(check_user(user) if user is not None else None))
    server.store_path = getattr(memory.store, "path", None)

    # resources carry stored text to the model as recall's <memory> block does: escaped the
    # same way (reverie.recall.neutralize), so no line of it can pose as a tag or instructions
    @server.resource("memory://MEMORY.md", name="MEMORY.md", mime_type="text/markdown")
    def memory_md() -> str:
        """The curated long-term memory: profile and consolidated facts."""
        return _resource(lambda user: neutralize(memory.memory_md_view(user=user)))

    @server.resource("memory://profile", name="profile", mime_type="application/json")
    def profile() -> str:
        """The structured profile (work, personal, top of mind, thinking style, history)."""
        return _resource(lambda user: neutralize(as_json(memory.profile(user=user))))

    return server


def _status(fact: Any) -> dict[str, str]:
    return {"id": fact.id, "status": fact.status}


def _resource(read: Callable[[str], str]) -> str:
    try:
        return read(current_user())
    except ReverieError as exc:
        raise ResourceError(redact(str(exc))) from exc


def run_stdio(memory: "Memory", *, user: str) -> None:
    """Serve ``user``'s memory over stdin/stdout until the client hangs up."""
    create_mcp(memory, user=user).run("stdio")
