"""Learning with a slow model: how long a conversation takes to learn through an endpoint.

    report = run_endpoint_bench(episodes=300, latency=0.2, concurrency=(1, 4), users=4, learn_threads=(1, 4))

A stand-in for an OpenAI-compatible endpoint runs on 127.0.0.1: it answers each step
(summarize, extract, govern_tags) as the heuristic engine would, after ``latency`` seconds,
the way a local model keeps a caller waiting. The same generated conversations (the scale
benchmark's generator; ``users`` of them) are added, then learned by one ``flush``, once
per ``llm.concurrency`` and ``learn_threads`` pair, each in a fresh home, with every
learning step on the ``openai`` engine. What differs between the rows is only how many
calls the learning line keeps in flight at once.
"""

from __future__ import annotations

import json
import re
import socket
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator, Sequence

from pydantic import BaseModel

from reverie.bench.scale import ConversationGenerator, _drop_schema
from reverie.engines.base import ExtractRequest, GovernRequest, SummarizeRequest
from reverie.engines.heuristic import HeuristicEngine
from reverie.engines.openai_engine import STEP_MARKER
from reverie.errors import InvalidInput
from reverie.memory import Memory
from reverie.models import Message
from reverie.store.postgres import split_schema, with_schema

USER = "endpoint"
SEED = 29
_STEP = re.compile(rf"{STEP_MARKER}:\s*([a-z_]+)")
# a line of the extract request's conversation: "[id] (2024-05-01) Speaker: text"
_LINE = re.compile(r"^\[(?P<id>[^\]]+)\](?: \((?P<date>\d{4}-\d{2}-\d{2})\))? (?P<who>[^:]+): (?P<text>.*)$")


class StandIn:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 that answers every learning
    step as the heuristic engine would, after ``latency`` seconds; counts the calls it held at
    once (``most_in_flight``)."""

    def __init__(self, latency: float):
        self.latency = latency
        self.calls = 0
        self.most_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._engine = HeuristicEngine()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "StandIn":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def answer(self, body: dict[str, Any]) -> str:
        """The answer's text for one chat-completions request body."""
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
        found = _STEP.search(system)
        step = found.group(1) if found else ""
        answer: BaseModel
        if step == "summarize":
            answer = self._engine.summarize(SummarizeRequest.model_validate_json(user))
        elif step == "govern_tags":
            answer = self._engine.govern_tags(GovernRequest.model_validate_json(user))
        elif step == "extract":
            answer = self._engine.extract(_extract_request(user))
        else:
            raise ValueError(f"the stand-in answers learning steps only, not {step!r}")
        return answer.model_dump_json(by_alias=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # headers and body leave in two writes: without this the client's delayed ACK
                # adds ~40 ms to every answer on a kept-alive connection
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with stand_in._lock:
                    stand_in.calls += 1
                    stand_in._in_flight += 1
                    stand_in.most_in_flight = max(stand_in.most_in_flight, stand_in._in_flight)
                try:
                    time.sleep(stand_in.latency)
                    try:
                        status, payload = 200, _completion(body, stand_in.answer(body))
                    except Exception as exc:  # a request the stand-in cannot read: the client sees a 400
                        status, payload = 400, {"error": {"message": str(exc), "type": "invalid_request_error"}}
                finally:
                    with stand_in._lock:
                        stand_in._in_flight -= 1
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _extract_request(text: str) -> ExtractRequest:
    """The conversation of an extract prompt read back into a request (the stand-in learns from
    the conversation alone, as a model given no stored facts would)."""
    messages: list[Message] = []
    owners: list[str] = []
    inside = False
    for line in text.splitlines():
        if line == "<conversation>":
            inside = True
        elif line == "</conversation>":
            inside = False
        elif inside and (m := _LINE.match(line)):
            at = datetime.fromisoformat(m["date"]).replace(tzinfo=timezone.utc) if m["date"] else None
            messages.append(Message(role="user", speaker=m["who"], content=m["text"], at=at))
            owners.append(m["id"])
    return ExtractRequest(messages=messages, episode_ids=owners,
                          user_speakers=sorted({m.speaker for m in messages if m.speaker}))


def _completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "stand-in"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }


@dataclass
class EndpointRow:
    concurrency: int
    learn_threads: int
    users: int
    episodes: int
    messages: int
    learn_seconds: float
    episodes_per_s: float
    turns_per_s: float
    calls: int
    most_in_flight: int
    learned: int
    facts: int


def run_endpoint_bench(
    *, episodes: int = 300, latency: float = 0.2, concurrency: Sequence[int] = (1, 4), users: int = 1,
    learn_threads: Sequence[int] = (4,), seed: int = SEED, store: str | None = None,
) -> dict[str, Any]:
    """One row per (``concurrency``, ``learn_threads``) pair: the same conversations (``episodes``
    in all, shared among ``users``) added, then learned by one flush, through the stand-in.
    ``store``: a PostgreSQL server to learn into (a fresh schema each row, dropped after)
    instead of SQLite in a fresh home."""
    if episodes < users or users < 1 or latency < 0 or not concurrency or not learn_threads \
            or min(*concurrency, *learn_threads) < 1:
        raise InvalidInput("users, every concurrency and every learn_threads must be at least 1, episodes at "
                           "least users, latency 0 or more", field="concurrency")
    names = [f"{USER}-{n}" for n in range(users)]
    rows = []
    for level in concurrency:
        for threads in learn_threads:
            schema = f"reverie_endpoint_{uuid.uuid4().hex[:12]}"
            where = with_schema(split_schema(store)[0], schema) if store else None
            with StandIn(latency) as stand_in, tempfile.TemporaryDirectory(prefix="reverie-endpoint-") as tmp, \
                    _dropped(store, schema):
                llm = {"base_url": stand_in.base_url, "model": "stand-in", "max_retries": 0, "concurrency": level,
                       "timeout": max(30.0, latency * 10)}
                with Memory(Path(tmp), background=False, engine="openai", llm=llm, debounce_seconds=3600,
                            learn_threads=threads, store=where) as mem:
                    messages = 0
                    for n, user in enumerate(names):
                        gen = ConversationGenerator(episodes // users, seed=seed + n, sample=0)
                        for session in gen.sessions():
                            mem.add(session.messages, user=user, thread=session.thread, group="exchange")
                        messages += gen.messages
                    started = time.perf_counter()
                    mem.flush()
                    seconds = time.perf_counter() - started
                    stored = [e for user in names for e in mem.store.list_episodes(user, archived=None)]
                    facts = sum(len(mem.store.list_facts(user)) for user in names)
            learned = sum(1 for e in stored if e.learned)
            rows.append(EndpointRow(
                concurrency=level, learn_threads=threads, users=users, episodes=len(stored), messages=messages,
                learn_seconds=round(seconds, 3), episodes_per_s=round(len(stored) / seconds, 2) if seconds else 0.0,
                turns_per_s=round(messages / seconds, 1) if seconds else 0.0,
                calls=stand_in.calls, most_in_flight=stand_in.most_in_flight, learned=learned, facts=facts,
            ))
    return {"latency_s": latency, "episodes": episodes, "users": users, "store": "postgresql" if store else "sqlite",
            "rows": [asdict(r) for r in rows]}


@contextmanager
def _dropped(server: str | None, schema: str) -> Iterator[None]:
    """On a PostgreSQL server, the row's schema is dropped when the row is done."""
    try:
        yield
    finally:
        if server:
            _drop_schema(server, schema)
