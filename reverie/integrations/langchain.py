"""LangChain: a chat-message history and a retriever over reverie (``pip install 'reverie[langchain]'``).

    from reverie import Memory
    from reverie.integrations.langchain import ReverieChatMessageHistory, ReverieRetriever

    mem = Memory("./mem")
    history = ReverieChatMessageHistory(mem, user="ana", thread="support")   # RunnableWithMessageHistory
    retriever = ReverieRetriever(memory=mem, user="ana", k=5)                  # any retrieval chain

The history stores each exchange as reverie episodes (learned from like any other
conversation); ``clear()`` archives the thread's episodes (reversible), it deletes nothing.
A message is kept as its text (a list of content blocks: their text, images and other
blocks left out) with its ``name`` as the speaker; a ToolMessage is kept with role "tool",
the agent's side, never learned as what the user said, and comes back as a ToolMessage
with its tool's name (its ``tool_call_id`` and the AI message's tool calls are not kept).
The retriever runs reverie's recall and returns each delivered line as a Document whose
metadata says why it was chosen and where it came from; the profile's lines, which lead
every recall whatever the query, are left out (read them with ``Memory.profile``).
"""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever

from reverie.memory import Memory
from reverie.models import Message, utcnow

# a LangChain message's type -> reverie's role ("tool": the agent's side, see AGENT_ROLES)
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _to_langchain(message: Message) -> BaseMessage:
    name = message.speaker
    if message.role in ("assistant", "agent", "bot"):
        return AIMessage(content=message.content, name=name)
    if message.role == "system":
        return SystemMessage(content=message.content, name=name)
    if message.role == "tool":
        # the call it answered is not kept: the AI message's tool calls never are
        return ToolMessage(content=message.content, name=name, tool_call_id="")
    return HumanMessage(content=message.content, name=name)


def _text(message: BaseMessage) -> str:
    """The words of a message: its content, or the text of its content blocks (strings and
    ``{"type": "text", "text": ...}``), in order; images and other blocks are left out."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


class ReverieChatMessageHistory(BaseChatMessageHistory):
    """One thread of one user's conversation, kept in reverie."""

    def __init__(self, memory: Memory, *, user: str, thread: str = "default"):
        self.memory, self.user, self.thread = memory, user, thread

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        episodes = self.memory.episodes(user=self.user, thread=self.thread, limit=None)
        return [_to_langchain(m) for ep in reversed(episodes) if ep.status == "completed" for m in ep.messages]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        rows: list[dict[str, Any]] = []
        for message in messages:
            content = _text(message)
            if content.strip():
                row: dict[str, Any] = {"role": _ROLES.get(message.type, "user"), "content": content, "at": utcnow()}
                if isinstance(message.name, str) and message.name.strip():
                    row["speaker"] = message.name
                rows.append(row)
        if rows:
            self.memory.add(rows, user=self.user, thread=self.thread)

    def clear(self) -> None:
        """Archive the thread's episodes: they leave the history and recall, and
        ``Memory.restore`` brings any of them back."""
        store = self.memory.store
        with store.transaction():
            for episode in self.memory.episodes(user=self.user, thread=self.thread, limit=None):
                episode.archived = True
                store.put_episode(episode)


class ReverieRetriever(BaseRetriever):
    """reverie's recall as a LangChain retriever: the delivered lines that matched the query,
    best first (the profile's lines, delivered whatever the query, are left out)."""

    memory: Any
    user: str
    budget: int = 2000
    k: int = 10

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        result = self.memory.recall(query, user=self.user, budget=self.budget, explain=True, track=False)
        return [
            Document(
                page_content=item.text,
                metadata={"kind": item.kind, "id": item.id, "score": item.score, "why": item.parts,
                          "provenance": item.provenance},
            )
            for item in result.items
            # an item scored 0 matched nothing; the profile's lines lead every recall at 1.0
            # whatever the query, and would take the places of what it found
            if item.score > 0 and item.kind != "profile"
        ][: self.k]
