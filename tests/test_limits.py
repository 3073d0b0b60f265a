"""Issue 9.4 and 9.5: every input has a documented size limit, and input that is valid JSON
but not valid text is a 4xx naming the field, never a 500 and never a partial write."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reverie import InvalidInput, Memory
from reverie.bench.inputs import message_of
from reverie.engines.heuristic import resolve_time_refs
from reverie.timerefs import TIME_PATTERNS
from reverie.inputs import check_json
from reverie.keys import create_key
from reverie.messages import clip
from reverie.server import create_app
from tests.live_server import live_server, stop_process

NOW = datetime(2024, 6, 15, 12, tzinfo=timezone.utc)


# ------------------------------------------------------------ sizes
def test_a_fact_longer_than_the_cap_is_refused_naming_the_field(mem):
    limit = mem.settings.max_fact_chars
    with pytest.raises(InvalidInput) as err:
        mem.remember("x" * (limit + 1), user="ana")
    assert err.value.field == "content" and str(limit) in str(err.value)
    assert mem.facts(user="ana") == []
    fact = mem.remember("y" * limit, user="ana")
    with pytest.raises(InvalidInput):
        mem.update_fact(fact.id, user="ana", content="z" * (limit + 1))
    assert mem.fact(fact.id).content == "y" * limit


def test_the_fact_cap_is_a_setting(home):
    with Memory(home, background=False, max_fact_chars=40) as memory:
        with pytest.raises(InvalidInput):
            memory.remember("Takes the long way home through the park every day", user="ana")


def test_an_import_with_an_oversized_fact_is_refused_whole(mem):
    envelope = {"version": 1, "facts": [{"content": "short one"}, {"content": "w" * 5000}]}
    with pytest.raises(InvalidInput) as err:
        mem.import_(envelope, user="ana")
    assert err.value.field == "facts[1].content"
    assert mem.facts(user="ana") == []


def test_recall_matches_on_the_clipped_message_keeping_its_end(mem):
    mem.remember("Ana's marathon is in Lisbon", user="ana")
    query = "blah " * 199_990 + "where is my marathon?"  # (just under the 1,000,000 characters taken)
    result = mem.recall(query, user="ana", budget=300)
    assert len(result.query) <= mem.settings.max_query_chars
    assert "Lisbon" in result.context


def test_clip_keeps_short_messages_whole_and_long_ones_head_and_tail():
    assert clip("short", 100) == "short"
    clipped = clip("a" * 500 + "b" * 500, 100)
    assert clipped.startswith("a" * 47) and clipped.endswith("b" * 47) and len(clipped) <= 100


def test_a_turn_keeps_the_whole_long_message(mem):
    text = message_of(200_000)
    with mem.turn(text, user="ana") as turn:
        turn.complete("ok")
    assert mem.episode(turn.id).user_text == text.strip()


def _naive_time_refs(text: str, now: datetime) -> list[tuple[str, str, str]]:
    """The quadratic reference: each match checked against every span taken before."""
    taken, found = [], []
    for pattern, handler in TIME_PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if any(start < e and s < end for s, e in taken):
                continue
            if handler(m, now.date()) is None:
                continue
            taken.append((start, end))
            found.append((start, m.group(0).strip()))
    return [t for _, t in sorted(found)]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["met in 2023", "last week", "in May 2023", "May", "2023", "去年", "上周",
                                 "yesterday", "last Monday", "on 8 May, 2023", " and ", "then "]), max_size=30))
def test_time_references_with_bisect_match_the_exhaustive_reference(parts):
    text = " ".join(parts)
    assert [r.text for r in resolve_time_refs(text, NOW)] == _naive_time_refs(text, NOW)


def test_many_time_references_all_resolve():
    text = "met in 2023 " * 20_000
    refs = resolve_time_refs(text, NOW)
    assert len(refs) == 20_000 and all(r.start.year == 2023 for r in refs)


# ------------------------------------------------------------ REST: bodies and text
@pytest.fixture(scope="module")
def api(tmp_path_factory):
    memory = Memory(tmp_path_factory.mktemp("limits") / "home", background=False, max_body_bytes=64 * 1024)
    key = create_key(memory.store, user="ana").secret
    memory.remember("Ana prefers short answers", user="ana", category="preference")
    with live_server(create_app(memory, mcp=False)) as url:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}",
                                                 "content-type": "application/json"}, timeout=30) as client:
            yield memory, client
    memory.close()


def state(memory: Memory) -> str:
    data = memory.export(user="ana")
    data.pop("exportedAt")
    for fact in data["facts"]:
        fact.pop("last_used_at", None)
    return json.dumps(data, sort_keys=True)


def test_a_body_over_the_limit_is_a_413_declared_or_streamed(api):
    memory, client = api
    before = state(memory)
    big = json.dumps({"content": "x" * 100_000}).encode()
    r = client.post("/api/memory/facts", content=big)
    assert r.status_code == 413 and r.json()["field"] == "body"

    def stream():
        yield b'{"content": "'
        for _ in range(20):
            yield b"x" * 10_000
        yield b'"}'

    r = client.post("/api/memory/facts", content=stream())
    assert r.status_code == 413
    assert state(memory) == before


def test_a_misspelled_field_is_named_as_unknown(api):
    _, client = api
    r = client.post("/api/memory/facts", content=json.dumps({"contnet": "hi"}))
    assert r.status_code == 422
    assert r.json()["field"] == "contnet" and "unknown field" in r.json()["detail"] and "content" in r.json()["detail"]


@pytest.mark.parametrize("path, body", [
    ("/api/memory/recall", {"query": "What happened with the billing migration and its replication lag?"}),
    ("/api/turns", {"message": "What happened with the billing migration and its replication lag?"}),
])
def test_a_budget_past_the_largest_is_a_clear_422_not_a_500(api, path, body):
    memory, client = api
    before = state(memory)
    for budget in (100_001, 10**20):
        r = client.post(path, content=json.dumps({**body, "budget": budget}))
        assert r.status_code == 422, r.text
        assert r.json()["field"] == "budget" and "100000" in r.json()["detail"]
    assert state(memory) == before
    assert client.post("/api/memory/recall", content=json.dumps({"query": body.get("query", "tea"),
                                                                  "budget": 100_000})).status_code == 200


def test_a_budget_past_the_largest_is_refused_in_python_and_in_settings(mem, home):
    with pytest.raises(InvalidInput, match="budget must be a whole number of tokens from 1 to 100,000"):
        mem.recall("What happened with the billing migration?", user="ana", budget=10**20)
    with pytest.raises(InvalidInput, match="budget"):
        Memory(home, background=False, budget=10**20)


def test_a_misspelled_field_of_an_ingested_message_is_named_and_nothing_is_stored(api):
    memory, client = api
    before = state(memory)
    r = client.post("/api/memory/ingest", content=json.dumps(
        {"messages": [{"role": "user", "content": "We moved to Porto", "timestmp": "2020-01-01T00:00:00"}]}))
    assert r.status_code == 422 and r.json()["field"] == "messages.0.timestmp"
    assert "unknown field" in r.json()["detail"]
    r = client.post("/api/memory/ingest", content=json.dumps({"messages": [{"role": "user", "content": 123}]}))
    assert r.status_code == 400 and r.json()["detail"] == "messages[0].content must be text, not int"
    assert state(memory) == before
    # every documented spelling still goes in
    r = client.post("/api/memory/ingest", content=json.dumps({"learn": False, "messages": [
        {"speaker": "Ana", "text": "We moved to Porto in May", "dia_id": "D9:1", "timestamp": "2023-05-02T10:00:00"}]}))
    assert r.status_code == 200 and r.json()["episodes"] == 1
    stored = memory.store.list_episodes("ana", limit=None)
    assert any(e.source_ids == ["D9:1"] and e.occurred_at.year == 2023 for e in stored)


def test_a_body_that_is_not_json_says_so(api):
    memory, client = api
    before = state(memory)
    r = client.post("/api/memory/recall", content="{bad json")
    assert r.status_code == 400 and r.json()["field"] == "body"
    assert r.json()["detail"].startswith("body: not valid JSON (at character 1:")
    r = client.post("/api/memory/facts", content='{"content": "x"}', headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and "Content-Type: application/json" in r.json()["detail"]
    assert state(memory) == before


LONE = "x\ud800y"
CASES = [
    ("POST", "/api/memory/facts", {"content": LONE}, "content"),
    ("POST", "/api/memory/facts", {"content": "ok", "tags": [LONE]}, "tags"),
    ("POST", "/api/memory/recall", {"query": LONE}, "query"),
    ("POST", "/api/memory/recall", {"query": "tea", "thread": LONE}, "thread"),
    ("POST", "/api/turns", {"message": LONE}, "message"),
    ("POST", "/api/turns", {"message": "hi", "thread": LONE}, "thread"),
    ("PUT", "/api/memory/profile/user.workContext", {"summary": LONE}, "summary"),
    ("POST", "/api/memory/import", {"version": 1, "facts": [{"content": LONE}]}, "facts[0].content"),
    ("POST", "/api/memory/import", {"version": 1, "notes": [{"date": "2024-01-01", "content": LONE}]},
     "notes[0].content"),
]


@pytest.mark.parametrize("method, path, body, field", CASES)
def test_a_lone_surrogate_is_a_400_naming_the_field(api, method, path, body, field):
    memory, client = api
    before = state(memory)
    r = client.request(method, path, content=json.dumps(body))  # ensure_ascii: "\ud800" travels as JSON
    assert r.status_code == 400, r.text
    assert r.json()["field"] == field
    assert state(memory) == before


def test_an_import_nested_900_deep_is_a_400_naming_where(api):
    memory, client = api
    before = state(memory)
    nested: list = []
    cursor = nested
    for _ in range(900):
        cursor.append([])
        cursor = cursor[0]
    r = client.post("/api/memory/import", content=json.dumps({"version": 1, "facts": nested}))
    assert r.status_code == 400 and r.json()["field"].startswith("facts[0]")
    r = client.post("/api/memory/import", content=b'{"version": 1, "facts": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    assert r.status_code == 400 and r.json()["field"] == "body"
    assert state(memory) == before


@pytest.mark.parametrize("doc, limit, field", [
    ({"facts": [{"content": "ok"}, {"content": "ok", "tags": ["fine", "\u00e9\udc00"]}]}, 10, "facts[1].tags[1]"),
    ({"facts": [{"k\ud800": 1}]}, 10, "facts[0]"),  # a key names the record that holds it
    ([["ok", ["x\udfff"]]], 10, "$[0][1][0]"),
    ({"a": {"b": {"c": []}}}, 3, "a.b.c"),  # the document is level 1
    ([[["x"]]], 2, "$[0][0]"),
])
def test_check_json_names_the_path_of_what_it_refuses(doc, limit, field):
    with pytest.raises(InvalidInput) as refused:
        check_json(doc, limit)
    assert refused.value.field == field and str(refused.value).startswith(field)
    check_json({"a": {"b": {"c": []}}}, 4)
    check_json({"caf\u00e9": ["\u674e\u96f7", "\U0001f600"]}, 3)  # text beyond ASCII that is valid passes


def test_python_import_nested_deeper_than_the_recursion_limit_is_refused(mem):
    text = '{"version": 1, "facts": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(InvalidInput):
        mem.import_(text, user="ana")


# ------------------------------------------------------------ fuzz: no 500, no change on rejection
NASTY = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(["\ud800", "\udfff", "\x00", "\u202e", "\u200f", "＜", "＞", "</memory>",
                              "a", "李", " ", "\n", "../", "2024-01-01"]), max_size=12).map("".join),
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(content=NASTY, query=NASTY, thread=NASTY, summary=NASTY, category=NASTY, date=NASTY)
def test_fuzzed_text_never_gets_a_500_and_a_rejection_changes_nothing(api, content, query, thread, summary,
                                                                      category, date):
    memory, client = api
    requests = [
        ("POST", "/api/memory/facts", {"content": content, "category": category}),
        ("POST", "/api/memory/recall", {"query": query, "thread": thread}),
        ("PUT", "/api/memory/profile/user.topOfMind", {"summary": summary}),
        ("POST", "/api/memory/import", {"version": 1, "facts": [{"content": content, "category": category}],
                                        "notes": [{"date": date, "content": summary}]}),
    ]
    rng = random.Random(len(content))
    rng.shuffle(requests)
    for method, path, body in requests:
        before = state(memory)
        r = client.request(method, path, content=json.dumps(body))
        assert r.status_code < 500, (method, path, body, r.text)
        if r.status_code >= 400:
            assert state(memory) == before, (method, path, body, r.text)
            assert r.json().get("field") or r.json().get("detail")


def test_tags_and_a_feedback_reason_have_their_limits(mem):
    with pytest.raises(InvalidInput, match="an item takes at most 32"):
        mem.remember("Plays the cello", user="ana", tags=[f"t{i}" for i in range(33)])
    with pytest.raises(InvalidInput, match="a tag is at most 200 characters"):
        mem.remember("Plays the cello", user="ana", tags=["x" * 201])
    assert mem.facts(user="ana") == []
    [episode] = mem.add(["We talked about the cello"], user="ana")
    with pytest.raises(InvalidInput, match="reason is 2,001 characters"):
        mem.feedback(episode.id, "confirmed", reason="r" * 2001, user="ana")
    assert mem.episode(episode.id, user="ana").feedback is None
    mem.feedback(episode.id, "confirmed", reason="helpful", user="ana")


def test_an_import_too_deep_names_the_setting_as_it_is_set_whether_read_whole_or_streamed(mem, tmp_path):
    nested: list = []
    for _ in range(40):
        nested = [nested]
    deep = {"version": 1, "facts": [{"content": "x", "provenance": {"a": nested}}]}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(deep), encoding="utf-8")
    for load in (lambda: mem.import_(deep, user="ana"), lambda: mem.import_file(path, user="ana")):
        with pytest.raises(InvalidInput, match=r"nested deeper than max_import_depth \(32 levels\)"):
            load()


# ------------------------------------------------------------ the connection: a request's head and body in time
def _raw(url: str, data: bytes, *, timeout: float = 20) -> tuple[bytes, float]:
    """Send ``data`` on a raw connection and read until the server closes it: (what it sent
    back, seconds until it closed). A server that never closes fails on ``timeout``."""
    import socket
    import time

    host, port = url.removeprefix("http://").split(":")
    start = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except OSError:  # refused part way (a head too large): what it answered is still there to read
            pass
        answer = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
    return answer, time.monotonic() - start


def _rss_kb(pid: int) -> int:
    from pathlib import Path

    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])


@pytest.mark.parametrize("command", ["serve", "console"])
def test_reverie_serve_answers_a_head_past_the_limit_431_without_reading_it_all(tmp_path, command):
    """uvicorn over httptools read a 20 MB header whole (a 200 MB one grew the process to 568 MB).
    ``reverie console`` serves through the same protocol."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.live_server import free_port, wait_for

    root = Path(__file__).resolve().parents[1]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "reverie.cli", command, "--no-auth", "--port", str(port),
                             "--home", str(tmp_path / "home")], env={**os.environ, "PYTHONPATH": str(root)},
                            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(f"{url}/healthz", proc)
        before = _rss_kb(proc.pid)
        answer, _ = _raw(url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (20 << 20) + b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        head, _, body = answer.partition(b"\r\n\r\n")
        assert b"connection: close" in head.lower()
        assert json.loads(body) == {"detail": "the request line and headers are larger than 65536 bytes",
                                    "field": "headers"}
        assert _rss_kb(proc.pid) - before < 32 * 1024  # read a chunk past the limit at most, not 20 MB
        # a head of a usual size is served as ever
        assert httpx.get(f"{url}/healthz", headers={"X-Fine": "b" * 8000}).status_code == 200
    finally:
        stop_process(proc)


@pytest.fixture
def quick(tmp_path, monkeypatch):
    """The app served (in a thread) by `reverie serve`'s HTTP protocol, with the time limits
    short: 1 s for a request's head, 1.5 s for a body."""
    import socket
    import threading
    import time

    import uvicorn

    from reverie.server import rest
    from reverie.server.workers import NoDelayHttpProtocol

    class Quick(NoDelayHttpProtocol):
        header_seconds = 1.0

    monkeypatch.setattr(rest, "BODY_SECONDS", 1.5, raising=False)
    memory = Memory(tmp_path / "home", background=False)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(memory, auth=False, mcp=False), log_level="warning",
                                           http=Quick))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield memory, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
        memory.close()


def test_a_head_that_stalls_is_a_408_and_a_silent_connection_is_closed(quick):
    _, url = quick
    answer, took = _raw(url, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    assert answer.startswith(b"HTTP/1.1 408 ") and b'"field":"headers"' in answer, answer
    assert 0.8 < took < 5
    answer, took = _raw(url, b"")  # opened, and not a byte sent
    assert answer == b"" and took < 5


def test_a_body_short_of_its_length_or_trickling_is_a_408_and_nothing_is_written(quick):
    import socket
    import time

    memory, url = quick
    head = (b"POST /api/memory/facts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 200\r\n\r\n")
    answer, took = _raw(url, head + b'{"content": "Likes f')  # then nothing more
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout", answer
    assert json.loads(rest.partition(b"\r\n\r\n")[2]) == {
        "detail": "the request body did not arrive whole within 1.5 seconds", "field": "body"}
    assert 1.2 < took < 6
    # a byte now and then keeps no body alive past its time
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(head)
        start = time.monotonic()
        answer, _ = _trickle(sock, b" ", 40, until_head=True)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert time.monotonic() - start < 5
    assert memory.facts(user="default") == []
    # a request whose body arrives whole in time is served as ever
    assert httpx.post(f"{url}/api/memory/facts", json={"content": "Likes figs"}).status_code == 201


def test_a_body_left_unread_by_an_answered_request_is_not_waited_for_forever(quick):
    import socket
    import time

    _, url = quick
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        # /healthz takes no body: it answers at once, and the rest of the body trickles in
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nab")
        start = time.monotonic()
        # a byte at a time keeps uvicorn's own keep-alive timer from closing it
        answer, closed = _trickle(sock, b"c", 60, until_head=False)
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        assert closed and time.monotonic() - start < 6


def _trickle(sock, byte: bytes, tries: int, *, until_head: bool) -> tuple[bytes, bool]:
    """Send ``byte`` every quarter second or so, reading what comes back: (the answer, whether
    the server closed the connection). ``until_head``: stop once an answer's head is in."""
    import socket

    answer = b""
    for _ in range(tries):
        try:
            sock.sendall(byte)
        except OSError:
            return answer, True
        sock.settimeout(0.25)
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, socket.timeout):
            continue
        except ConnectionResetError:
            return answer, True
        if not chunk:
            return answer, True
        answer += chunk
        if until_head and b"\r\n\r\n" in answer:
            break
    return answer, False


def test_a_message_past_the_text_limit_is_refused_at_every_door_that_has_no_body_limit(tmp_path):
    """The Python API (and MCP over stdio, which calls it) took a 5 MB message whole; the
    HTTP door's body limit came first there. Now every door says the limit."""
    from reverie import Memory
    from reverie.errors import InvalidInput
    from reverie.inputs import MAX_TEXT_CHARS

    with Memory(tmp_path / "home", background=False) as memory:
        with pytest.raises(InvalidInput, match="at most 1,000,000") as refused:
            memory.turn("z" * (MAX_TEXT_CHARS + 1), user="ana")
        assert refused.value.field == "message"
        with pytest.raises(InvalidInput, match="at most 1,000,000"):
            memory.add([{"role": "user", "content": "z" * (MAX_TEXT_CHARS + 1)}], user="ana")
        assert memory.episodes(user="ana") == []  # nothing of it stored
        turn = memory.turn("z" * MAX_TEXT_CHARS, user="ana")  # at the limit: taken
        assert len(memory.store.get_episode(turn.id).user_text) == MAX_TEXT_CHARS
