"""Framework adapters against the real packages (installed by the test extra), and the
runnable examples under examples/, run as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    HumanMessageChunk,
    ToolMessage,
)
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from pydantic import ValidationError

from reverie import AsyncMemory, Memory
from reverie.integrations.langchain import ReverieChatMessageHistory, ReverieRetriever

ROOT = Path(__file__).resolve().parents[1]


def test_langchain_history_keeps_a_thread_and_clear_archives_it(mem):
    history = ReverieChatMessageHistory(mem, user="ana", thread="support")
    history.add_messages([HumanMessage(content="My order 1142 never arrived"), AIMessage(content="Sorry! Checking.")])
    history.add_messages([HumanMessage(content="Any news?"), AIMessage(content="It ships tomorrow.")])
    assert [(m.type, m.content) for m in history.messages] == [
        ("human", "My order 1142 never arrived"), ("ai", "Sorry! Checking."),
        ("human", "Any news?"), ("ai", "It ships tomorrow."),
    ]
    other = ReverieChatMessageHistory(mem, user="ana", thread="sales")
    assert other.messages == []
    history.clear()
    assert history.messages == []
    archived = mem.episodes(user="ana", thread="support", archived=True)
    assert len(archived) == 2  # archived, not deleted: Memory.restore brings one back


def test_langchain_retriever_returns_recall_lines_with_their_reasons(mem):
    mem.remember("Ana is allergic to peanuts", user="ana", category="constraint")
    docs = ReverieRetriever(memory=mem, user="ana", k=3).invoke("what is ana allergic to?")
    assert docs and "peanuts" in docs[0].page_content
    assert docs[0].metadata["kind"] == "fact" and docs[0].metadata["score"] > 0 and docs[0].metadata["why"]


def test_the_langchain_example_runs_offline(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "langchain_chat.py"), str(tmp_path / "home")],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == ["Noted: Lisbon in May.", "You said Lisbon, in May."]
    assert any("Lisbon" in line for line in lines[2:])  # the retriever finds what the chat said
    with Memory(tmp_path / "home", background=False) as memory:
        assert len(memory.episodes(user="ana", thread="travel")) == 2


def test_langchain_history_keeps_the_text_of_content_blocks(mem):
    history = ReverieChatMessageHistory(mem, user="ana", thread="blocks")
    history.add_messages([
        HumanMessage(content=[{"type": "text", "text": "What is in "}, "this picture?",
                              {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]),
        AIMessage([{"type": "text", "text": "answer"}]),
        AIMessage([{"type": "image_url", "image_url": {"url": "https://example.com/dog.png"}}]),  # no words
    ])
    assert [(m.type, m.content) for m in history.messages] == [("human", "What is in this picture?"), ("ai", "answer")]
    (episode,) = mem.episodes(user="ana", thread="blocks")
    assert [m.content for m in episode.messages] == ["What is in this picture?", "answer"]


def test_langchain_tool_output_is_the_agents_side_and_comes_back_as_a_tool_message(mem):
    history = ReverieChatMessageHistory(mem, user="ana", thread="tools")
    history.add_messages([
        HumanMessage(content="What's the weather where I am?"),
        ToolMessage(content="I live in Reykjavik and I love volcanoes", tool_call_id="call_1", name="lookup"),
        AIMessage(content="It is cold in Reykjavik today."),
    ])
    (episode,) = mem.episodes(user="ana", thread="tools")
    assert [(m.role, m.speaker) for m in episode.messages] == [("user", None), ("tool", "lookup"), ("assistant", None)]
    back = history.messages
    assert [m.type for m in back] == ["human", "tool", "ai"]
    assert isinstance(back[1], ToolMessage) and back[1].name == "lookup"
    assert back[1].content == "I live in Reykjavik and I love volcanoes"
    mem.flush(user="ana")
    learned = [f.content for f in mem.facts(user="ana")] + [
        s.summary for s in mem.profile(user="ana").sections().values()]
    assert not any("Reykjavik" in line or "volcano" in line for line in learned)  # not what ana said


def test_langchain_message_names_are_kept_as_speakers_and_come_back(mem):
    history = ReverieChatMessageHistory(mem, user="ana", thread="names")
    history.add_messages([HumanMessage(content="Can we meet on Friday?", name="bob"),
                          AIMessage(content="Friday works.", name="planner")])
    (episode,) = mem.episodes(user="ana", thread="names")
    assert [m.speaker for m in episode.messages] == ["bob", "planner"]
    assert [(m.type, m.name, m.content) for m in history.messages] == [
        ("human", "bob", "Can we meet on Friday?"), ("ai", "planner", "Friday works.")]


def test_langchain_retriever_leaves_the_profile_out(mem):
    mem.set_profile("user.workContext", "Ana leads the billing team at a bank in Lisbon", user="ana")
    mem.remember("Ana is allergic to peanuts", user="ana", category="constraint")
    docs = ReverieRetriever(memory=mem, user="ana", k=1).invoke("what is ana allergic to?")
    assert [d.metadata["kind"] for d in docs] == ["fact"] and "peanuts" in docs[0].page_content
    everything = ReverieRetriever(memory=mem, user="ana", k=10).invoke("billing team bank Lisbon")
    assert all(d.metadata["kind"] != "profile" for d in everything)


def test_langchain_streamed_and_chat_messages_keep_the_agents_side_out_of_what_the_user_said(mem):
    history = ReverieChatMessageHistory(mem, user="ana", thread="stream")
    history.add_messages([
        HumanMessageChunk(content="Where should I go in May?"),
        AIMessageChunk(content="You told me you live in Reykjavik"),
        ChatMessage(role="assistant", content="Chat message from the assistant"),
        FunctionMessage(name="lookup", content="Function output about volcanoes"),
    ])
    (episode,) = mem.episodes(user="ana", thread="stream")
    assert [m.role for m in episode.messages] == ["user", "assistant", "assistant", "tool"]
    assert [m.type for m in history.messages] == ["human", "ai", "ai", "tool"]
    mem.flush(user="ana")
    learned = [f.content for f in mem.facts(user="ana")]
    assert not any("Reykjavik" in line or "volcano" in line for line in learned)


def test_langchain_history_streamed_through_runnable_with_message_history_keeps_the_answer_as_ai(mem):
    def model(messages: list[BaseMessage]) -> Iterator[AIMessageChunk]:
        for word in ("Noted: ", "Lisbon ", "in May."):
            yield AIMessageChunk(content=word)

    chain = RunnableWithMessageHistory(
        RunnableLambda(model), lambda session_id: ReverieChatMessageHistory(mem, user="ana", thread=session_id))
    list(chain.stream([HumanMessage("I go to Lisbon in May")], config={"configurable": {"session_id": "trip"}}))
    back = ReverieChatMessageHistory(mem, user="ana", thread="trip").messages
    assert [(m.type, m.content) for m in back] == [("human", "I go to Lisbon in May"), ("ai", "Noted: Lisbon in May.")]


def test_langchain_adapters_take_an_async_memory_and_refuse_anything_else(mem):
    amem = AsyncMemory(memory=mem)
    mem.remember("Ana is allergic to peanuts", user="ana", category="constraint")
    history = ReverieChatMessageHistory(amem, user="ana", thread="a")
    history.add_messages([HumanMessage("Hello there"), AIMessage("Hi Ana")])
    assert [m.content for m in history.messages] == ["Hello there", "Hi Ana"]
    docs = ReverieRetriever(memory=amem, user="ana").invoke("what is ana allergic to?")
    assert docs and "peanuts" in docs[0].page_content
    with pytest.raises(TypeError, match="reverie Memory or AsyncMemory"):
        ReverieChatMessageHistory("./mem", user="ana")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reverie Memory or AsyncMemory"):
        ReverieRetriever(memory="./mem", user="ana")


def test_langchain_retriever_refuses_a_negative_k(mem):
    with pytest.raises(ValidationError, match="k must be a whole number >= 0"):
        ReverieRetriever(memory=mem, user="ana", k=-1)
