"""LangChain: a chat-message history and a retriever over reverie (``pip install 'reverie[langchain]'``).

    from reverie import Memory
    from reverie.integrations.langchain import ReverieChatMessageHistory, ReverieRetriever

    mem = Memory("./mem")
    history = ReverieChatMessageHistory(mem, user="ana", thread="support")   # RunnableWithMessageHistory
    retriever = ReverieRetriever(memory=mem, user="ana", k=5)                  # any retrieval chain

The history stores each exchange as reverie episodes (learned from like any other
conversation); ``clear()`` archives the thread's episodes (reversible), it deletes nothing.
A message is kept as its text (a list of content blocks: their text, images and other
blocks left out) with its ``name`` as the speaker and its role by its class, streamed chunks
(``AIMessageChunk``...) as their messages: a ToolMessage (or FunctionMessage) is kept with role
"tool", the agent's side, never learned as what the user said, and comes back as a ToolMessage
with its tool's name (its ``tool_call_id`` and the AI message's tool calls are not kept); a
ChatMessage keeps its own role. Each ``add_messages`` call is stored as its own exchanges: give
a question and its answer in one call (as ``RunnableWithMessageHistory`` does), since
``add_user_message`` then ``add_ai_message`` store two episodes. ``memory`` may be a ``Memory``
or an ``AsyncMemory``.
The retriever runs reverie's recall and returns each delivered line as a Document whose
metadata says why it was chosen and where it came from; the profile's lines, which lead
every recall whatever the query, are left out (read them with ``Memory.profile``).
"""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.retrievers import BaseRetriever
from pydantic import field_validator

from reverie.aio import AsyncMemory
from reverie.errors import InvalidInput
from reverie.memory import Memory
from reverie.models import Message, utcnow

# a LangChain message's class -> reverie's role ("tool": the agent's side, see AGENT_ROLES); a
# streamed chunk (AIMessageChunk...) is a subclass of its message's class
_ROLES: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"), (AIMessage, "assistant"), (SystemMessage, "system"), (ToolMessage, "tool"),
    (FunctionMessage, "tool"),
)
# a ChatMessage's own role, as LangChain and OpenAI spell the agent's side
_CHAT_ROLES = {"function": "tool", "developer": "system"}


def _role(message: BaseMessage, field: str) -> str:
    """reverie's role for ``message``: never the user's for what the agent's side wrote."""
    if isinstance(message, ChatMessage):
        return _CHAT_ROLES.get(message.role.strip().lower(), message.role)
    for kind, role in _ROLES:
        if isinstance(message, kind):
            return role
    raise InvalidInput(f"{field} is a {type(message).__name__}: a history keeps human, AI, system, tool, "
                       "function and chat messages", field=field)


def _memory(memory: Any) -> Memory:
    if isinstance(memory, AsyncMemory):
        return memory.memory
    if not isinstance(memory, Memory):
        raise TypeError(f"memory must be a reverie Memory or AsyncMemory, not {type(memory).__name__}")
    return memory


def _to_langchain(message: Message) -> BaseMessage:
    name = message.speaker
    if message.role in ("assistant", "agent", "bot"):
        return AIMessage(content=message.content, name=name)
    if message.role == "system":
        return SystemMessage(content=message.content, name=name)
    if message.role == "tool":
        # the call it answered is not kept: the AI message's tool calls never are
        return ToolMessage(content=message.content, name=name, tool_call_id="")
    if message.role == "user":
        return HumanMessage(content=message.content, name=name)
    return ChatMessage(content=message.content, role=message.role, name=name)  # a ChatMessage's own role


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

    def __init__(self, memory: Memory | AsyncMemory, *, user: str, thread: str = "default"):
        self.memory, self.user, self.thread = _memory(memory), user, thread

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        episodes = self.memory.episodes(user=self.user, thread=self.thread, limit=None)
        return [_to_langchain(m) for ep in reversed(episodes) if ep.status == "completed" for m in ep.messages]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        rows: list[dict[str, Any]] = []
        for n, message in enumerate(messages):
            content = _text(message)
            if content.strip():
                row: dict[str, Any] = {"role": _role(message, f"messages[{n}]"), "content": content, "at": utcnow()}
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

    @field_validator("memory")
    @classmethod
    def _a_memory(cls, value: Any) -> Memory:
        return _memory(value)

    @field_validator("k")
    @classmethod
    def _a_count(cls, value: int) -> int:
        if value < 0:
            raise ValueError("k must be a whole number >= 0")
        return value

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
