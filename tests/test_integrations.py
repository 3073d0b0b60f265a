"""Framework adapters against the real packages (installed by the test extra), and the
runnable examples under examples/, run as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from reverie import Memory
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
