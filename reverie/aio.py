"""``AsyncMemory``: the same surface as :class:`~reverie.memory.Memory` for asyncio hosts
(agent frameworks), never blocking the event loop.

    from reverie import AsyncMemory
    mem = AsyncMemory(home="./mem")
    async with mem.turn("I always want the conclusion first", user="ana") as turn:
        prompt_context = turn.context
        await turn.complete("Noted.")
    result = await mem.recall("what did we decide?", user="ana")
    await mem.aclose()

Every call runs the synchronous library in a worker thread (``anyio.to_thread``), so many
tasks may call at once: the store gives each thread its own connection and serialises
writers, and the learning queue is thread-safe.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import TracebackType
from typing import Any, Awaitable, Callable, ParamSpec, TypeVar

import anyio.to_thread

from reverie.memory import Memory
from reverie.models import Episode
from reverie.turn import Turn

P = ParamSpec("P")
R = TypeVar("R")

# the Memory methods AsyncMemory offers as coroutines, by the same names
# (every public Memory method but ``turn``, an async context manager here, ``close``, which
# is ``aclose``, and ``export_chunks``, whose pieces read the store as they are iterated: here
# ``export_to`` writes them in a thread; tests/test_aio.py checks that none is missing)
METHODS = (
    "complete_turn", "add", "ingest", "trim", "remember", "facts", "fact", "update_fact", "forget", "delete_episode",
    "restore_fact", "reinforce",
    "profile", "set_profile", "episodes", "threads", "episode", "feedback", "add_knowledge", "delete_knowledge", "knowledge", "tags", "merge_tags",
    "set_tag_status", "episode_page", "fact_page", "note_page", "tag_page", "change_page", "knowledge_page", "diary_page",
    "recall", "flush", "learning_backlog", "export", "export_to", "import_", "import_file", "stats", "users", "delete_user", "dream",
    "dream_status", "chat_command", "notes", "diaries", "memory_md", "memory_md_view", "save_memory_md", "consolidate",
    "tidy", "clean", "restore", "health", "check_store", "sync", "migrate_to", "changes", "undo",
)


def _in_thread(method: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    @functools.wraps(method)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return await anyio.to_thread.run_sync(functools.partial(method, *args, **kwargs))

    return run


class AsyncTurn:
    """A turn opened with :meth:`AsyncMemory.turn`: ``await turn.complete(reply)``."""

    def __init__(self, turn: Turn):
        self._turn = turn

    @property
    def id(self) -> str:
        return self._turn.id

    @property
    def context(self) -> str:
        return self._turn.context

    @property
    def route(self) -> str:
        return self._turn.route

    async def complete(self, reply: str) -> Episode:
        return await anyio.to_thread.run_sync(self._turn.complete, reply)

    async def __aenter__(self) -> "AsyncTurn":
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await anyio.to_thread.run_sync(self._turn.__exit__, exc_type, exc, tb)


class _TurnOpener:
    """``async with mem.turn(...) as turn`` (or ``turn = await mem.turn(...)``)."""

    def __init__(self, memory: Memory, message: str, kwargs: dict[str, Any]):
        self._open = functools.partial(memory.turn, message, **kwargs)
        self._turn: AsyncTurn | None = None

    def __await__(self) -> Any:
        return self._start().__await__()

    async def _start(self) -> AsyncTurn:
        self._turn = AsyncTurn(await anyio.to_thread.run_sync(self._open))
        return self._turn

    async def __aenter__(self) -> AsyncTurn:
        return await self._start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._turn is not None:
            await self._turn.__aexit__(exc_type, exc, tb)


class AsyncMemory:
    """:class:`~reverie.memory.Memory` with coroutine methods of the same names."""

    def __init__(self, home: str | Path | None = None, *, memory: Memory | None = None, **options: Any):
        self.memory = memory or Memory(home, **options)
        for name in METHODS:
            setattr(self, name, _in_thread(getattr(self.memory, name)))

    def turn(self, message: str, **kwargs: Any) -> _TurnOpener:
        """Open a turn: ``async with mem.turn(message, user=...) as turn: ... await turn.complete(reply)``."""
        return _TurnOpener(self.memory, message, kwargs)

    def __getattr__(self, name: str) -> Any:  # the coroutines set in __init__ (for type checkers)
        raise AttributeError(name)

    async def aclose(self) -> None:
        """Drain the learning queue and close the store (in a worker thread)."""
        await anyio.to_thread.run_sync(self.memory.close)

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
