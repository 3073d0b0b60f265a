"""Faults of an OpenAI-compatible endpoint, as learning and recall meet them: a perception
slower than its cap, bytes that are no UTF-8, a Retry-After given as a date, a 408, an answer
with an empty summary. Every server here is a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from reverie import Memory
from reverie.engines.base import DistillRequest, PerceiveRequest, SummarizeRequest
from reverie.engines.openai_engine import MAX_REPLY_BYTES, OpenAIEngine
from reverie.errors import EngineError
from reverie.models import Message
from tests.fake_openai import FakeOpenAI, Reply, fake_openai  # noqa: F401  (fixture)

SUMMARY = {"summary": "Ana prefers Go for backend services", "overview": "She uses Go.", "tags": ["golang"]}
EXTRACTION = {"newFacts": [{"content": "Prefers Go for backend services", "category": "preference",
                            "confidence": 0.9}]}
SAID = "I prefer Go for backend services"


def _memory(home: Path, fake: FakeOpenAI, **llm: Any) -> Memory:
    return Memory(home, background=False, engine="openai", engines={"perceive": "openai"}, llm={
        "base_url": fake.base_url, "model": "fake-model", "max_retries": 0, **llm})


def _summarize(engine: OpenAIEngine) -> str:
    return engine.summarize(SummarizeRequest(messages=[Message(content=SAID)])).summary


# ---------------------------------------------------------------- perception and the breaker

def test_a_perception_slower_than_its_cap_does_not_hold_learning_back(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setattr("reverie.engines.openai_engine.PERCEIVE_TIMEOUT_SECONDS", 0.3)
    fake_openai.respond_by_step({"perceive": Reply.delayed(1.0, {"route": "deep"}), "summarize": SUMMARY,
                                 "extract": EXTRACTION, "govern_tags": {}})
    with _memory(tmp_path / "home", fake_openai, breaker_seconds=60, timeout=10) as mem:
        mem.add([{"role": "user", "content": SAID}], user="ana")
        mem.recall("which language do I like?", user="ana")  # perception times out at its cap
        assert mem.flush() == 1  # the endpoint answers learning in time: no breaker for it
        assert [f.content for f in mem.facts(user="ana")] == ["Prefers Go for backend services"]
        assert mem.learning_backlog(user="ana") == (0, "")
        # the next recall does not wait on perception again: its own breaker holds it
        started = time.monotonic()
        mem.recall("which language do I like?", user="ana")
        assert time.monotonic() - started < 0.3
    assert [r.step for r in fake_openai.chat_requests].count("perceive") == 1


def test_a_learning_call_that_found_the_endpoint_failing_holds_perception_back_too(fake_openai):
    fake_openai.push(Reply.error(503, "down"))
    engine = OpenAIEngine(fake_openai.base_url, "fake-model", max_retries=0, breaker_seconds=60)
    with pytest.raises(EngineError, match="busy or failing"):
        _summarize(engine)
    with pytest.raises(EngineError, match="not calling it again"):
        engine.perceive(PerceiveRequest(message="hm", now=datetime(2026, 1, 5, tzinfo=timezone.utc)))
    assert len(fake_openai.chat_requests) == 1


# ---------------------------------------------------------------- replies

class _RawServer:
    """Answers every POST with the same bytes, as they are (the scripted server sends text)."""

    def __init__(self, body: bytes):
        raw = body

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def not_utf8() -> Iterator[_RawServer]:
    answer = json.dumps({"summary": "Ana prefers Go MARK", "tags": ["golang"]})
    completion = {"id": "c1", "object": "chat.completion", "created": 1, "model": "fake-model", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]}
    server = _RawServer(json.dumps(completion).encode().replace(b"MARK", b"caf\xc3 \xff"))
    yield server
    server.close()


def test_bytes_that_are_no_utf8_in_an_answer_become_replacement_characters(not_utf8):
    engine = OpenAIEngine(not_utf8.base_url, "fake-model", max_retries=0, breaker_seconds=60)
    assert _summarize(engine) == "Ana prefers Go caf\ufffd \ufffd"


def test_an_episode_answered_in_bytes_that_are_no_utf8_is_learned(tmp_path, not_utf8):
    with Memory(tmp_path / "home", background=False, engines={"summarize": "openai"},
                llm={"base_url": not_utf8.base_url, "model": "fake-model", "max_retries": 0}) as mem:
        episode = mem.add([{"role": "user", "content": SAID}], user="ana")[0]
        assert mem.flush() == 1
        assert mem.episode(episode.id).summary.startswith("Ana prefers Go caf\ufffd")


def test_a_retry_after_given_as_an_http_date_is_waited_out(fake_openai):
    fake_openai.push(Reply(content="busy", status=503, retry_after=formatdate(time.time() + 2, usegmt=True)),
                     Reply.json(SUMMARY))
    engine = OpenAIEngine(fake_openai.base_url, "fake-model", max_retries=1, backoff=0.01)
    started = time.monotonic()
    assert _summarize(engine) == SUMMARY["summary"]
    assert time.monotonic() - started >= 0.9  # the date is to the second: 1 to 2 s from now


def test_a_retry_after_date_already_past_asks_again_after_the_backoff(fake_openai):
    fake_openai.push(Reply(content="busy", status=429, retry_after="Wed, 21 Oct 2015 07:28:00 GMT"),
                     Reply.json(SUMMARY))
    engine = OpenAIEngine(fake_openai.base_url, "fake-model", max_retries=1, backoff=0.01)
    started = time.monotonic()
    assert _summarize(engine) == SUMMARY["summary"]
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("status", [408, 409])
def test_a_request_timeout_or_conflict_is_asked_again(fake_openai, status):
    fake_openai.push(Reply.error(status, "try again"), Reply.json(SUMMARY))
    engine = OpenAIEngine(fake_openai.base_url, "fake-model", max_retries=1, backoff=0.01)
    assert _summarize(engine) == SUMMARY["summary"]
    assert len(fake_openai.chat_requests) == 2


def test_a_reply_declared_over_the_size_limit_is_not_read_and_asked_again(fake_openai):
    fake_openai.push(Reply.json({"summary": "x" * (MAX_REPLY_BYTES + 10)}), Reply.json(SUMMARY))
    engine = OpenAIEngine(fake_openai.base_url, "fake-model", max_retries=1, backoff=0.01, breaker_seconds=60)
    assert _summarize(engine) == SUMMARY["summary"]
    assert len(fake_openai.chat_requests) == 2


class _EndlessServer:
    """Answers the first POST with a completion of 64 MiB that does not end as JSON, sent
    without a length, and every later one with a good answer; records whether the client hung
    up before the first was sent whole."""

    def __init__(self) -> None:
        self.sent = 0
        self.posts = 0
        self.hung_up = False
        good = json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": json.dumps(SUMMARY)}}]}).encode()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the body ends when the connection does

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.posts += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if outer.posts > 1:
                    self.send_header("Content-Length", str(len(good)))
                    self.end_headers()
                    self.wfile.write(good)
                    return
                self.end_headers()
                chunk = b"x" * 65536
                try:
                    self.wfile.write(b'{"choices": [{"message": {"content": "')
                    while outer.sent < 16 * MAX_REPLY_BYTES:
                        self.wfile.write(chunk)
                        outer.sent += len(chunk)
                except OSError:  # the client stopped reading and hung up
                    outer.hung_up = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()
        host, port = self.server.server_address[:2]
        self.base_url = f"http://{host}:{port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_reply_that_goes_on_past_the_size_limit_is_cut_off_and_asked_again():
    server = _EndlessServer()
    try:
        engine = OpenAIEngine(server.base_url, "fake-model", max_retries=1, backoff=0.01, breaker_seconds=60)
        assert _summarize(engine) == SUMMARY["summary"]
        assert server.posts == 2
        assert server.hung_up and server.sent < 16 * MAX_REPLY_BYTES  # not read to its end
    finally:
        server.close()


def test_a_reply_over_the_size_limit_at_every_attempt_says_so():
    server = _EndlessServer()
    try:
        engine = OpenAIEngine(server.base_url, "fake-model", max_retries=0, breaker_seconds=60)
        with pytest.raises(EngineError, match="over the limit of 4 MiB a reply"):
            _summarize(engine)
    finally:
        server.close()


# ---------------------------------------------------------------- answers

def test_an_empty_summary_is_asked_again_naming_the_problem(fake_openai):
    fake_openai.push(Reply.json({}), Reply.json(SUMMARY))
    engine = OpenAIEngine(fake_openai.base_url, "fake-model", max_retries=1, backoff=0.01, breaker_seconds=60)
    assert _summarize(engine) == SUMMARY["summary"]
    again = fake_openai.chat_requests[1].body["messages"]
    assert "the summary was empty" in again[-1]["content"]


def test_a_summary_still_empty_at_the_last_attempt_is_the_offline_engines_line(fake_openai):
    fake_openai.push(Reply.json({"overview": "Something."}), Reply.json({"summary": "  "}))
    engine = OpenAIEngine(fake_openai.base_url, "fake-model", max_retries=1, backoff=0.01, breaker_seconds=60)
    answer = engine.summarize(SummarizeRequest(messages=[Message(role="user", content=SAID)]))
    assert "Go for backend services" in answer.summary
    assert len(fake_openai.chat_requests) == 2  # asked again once, then made good


def test_an_endpoint_that_answers_only_empty_summaries_still_gives_the_exchange_its_daily_note(
        tmp_path, fake_openai):
    fake_openai.respond_by_step({"summarize": {"overview": "Something.", "tags": ["x"]}, "extract": EXTRACTION,
                                 "govern_tags": {}})
    with Memory(tmp_path / "home", background=False, engine="openai",
                llm={"base_url": fake_openai.base_url, "model": "fake-model", "max_retries": 1,
                     "breaker_seconds": 0}) as mem:
        episode = mem.add([{"role": "user", "content": SAID}], user="ana")[0]
        assert mem.flush() == 1
        assert mem.learning_backlog(user="ana") == (0, "")
        assert "Go for backend services" in mem.episode(episode.id).summary
        # the exchange has its line in the daily notes, which the dream reads
        notes = [n.content for n in mem.notes(user="ana")]
        assert len(notes) == 1 and "Go for backend services" in notes[0]



@pytest.mark.parametrize(("step", "cut", "hint"), [
    ("summarize", '{"summary": "Ana pre', "raise the model's max_tokens); "),
    ("distill", '{"entries": [{"act', "raise the model's max_tokens, or lower dream_max_entries); "),
])
def test_an_answer_cut_off_at_the_token_limit_names_what_makes_that_steps_answer_shorter(
        fake_openai, step, cut, hint):
    fake_openai.push(Reply.cut_off(cut))
    engine = OpenAIEngine(fake_openai.base_url, "fake-model", max_retries=0, breaker_seconds=60)
    with pytest.raises(EngineError) as raised:
        if step == "summarize":
            _summarize(engine)
        else:
            engine.distill(DistillRequest(facts=[], notes=[]))
    assert hint in str(raised.value) and "learn_batch_chars" not in str(raised.value)
