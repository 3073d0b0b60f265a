"""A real, scripted OpenAI-compatible chat-completions server on 127.0.0.1.

Tests script it either with a queue of replies::

    fake_openai.push({"summary": "..."})            # a good JSON answer
    fake_openai.push(Reply.fenced({...}))           # the same inside ```json fences
    fake_openai.push(Reply.error(500), Reply.json({...}))
    fake_openai.push(Reply.raw("<html>gateway</html>"))   # a reply that is no completion
    fake_openai.push(Reply.trickled({...}, every=0.2))     # a good answer, a few bytes at a time

or with a responder that answers by step (the engine puts ``reverie-step: <step>``
in the system message)::

    fake_openai.respond_by_step({"extract": {...}, "summarize": lambda body: {...}})

Queued replies are served first; then the responder; with neither, the server
answers 400 with a message that says so, which the client does not retry.
Every request is recorded in ``fake_openai.requests``; ``fake_openai.hung_up`` counts the
replies the client stopped reading before their end (it closed the connection).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_STEP = re.compile(r"reverie-step:\s*([a-z_]+)")
TRICKLE_BYTES = 8


@dataclass(frozen=True)
class Reply:
    """One scripted response: answer text, an HTTP error, a delay, or a dropped connection;
    or a body sent as it is (``body``), a message other than ``{"role", "content"}``
    (``message``), a finish reason, and a pause between each few bytes (``every``)."""

    content: str = ""
    status: int = 200
    delay: float = 0.0
    drop: bool = False
    retry_after: str | None = None  # an error's Retry-After header
    body: str | None = None  # the whole HTTP body, instead of a completion
    content_type: str = "application/json"
    message: Mapping[str, Any] | None = None
    finish_reason: str | None = None  # instead of "stop"
    every: float = 0.0  # seconds between each TRICKLE_BYTES of the body

    @classmethod
    def json(cls, obj: Any) -> Reply:
        return cls(content=json.dumps(obj, ensure_ascii=False))

    @classmethod
    def text(cls, content: str) -> Reply:
        return cls(content=content)

    @classmethod
    def fenced(cls, obj: Any) -> Reply:
        return cls(content=f"Here you go:\n```json\n{json.dumps(obj, indent=2)}\n```\n")

    @classmethod
    def thinking(cls, obj: Any, thought: str = "The user wants {x}. Let me think.") -> Reply:
        return cls(content=f"<think>\n{thought}\n</think>\n\n{json.dumps(obj)}")

    @classmethod
    def chatter(cls, obj: Any) -> Reply:
        return cls(content=f"{json.dumps(obj)}\n\nI hope this helps! {{\"note\": \"extra\"}}")

    @classmethod
    def malformed(cls) -> Reply:
        return cls(content='{"summary": "cut off here, "tags": [')

    @classmethod
    def error(cls, status: int, message: str = "scripted failure") -> Reply:
        return cls(content=message, status=status)

    @classmethod
    def delayed(cls, seconds: float, obj: Any = None) -> Reply:
        return cls(content=json.dumps(obj if obj is not None else {}), delay=seconds)

    @classmethod
    def dropped(cls) -> Reply:
        return cls(drop=True)

    @classmethod
    def raw(cls, body: Any, content_type: str = "application/json") -> Reply:
        """A 200 whose body is ``body`` (text as it is, anything else as JSON): no completion."""
        return cls(body=body if isinstance(body, str) else json.dumps(body), content_type=content_type)

    @classmethod
    def trickled(cls, obj: Any, every: float) -> Reply:
        """A good answer whose reply leaves TRICKLE_BYTES at a time, one lot every ``every`` seconds."""
        return cls(content=json.dumps(obj), every=every)

    @classmethod
    def cut_off(cls, content: str) -> Reply:
        """An answer the server stopped at its token limit."""
        return cls(content=content, finish_reason="length")

    @classmethod
    def refusal(cls, said: str) -> Reply:
        return cls(message={"role": "assistant", "content": None, "refusal": said})

    @classmethod
    def parts(cls, obj: Any) -> Reply:
        """A good answer whose content is a list of text parts, as some gateways send it."""
        text = json.dumps(obj)
        half = len(text) // 2
        return cls(message={"role": "assistant", "content": [
            {"type": "text", "text": text[:half]}, {"type": "text", "text": text[half:]}]})


Answer = Reply | str | Mapping[str, Any]
Responder = Callable[[dict[str, Any]], Answer]


def as_reply(answer: Answer) -> Reply:
    """A dict is a good JSON answer, a str is sent verbatim as the message content."""
    if isinstance(answer, Reply):
        return answer
    if isinstance(answer, str):
        return Reply.text(answer)
    return Reply.json(dict(answer))


def step_of(body: Mapping[str, Any]) -> str | None:
    """The reverie step a chat-completions request is for, read from its system message."""
    for message in body.get("messages", []):
        if message.get("role") == "system":
            found = _STEP.search(str(message.get("content", "")))
            if found:
                return found.group(1)
    return None


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def step(self) -> str | None:
        return step_of(self.body)

    def message(self, role: str) -> str:
        """The content of the first message with this role ("" if none)."""
        for message in self.body.get("messages", []):
            if message.get("role") == role:
                return str(message.get("content", ""))
        return ""


class FakeOpenAI:
    """The server object: ``.base_url`` (ends in ``/v1``), ``.push()``, ``.requests``."""

    def __init__(self, models: tuple[str, ...] = ("fake-model",)):
        self.models = models
        self.requests: list[RecordedRequest] = []
        self.responder: Responder | None = None
        self.hung_up = 0
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # a short poll interval makes shutdown (once per test) quick
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def push(self, *answers: Answer) -> None:
        with self._lock:
            self._queue.extend(as_reply(a) for a in answers)

    def respond_by_step(self, answers: Mapping[str, Answer | Responder]) -> None:
        """Answer each step with a fixed answer or a callable of the request body."""

        def responder(body: dict[str, Any]) -> Answer:
            answer = answers.get(step_of(body) or "")
            if answer is None:
                return Reply.error(400, f"fake_openai: no answer scripted for step {step_of(body)!r}")
            return answer(body) if callable(answer) else answer

        self.responder = responder

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping in a scripted delay
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ serving

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return as_reply(self.responder(body))
        return Reply.error(400, "fake_openai: no scripted response left for this request")

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        completion_tokens = len(content.split())
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.models[0]),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _scripted_completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        completion = self._completion(body, reply.content)
        choice = completion["choices"][0]
        if reply.message is not None:
            choice["message"] = dict(reply.message)
        if reply.finish_reason is not None:
            choice["finish_reason"] = reply.finish_reason
        return completion

    def _models(self) -> dict[str, Any]:
        created = int(time.time())
        return {
            "object": "list",
            "data": [{"id": m, "object": "model", "created": created, "owned_by": "fake"} for m in self.models],
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                fake._record(self, {})
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, fake._models())
                else:
                    self._send(404, _error_body(404, f"no route {self.path}"))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, _error_body(400, "request body is not JSON"))
                    return
                fake._record(self, body)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, _error_body(404, f"no route {self.path}"))
                    return
                self._serve(fake._next_reply(body), body)

            def _serve(self, reply: Reply, body: dict[str, Any]) -> None:
                if reply.drop:
                    self.close_connection = True  # no bytes at all: the client sees a disconnect
                    return
                if reply.delay and fake._closing.wait(reply.delay):
                    return
                if reply.body is not None:
                    self._send(reply.status, reply.body.encode(), reply=reply)
                elif reply.status != 200:
                    self._send(reply.status, _error_body(reply.status, reply.content), reply=reply)
                else:
                    self._send(200, fake._scripted_completion(body, reply), reply=reply)

            def _send(self, status: int, payload: dict[str, Any] | bytes, reply: Reply = Reply()) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    if reply.retry_after is not None:
                        self.send_header("Retry-After", reply.retry_after)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    step = TRICKLE_BYTES if reply.every else len(data) or 1
                    for start in range(0, len(data), step):
                        if start and fake._closing.wait(reply.every):
                            return
                        self.wfile.write(data[start : start + step])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (timeout simulation)
                    with fake._lock:
                        fake.hung_up += 1

        return Handler

    def _record(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        request = RecordedRequest(
            method=handler.command,
            path=handler.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
        )
        with self._lock:
            self.requests.append(request)


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = "rate_limit_exceeded" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
