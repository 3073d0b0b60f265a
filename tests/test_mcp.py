"""The MCP door, driven by the official SDK's own client: over stdio (``reverie mcp``
as a subprocess) and over streamable HTTP at /mcp, where the API key decides the user."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from reverie import Memory
from reverie.keys import create_key, revoke_key
from reverie.server import create_app
from reverie.server.shapes import TurnCompleted, TurnOpened
from tests.live_server import live_server

ROOT = Path(__file__).resolve().parents[1]


def stdio(home: Path, user: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "reverie.cli", "mcp", "--home", str(home), "--user", user], cwd=str(ROOT)
    )


def session(server: Any, script: Callable[[Client], Awaitable[None]], *, key: str | None = None) -> None:
    """Run ``script`` against ``server``: stdio parameters, or a base URL with an API key."""

    async def main() -> None:
        if key is None:
            async with Client(server) as client:
                await script(client)
            return
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
            async with Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client:
                await script(client)

    anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text


def test_stdio_process_message_then_save_memory_then_search_finds_it(tmp_path):
    async def script(client: Client) -> None:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"process_message", "save_memory", "ingest", "remember", "search", "forget", "restore",
                         "feedback", "dream", "dream_status"}
        turn = await call(client, "process_message", message="I adopted a greyhound called Biscuit", thread="pets")
        assert turn["turn_id"].startswith("ep_") and turn["route"] in ("shallow", "medium", "deep")
        saved = await call(client, "save_memory", turn_id=turn["turn_id"], reply="Biscuit is a lovely name!")
        assert saved == {"turn_id": turn["turn_id"], "status": "completed", "late": False}
        assert set(turn) == set(TurnOpened.model_fields)  # the same shape as REST's POST /api/turns
        assert set(saved) == set(TurnCompleted.model_fields)
        assert "already completed" in await error(client, "save_memory", turn_id=turn["turn_id"], reply="again")
        found = await call(client, "search", query="greyhound Biscuit", limit=3)
        talk = [{"role": "user", "content": "My sister Lena moved to Oslo"}, {"role": "assistant", "content": "Nice!"}]
        first = await call(client, "ingest", messages=talk, thread="family")
        again = await call(client, "ingest", messages=talk, thread="family")
        assert (first["episodes"], again["episodes"], again["skipped"]) == (1, 0, 1)
        assert any(item["id"] == turn["turn_id"] and "Biscuit" in item["text"] for item in found["items"])

    session(stdio(tmp_path / "home", "ana"), script)
    with Memory(tmp_path / "home", background=False) as memory:
        assert sorted((e.thread, e.status) for e in memory.episodes(user="ana")) == [
            ("family", "completed"), ("pets", "completed")]


def test_stdio_remember_forget_feedback_and_resources(tmp_path):
    async def script(client: Client) -> None:
        fact = await call(client, "remember", content="Ana is allergic to peanuts", category="constraint")
        assert fact["category"] == "constraint" and fact["user"] == "ana"
        turn = await call(client, "process_message", message="Suggest a snack for my hike")
        assert turn["has_memory"] and "peanuts" in turn["context"]
        await call(client, "save_memory", turn_id=turn["turn_id"], reply="Try dried apricots.")
        assert await call(client, "feedback", id=turn["turn_id"], status="confirmed") == {
            "id": turn["turn_id"], "feedback": "confirmed",
        }
        assert "feedback" in await error(client, "feedback", id=turn["turn_id"], status="loved")
        assert await call(client, "forget", id=fact["id"]) == {"id": fact["id"], "status": "archived"}
        assert "no fact" in await error(client, "forget", id="fact_missing")
        # forgotten by mistake: restore brings it back, and a live fact has nothing to restore
        assert await call(client, "restore", id=fact["id"]) == {"id": fact["id"], "status": "consolidated"}
        assert "not archived" in await error(client, "restore", id=fact["id"])
        assert await call(client, "forget", id=fact["id"]) == {"id": fact["id"], "status": "archived"}
        assert "limit" in await error(client, "search", query="snack", limit=0)
        # arguments that do not fit a tool's schema are refused in one line naming each field
        assert await error(client, "search", query="snack", limit=0) == (
            "search: limit: Input should be greater than or equal to 1")
        assert await error(client, "search", query=5, limit="many") == (
            "search: query: Input should be a valid string; "
            "limit: Input should be a valid integer, unable to parse string as an integer")
        assert await error(client, "remember") == "remember: content: Field required"
        assert await error(client, "ingest", messages=["hi"]) == (
            "ingest: messages.0: Input should be a valid dictionary")

        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert resources == {"memory://MEMORY.md", "memory://profile"}
        profile = json.loads((await client.read_resource("memory://profile")).contents[0].text)
        assert set(profile) == {"user", "history"} and "cognitiveStyle" in profile["user"]
        # before any dream, MEMORY.md shows what it would hold, not an empty page
        await call(client, "remember", content="Allergic to peanuts", category="constraint")
        page = (await client.read_resource("memory://MEMORY.md")).contents[0].text
        assert "# Memory of ana" in page and "Allergic to peanuts" in page
        listed = (await client.list_tools()).tools
        feedback_schema = next(t.input_schema for t in listed if t.name == "feedback")
        assert set(feedback_schema["properties"]["status"]["enum"]) == {"confirmed", "rejected", "ignored", "partial"}
        tools = {t.name: t.annotations for t in listed}
        assert tools["search"].read_only_hint and tools["dream_status"].read_only_hint
        assert tools["forget"].destructive_hint and not tools["remember"].read_only_hint
        found = await call(client, "search", query="peanuts", limit=10)
        assert found["items"] and all(item["score"] > 0 for item in found["items"])

    session(stdio(tmp_path / "home", "ana"), script)


def test_unknown_arguments_are_refused_in_one_line_and_nothing_is_stored(tmp_path):
    async def script(client: Client) -> None:
        assert await error(client, "remember", content="Prefers tea", categry="preference") == (
            "remember: categry: unknown field")
        assert await error(client, "remember", contnet="Prefers tea") == (
            "remember: contnet: unknown field; content: Field required")
        assert await error(client, "process_message", message="hi", agent="a1") == (
            "process_message: agent: unknown field")
        said = {"role": "user", "content": "I moved to Oslo last spring"}
        assert await error(client, "ingest", messages=[{**said, "timestmp": "2020-01-01T00:00:00Z"}]) == (
            "ingest: messages.0.timestmp: unknown field")
        dated = await call(client, "ingest", messages=[{**said, "timestamp": "2020-01-01T00:00:00Z"}])
        assert dated["episodes"] == 1
        schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        assert all(schema["additionalProperties"] is False for schema in schemas.values())
        assert schemas["ingest"]["$defs"]["MessageIn"]["additionalProperties"] is False

    session(stdio(tmp_path / "home", "ana"), script)
    with Memory(tmp_path / "home", background=False) as memory:
        assert not [f for f in memory.facts(user="ana") if "tea" in f.content.casefold()]  # no refused remember
        assert [e.occurred_at.year for e in memory.episodes(user="ana")] == [2020]  # only the well-spelled one


def test_search_returns_what_matched_not_the_profile_that_leads_every_block(tmp_path):
    with Memory(tmp_path / "home", background=False) as memory:
        memory.set_profile("user.personalContext", "Lives in Porto and works as a nurse", user="ana")
        memory.remember("Prefers the conclusion first", user="ana", category="preference")
        assert memory.recall("conclusion report", user="ana").items[0].kind == "profile"

    async def script(client: Client) -> None:
        found = await call(client, "search", query="conclusion report", limit=1)
        assert [i["kind"] for i in found["items"]] == ["fact"]
        said = await call(client, "remember", content="prefers the conclusion first.", category="preference")
        assert said["outcome"] == "reinforced" and said["id"] == found["items"][0]["id"]
        assert (await call(client, "remember", content="Keeps bees", category="context"))["outcome"] == "created"
        assert found["items"][0]["text"].endswith("Prefers the conclusion first")
        assert (await call(client, "search", query="x", limit=10))["items"] == []

    session(stdio(tmp_path / "home", "ana"), script)


def test_stdio_dream_runs_for_the_user(tmp_path):
    with Memory(tmp_path / "home", background=False) as memory:
        memory.remember("Ana runs a bakery in Porto", user="ana", category="context")
        memory.add(["I run a bakery in Porto", "We open at 7 every morning"], user="ana", group="message")
        memory.flush()

    async def script(client: Client) -> None:
        before = (await client.read_resource("memory://MEMORY.md")).contents[0].text
        assert "Ana runs a bakery in Porto" in before and "last distilled" not in before  # no dream yet
        run = await call(client, "dream", days=3)  # starts in the background
        assert run["user"] == "ana" and run["status"] in ("queued", "running", "done")
        for _ in range(200):
            status = await call(client, "dream_status", id=run["id"])
            if status["status"] not in ("queued", "running"):
                break
            await anyio.sleep(0.05)
        assert status["status"] == "done"
        assert "bakery" in (await client.read_resource("memory://MEMORY.md")).contents[0].text
        assert "days" in await error(client, "dream", days=0)

    session(stdio(tmp_path / "home", "ana"), script)


def test_http_mcp_serves_the_keys_user_only(tmp_path):
    with Memory(tmp_path / "home", background=False) as memory, live_server(create_app(memory)) as url:
        ana, bob = (create_key(memory.store, user=u) for u in ("ana", "bob"))

        async def as_ana(client: Client) -> None:
            await call(client, "remember", content="Ana's locker code is in her notebook")
            found = await call(client, "search", query="locker code")
            assert any("locker" in item["text"] for item in found["items"])

        async def as_bob(client: Client) -> None:
            found = await call(client, "search", query="locker code")
            assert not any("locker" in item["text"] for item in found["items"])
            facts = await call(client, "remember", content="Bob likes chess")
            assert facts["user"] == "bob"

        session(url, as_ana, key=ana.secret)
        session(url, as_bob, key=bob.secret)
        assert [f.content for f in memory.facts(user="ana")] == ["Ana's locker code is in her notebook"]

        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert httpx.post(f"{url}/mcp", json=ping).status_code == 401
        revoke_key(memory.store, bob.key.id)
        revoked = httpx.post(f"{url}/mcp", json=ping, headers={"Authorization": f"Bearer {bob.secret}"})
        assert revoked.status_code == 401


def test_a_tool_error_never_echoes_a_secret_sent_in_an_argument(tmp_path):
    """Messages built from a value sent (a date, an id, a user) are redacted before they are
    sent (and logged by the SDK): a password or key typed in the wrong place never comes back."""
    with Memory(tmp_path / "home", background=False) as memory, live_server(create_app(memory)) as url:
        ana = create_key(memory.store, user="ana")
        admin = create_key(memory.store, user="ops", admin=True)
        seen: list[str] = []

        async def script(client: Client) -> None:
            said = await error(client, "ingest", messages=[
                {"role": "user", "content": "hello", "at": "password Hunter2Secret"}])
            assert "not an ISO date-time" in said and "[password]" in said
            seen.append(said)
            seen.append(await error(client, "forget", id="AKIAIOSFODNN7EXAMPLE"))
            seen.append(await error(client, "feedback", id="ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
                                    status="confirmed"))
            seen.append(await error(client, "dream_status", id="sk-proj-0123456789abcdefghijklmnopqrstu"))

        session(url, script, key=ana.secret)
        for secret in ("Hunter2Secret", "AKIAIOSFODNN7EXAMPLE", "ghp_0123456789abcdefghij", "sk-proj-0123456789"):
            assert not any(secret in text for text in seen), (secret, seen)
        assert memory.episodes(user="ana") == []
        # the door's own refusal of a ?user= names no secret either
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        refused = httpx.post(f"{url}/mcp", params={"user": "pw=Hunter2Secret"}, json=ping,
                             headers={"Authorization": f"Bearer {admin.secret}"})
        assert refused.status_code == 400 and "Hunter2Secret" not in refused.text


def test_a_message_the_sdk_refuses_is_one_line_that_never_echoes_what_was_sent(tmp_path):
    """The SDK refused a batch or a malformed message with pydantic's text: many lines, and
    the head and tail of the value sent (a card number typed in an argument came back)."""
    with Memory(tmp_path / "home", background=False) as memory, live_server(create_app(memory)) as url:
        headers = {"Authorization": f"Bearer {create_key(memory.store, user='ana').secret}",
                   "Accept": "application/json, text/event-stream"}
        secret = "card 4111 1111 1111 1111 password Hunter2Secret"
        call_ = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "remember", "arguments": {"content": secret}}}
        batch = httpx.post(f"{url}/mcp", json=[call_], headers=headers)
        malformed = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "params": secret}, headers=headers)
        for refused in (batch, malformed):
            assert refused.status_code == 400
            said = refused.json()["error"]["message"]
            assert "\n" not in said and "send one request object per POST" in said
            assert "4111" not in refused.text and "Hunter2Secret" not in refused.text
            assert int(refused.headers["content-length"]) == len(refused.content)
        assert "batch" in batch.json()["error"]["message"]
        assert memory.facts(user="ana") == []
        # what the SDK takes is answered as ever
        ping = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "ping"}, headers=headers)
        assert ping.status_code == 200 and ping.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}


# ------------------------------------------------------------ what the model reads of a refused call
def refusals_by_http(tmp_path: Path, script: Callable[[Client], Awaitable[None]], **settings: Any) -> None:
    """``script`` against a real uvicorn serving create_app, as ana, over streamable HTTP."""
    with Memory(tmp_path / "home", background=False, **settings) as memory, \
            live_server(create_app(memory)) as url:
        session(url, script, key=create_key(memory.store, user="ana").secret)


def test_reverie_errors_reach_the_model_as_tool_results_that_name_the_problem(tmp_path):
    """Over streamable HTTP (reverie serve's /mcp) and over stdio alike, a call reverie refuses
    is answered with a result (isError) whose text is the tool and reverie's message, so a model
    can correct its call: not a protocol error, nor the SDK's "Error executing tool ..." prefix."""
    expected = {
        "unknown turn": "save_memory: no turn 'abc' for user 'ana'",
        "empty message": "process_message: message is empty",
        "blank message": "process_message: message is empty",
        "empty reply": "save_memory: reply is empty",
        "over-long thread": "process_message: thread is 300 characters; an id is at most 200",
        "over-long fact": "remember: content is 5000 characters; a fact is one line of at most 1000 "
                          "(max_fact_chars): store long text as knowledge or as a conversation",
    }

    for door in ("http", "stdio"):
        seen: dict[str, str] = {}

        async def script(client: Client) -> None:
            turn = await call(client, "process_message", message="Book me a table for Friday")
            seen["unknown turn"] = await error(client, "save_memory", turn_id="abc", reply="Booked.")
            seen["empty message"] = await error(client, "process_message", message="")
            seen["blank message"] = await error(client, "process_message", message=" \n ")
            seen["empty reply"] = await error(client, "save_memory", turn_id=turn["turn_id"], reply="")
            seen["over-long thread"] = await error(client, "process_message", message="hi", thread="t" * 300)
            seen["over-long fact"] = await error(client, "remember", content="y" * 5000)
            # a message built from a value sent names it, but never a secret typed there
            secret = await error(client, "save_memory", turn_id="sk-proj-0123456789abcdefghijklmnopqrstu", reply="x")
            assert secret.startswith("save_memory: no turn '") and "0123456789abcdef" not in secret, secret
            # the turn the refused reply was meant for still takes its reply
            saved = await call(client, "save_memory", turn_id=turn["turn_id"], reply="Booked.")
            assert (saved["turn_id"], saved["status"]) == (turn["turn_id"], "completed")

        if door == "http":
            refusals_by_http(tmp_path / door, script)
        else:
            session(stdio(tmp_path / door / "home", "ana"), script)
        assert seen == expected, door
        with Memory(tmp_path / door / "home", background=False) as memory:
            # nothing of a refused call was stored: the one turn, with its reply
            assert [(e.user_text, e.reply_text) for e in memory.episodes(user="ana")] == [
                ("Book me a table for Friday", "Booked.")]
            assert memory.facts(user="ana") == []


def test_a_fault_of_ours_reaches_the_model_as_a_generic_tool_error_without_internals(tmp_path):
    """Anything but reverie's own errors (here SQLite's, for a table dropped under the server)
    is a bug: the model reads only that the tool failed, never the exception's text."""
    with Memory(tmp_path / "home", background=False) as memory, live_server(create_app(memory)) as url:
        key = create_key(memory.store, user="ana").secret
        with sqlite3.connect(memory.store.path) as db:
            db.execute("DROP TABLE facts")
        seen: list[str] = []

        async def script(client: Client) -> None:
            seen.append(await error(client, "remember", content="Keeps bees"))
            seen.append(await error(client, "forget", id="fact_1"))

        session(url, script, key=key)
    assert seen == ["Error executing tool remember", "Error executing tool forget"]


def test_a_request_over_max_body_bytes_says_so_to_the_model(tmp_path):
    """An over-long input the HTTP door refuses before any tool sees it: the text a model gets
    must still name the limit (a protocol error: the request, and so its id, is never read)."""
    seen: list[str] = []

    async def script(client: Client) -> None:
        try:
            result = await client.call_tool("ingest", {"messages": [{"role": "user", "content": "z" * 2000}]})
        except MCPError as exc:
            seen.append(str(exc))
        else:
            assert result.is_error
            seen.append(result.content[0].text)

    refusals_by_http(tmp_path, script, max_body_bytes=1024)
    assert "max_body_bytes" in seen[0], seen
