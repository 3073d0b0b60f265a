"""LangChain: a chat-message history and a retriever over reverie (``pip install 'reverie[langchain]'``).

    from reverie import Memory
    from reverie.integrations.langchain import ReverieChatMessageHistory, ReverieRetriever

    mem = Memory("./mem")
    history = ReverieChatMessageHistory(mem, user="ana", thread="support")   # RunnableWithMessageHistory
    retriever = ReverieRetriever(memory=mem, user="ana", k=5)                  # any retrieval chain

The history stores each exchange as reverie episodes (learned from like any other
conversation); ``clear()`` archives the thread's episodes (reversible), it deletes nothing.
The retriever runs reverie's recall and returns each delivered line as a Document whose
metadata says why it was chosen and where it came from.
"""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever

from reverie.memory import Memory
from reverie.models import Message, utcnow

_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


def _to_langchain(message: Message) -> BaseMessage:
    if message.role == "assistant":
        return AIMessage(content=message.content)
    if message.role == "system":
        return SystemMessage(content=message.content)
    return HumanMessage(content=message.content, name=message.speaker) if message.speaker else HumanMessage(
        content=message.content
    )


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
            content = message.content if isinstance(message.content, str) else str(message.content)
            if content.strip():
                rows.append({"role": _ROLES.get(message.type, "user"), "content": content, "at": utcnow()})
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
    """reverie's recall as a LangChain retriever: the delivered lines, best first."""

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
            if item.score > 0
        ][: self.k]
