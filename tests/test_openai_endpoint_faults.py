"""The openai engine when an endpoint's reply is no usable completion, or comes too slowly: a
real chat-completions server on 127.0.0.1 (tests/fake_openai.py) scripted to misbehave."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

import pytest

from reverie import Memory
from reverie.engines.base import PerceiveRequest, SummarizeRequest
from reverie.engines.openai_engine import OpenAIEngine
from reverie.errors import EngineError
from reverie.models import Message
from tests.fake_openai import FakeOpenAI, Reply, fake_openai  # noqa: F401  (fixture)

SUMMARY = {"summary": "Moved billing to Postgres", "overview": "Billing moved last week.", "tags": ["billing"]}
HTML = "<html><body><h1>502 Bad Gateway</h1></body></html>"
TALK = [{"role": "user", "content": "We moved billing to Postgres last week"},
        {"role": "assistant", "content": "Good move."}]


def make_engine(server: FakeOpenAI, **options) -> OpenAIEngine:
    settings = {"model": "test-model", "api_key": "sk-test", "timeout": 2.0, "backoff": 0.001} | options
    return OpenAIEngine(server.base_url, **settings)


def summarize(engine: OpenAIEngine):
    return engine.summarize(SummarizeRequest(messages=[Message(content="We moved billing to Postgres")]))


def llm_memory(home, server: FakeOpenAI, *, timeout: float = 2, **engines) -> Memory:
    return Memory(home, background=False, engines=engines,
                  llm={"base_url": server.base_url, "model": "fake-model", "max_retries": 0,
                       "breaker_seconds": 0, "timeout": timeout})


def answer_well(server: FakeOpenAI) -> None:
    server.respond_by_step({
        "summarize": SUMMARY, "govern_tags": {}, "perceive": {"route": "shallow"},
        "extract": lambda body: {"newFacts": [{"content": "Billing runs on Postgres", "category": "context",
                                               "confidence": 0.9}]},
    })


# ---------------------------------------------------------------- a reply that is no completion

@pytest.mark.parametrize(
    "reply, says",
    [
        (Reply.raw(HTML), "the reply was not JSON (it begins '<html><body><h1>502 Bad Gateway"),
        (Reply.raw(HTML, content_type="text/html"), "the reply was not JSON"),
        (Reply.raw([]), "the reply was a JSON list, not a chat completion"),
        (Reply.raw('"hello"'), "the reply was a JSON string, not a chat completion"),
        (Reply.raw({"id": "x"}), "the reply had no choices"),
        (Reply.raw({"choices": None}), "the reply had no choices"),
        (Reply.raw({"choices": [{"index": 0}]}), "the reply had no message"),
        (Reply(message={"role": "assistant", "content": 42}), "message content was a JSON number, not text"),
        (Reply.raw({"error": {"message": "model 'qwen9' not found", "code": 404}}),
         "the server answered with an error, not a completion: model 'qwen9' not found"),
    ],
    ids=["html", "html-as-html", "list", "string", "no-choices", "null-choices", "no-message", "number",
         "error-object"],
)
def test_a_reply_that_is_no_completion_is_an_engine_error_asked_again_then_the_breaker_opens(
        fake_openai, reply, says):
    fake_openai.push(reply, reply)
    engine = make_engine(fake_openai, max_retries=1)
    with pytest.raises(EngineError) as error:
        summarize(engine)
    message = str(error.value)
    assert message.startswith(f"summarize: model 'test-model' at {fake_openai.base_url} gave no usable answer "
                              "after 2 attempt(s): ")
    assert says in message
    assert len(fake_openai.requests) == 2  # asked again, as after a 5xx
    # the endpoint fails, not the model: the breaker spares the next caller the wait
    with pytest.raises(EngineError, match="not calling it again"):
        summarize(engine)
    assert len(fake_openai.requests) == 2


def test_a_reply_that_is_no_completion_then_a_good_one_succeeds(fake_openai):
    fake_openai.push(Reply.raw(HTML), SUMMARY)
    assert summarize(make_engine(fake_openai)).summary == SUMMARY["summary"]
    assert len(fake_openai.requests) == 2


def test_content_given_as_text_parts_is_read_as_its_text(fake_openai):
    fake_openai.push(Reply.parts(SUMMARY))
    assert summarize(make_engine(fake_openai)).summary == SUMMARY["summary"]


def test_a_refusal_says_what_the_model_said_and_is_asked_again_without_the_breaker(fake_openai):
    fake_openai.push(Reply.refusal("I can't help with that."), Reply.refusal("I can't help with that."))
    engine = make_engine(fake_openai, max_retries=1)
    with pytest.raises(EngineError, match=r"the model refused: I can't help with that\.$"):
        summarize(engine)
    retry = fake_openai.requests[1].body["messages"]
    assert [m["role"] for m in retry] == ["system", "user"]  # no empty answer echoed back to it
    fake_openai.push(SUMMARY)
    assert summarize(engine).summary == SUMMARY["summary"]  # the model answered: no breaker


def test_an_answer_cut_off_at_the_token_limit_says_so_first(fake_openai):
    fake_openai.push(Reply.cut_off('{"summary": "Moved billing to Post'))
    with pytest.raises(EngineError) as error:
        summarize(make_engine(fake_openai, max_retries=0))
    problem = str(error.value).split("attempt(s): ", 1)[1]
    assert problem.startswith("the server cut the answer off at its token limit (finish_reason 'length': "
                              "raise the model's max_tokens")
    assert problem.endswith("malformed JSON (Unterminated string starting at character 12)")


def test_an_empty_answer_cut_off_at_the_token_limit_says_so(fake_openai):
    fake_openai.push(Reply.cut_off(""))
    with pytest.raises(EngineError, match=r"token limit .*; the answer was empty$"):
        summarize(make_engine(fake_openai, max_retries=0))


def test_a_flush_against_a_proxy_page_keeps_the_episode_and_learns_it_once_the_endpoint_is_fixed(
        tmp_path, fake_openai):
    fake_openai.respond_by_step({step: Reply.raw(HTML) for step in ("summarize", "extract", "govern_tags")})
    with llm_memory(tmp_path / "home", fake_openai, extract="openai", summarize="openai") as mem:
        mem.add(TALK, user="ana")
        assert mem.flush(user="ana") == 0
        waiting, error = mem.learning_backlog(user="ana")
        assert waiting == 1 and not mem.episodes(user="ana")[0].learned
        assert f"model 'fake-model' at {fake_openai.base_url} gave no usable answer" in error
        assert "the reply was not JSON" in error
        reasons = " ".join(mem.health(user="ana").reasons)
        assert "gave no usable answer" in reasons and fake_openai.base_url in reasons
        answer_well(fake_openai)
        assert mem.flush(user="ana") == 1
        assert mem.learning_backlog(user="ana") == (0, "")
        assert [f.content for f in mem.facts(user="ana", status="pending")] == ["Billing runs on Postgres"]


def test_recall_and_a_turn_with_perception_on_a_broken_endpoint_are_perceived_offline(tmp_path, fake_openai):
    fake_openai.respond_by_step({"perceive": Reply.raw(HTML)})
    with llm_memory(tmp_path / "home", fake_openai, perceive="openai") as mem:
        mem.remember("Billing moved to Postgres", user="ana")
        assert "Postgres" in mem.recall("Where did billing move?", user="ana").context
        with mem.turn("Where did billing move?", user="ana") as turn:
            assert "Postgres" in turn.context and turn.id
            turn.complete("To Postgres.")
        [episode] = mem.episodes(user="ana")
        assert episode.id == turn.id and episode.status == "completed"
    assert [r.step for r in fake_openai.chat_requests] == ["perceive", "perceive"]  # asked, then offline


# ---------------------------------------------------------------- a deadline for the whole call

def _threads() -> set[str]:
    """The threads that are not the fake server's own (one a connection it serves)."""
    return {t.name for t in threading.enumerate() if "process_request_thread" not in t.name}


def _wait_for(condition, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_a_reply_trickled_past_the_timeout_is_cut_at_the_deadline_and_its_connection_closed(fake_openai):
    engine = make_engine(fake_openai, timeout=0.5, max_retries=0)
    fake_openai.push(SUMMARY)
    summarize(engine)  # the engine's event loop runs from now on
    before = _threads()
    fake_openai.push(Reply.trickled(SUMMARY, every=0.1))  # some 50 lots: 5 s in all
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"no answer within 0\.5s"):
        summarize(engine)
    assert 0.5 <= time.monotonic() - started < 1.5  # the whole reply would take some 5 s
    assert _wait_for(lambda: fake_openai.hung_up == 1)  # the connection closed: the server stops sending
    assert _threads() <= before  # nothing left running for the call


def test_a_reply_trickled_within_the_timeout_is_read_whole(fake_openai):
    fake_openai.push(Reply.trickled(SUMMARY, every=0.002))
    assert summarize(make_engine(fake_openai, timeout=5)).summary == SUMMARY["summary"]


def test_perception_trickled_past_its_deadline_gives_the_recall_to_the_offline_engine(tmp_path, fake_openai):
    fake_openai.respond_by_step({"perceive": Reply.trickled({"route": "shallow"}, every=0.1)})
    with llm_memory(tmp_path / "home", fake_openai, timeout=0.5, perceive="openai") as mem:
        mem.remember("Billing moved to Postgres", user="ana")
        started = time.monotonic()
        found = mem.recall("Where did billing move?", user="ana")
        assert time.monotonic() - started < 2.0 and "Postgres" in found.context  # the reply: some 4 s


def test_a_perception_waits_at_most_its_own_cap_whatever_the_timeout(fake_openai, monkeypatch):
    monkeypatch.setattr("reverie.engines.openai_engine.PERCEIVE_TIMEOUT_SECONDS", 0.3)
    fake_openai.push(Reply.trickled({"route": "deep"}, every=0.1))
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"no answer within 0\.3s"):
        make_engine(fake_openai, timeout=30).perceive(
            PerceiveRequest(message="hm", now=datetime(2024, 5, 8, tzinfo=timezone.utc)))
    assert time.monotonic() - started < 1.5  # the reply: some 4 s
