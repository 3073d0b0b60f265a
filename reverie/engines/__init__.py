"""Engines: who perceives, extracts, summarizes, distills, tidies and governs tags.

Configuration picks an engine per step (``engine = "heuristic"`` for all,
``[engines] extract = "openai"`` for one). Each engine is built once, when a step first needs it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Hashable, Iterator, Mapping, TypeVar, cast

from reverie.engines.base import STEPS, Engine, EpisodeSummary, SummarizeRequest
from reverie.engines.heuristic import HeuristicEngine
from reverie.engines.openai_engine import OpenAIEngine
from reverie.errors import InvalidInput
from reverie.observe import observed
from reverie.settings import Settings

__all__ = ["Engine", "Engines", "STEPS", "build_engine"]

K = TypeVar("K", bound=Hashable)


def build_engine(name: str, settings: Settings) -> Engine:
    if name == "heuristic":
        return HeuristicEngine()
    if name == "openai":
        llm = settings.llm
        if not llm.base_url:
            raise InvalidInput(
                "the openai engine needs a base URL: set llm.base_url in config.toml, "
                "REVERIE_LLM_BASE_URL, or pass --base-url",
                field="llm.base_url",
            )
        return OpenAIEngine(
            base_url=llm.base_url, model=llm.model, api_key=llm.api_key,
            timeout=llm.timeout, max_retries=llm.max_retries, batch_chars=settings.learn_batch_chars,
            breaker_seconds=llm.breaker_seconds, concurrency=llm.concurrency,
        )
    raise InvalidInput(f"unknown engine {name!r}", field="engine")


class Engines:
    """The engine for each step, e.g. ``engines.extract.extract(request)``."""

    def __init__(self, settings: Settings):
        self._settings = settings
        self._built: dict[str, Engine] = {}
        self._building = threading.Lock()

    def for_step(self, step: str) -> Engine:
        """The one engine of ``step``'s kind (built once, whichever thread asks first: an
        endpoint's engine holds the process's calls to ``llm.concurrency``)."""
        name = self._settings.engine_for(step)
        engine = self._built.get(name)
        if engine is None:
            with self._building:
                engine = self._built.get(name)
                if engine is None:
                    engine = self._built[name] = build_engine(name, self._settings)
        return engine

    def offline(self, *steps: str) -> bool:
        """Whether every one of ``steps`` runs on the heuristic engine (see Settings.offline)."""
        return self._settings.offline(*steps)

    @contextmanager
    def summarizing(self, requests: Mapping[K, SummarizeRequest]) -> Iterator[Callable[[], dict[K, EpisodeSummary]]]:
        """Summaries of many episodes (one call each), made while the caller does other work:
        yields the function that waits for them all, keyed and ordered as ``requests``.

        An endpoint answers each call in its own time, so up to ``llm.concurrency`` calls are
        in flight at once (the engine holds every caller of this process to that many in
        all). The in-process engine is asked one request after another when the
        caller waits: the interpreter runs one thread at a time, so threads would only add
        switching. The first failure is raised; on the way out the calls not started yet are
        dropped and the running ones waited for.

        >>> with engines.summarizing({"e1": request}) as summaries:
        ...     extraction = engines.extract.extract(other)   # meanwhile
        ...     answers = summaries()                          # {"e1": EpisodeSummary(...)}
        """
        summarize = self.summarize.summarize
        workers = min(self._settings.llm.concurrency, len(requests))
        if self.offline("summarize") or workers <= 1:
            yield lambda: {key: summarize(request) for key, request in requests.items()}
            return
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="reverie-summarize")
        try:
            futures = {key: pool.submit(summarize, request) for key, request in requests.items()}
            yield lambda: {key: future.result() for key, future in futures.items()}
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def __getattr__(self, step: str) -> Engine:
        if step in STEPS:
            return cast(Engine, _Observed(self.for_step(step), step, self._settings.llm.model))
        raise AttributeError(step)


class _Observed:
    """An engine whose step method is timed, counted and logged (reverie.observe); every
    other attribute is the engine's own."""

    def __init__(self, engine: Engine, step: str, model: str):
        self._engine, self._step = engine, step
        self._model = model if engine.name != "heuristic" else "-"

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:  # a host (or a test) replacing an engine's method replaces the engine's own
            setattr(self._engine, name, value)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._engine, name)
        if name == self._step and callable(value):
            return observed(self._step, self._engine.name, self._model, value)
        return value
