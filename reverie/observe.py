"""What reverie tells the host about itself: Prometheus metrics and the ``reverie.*`` logs.

    REVERIE_LOG=debug reverie ingest talk.jsonl --user ana     # one log line per engine step
    curl http://127.0.0.1:8765/metrics                         # Prometheus text format

Metrics (one registry for the process, no user or content in any label; the processes of
``reverie serve --workers N`` answer with their sum, :func:`share_metrics`):
``reverie_recall_seconds`` (histogram), ``reverie_engine_calls_total{step,engine,outcome}``,
``reverie_engine_seconds{step,engine}`` (histogram), ``reverie_learning_failures_total``
and ``reverie_learning_queue`` (episodes waiting in this process's queue).

Logs: standard :mod:`logging` loggers named ``reverie.*``. At DEBUG each engine step logs
its step, engine, model, request size, latency and outcome; at TRACE (level 5) the
request and the answer in full, redacted.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from reverie.redact import redact

TRACE = 5
logging.addLevelName(TRACE, "TRACE")
log = logging.getLogger("reverie.engine")

REGISTRY = CollectorRegistry(auto_describe=True)
RECALL_SECONDS = Histogram(
    "reverie_recall_seconds", "Time to answer one recall.", registry=REGISTRY,
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
ENGINE_CALLS = Counter(
    "reverie_engine_calls", "Engine steps called, by step, engine and outcome (ok or error).",
    ("step", "engine", "outcome"), registry=REGISTRY,
)
ENGINE_SECONDS = Histogram(
    "reverie_engine_seconds", "Time of one engine step.", ("step", "engine"), registry=REGISTRY,
    buckets=(0.001, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
USAGE_FLUSH_FAILURES = Counter(
    "reverie_usage_flush_failures",
    "Usage counts of delivered items a flush could not write (they wait for the next flush).",
    registry=REGISTRY,
)
LEARNING_FAILURES = Counter(
    "reverie_learning_failures", "Learning batches whose engine call failed (the episodes stay queued).",
    registry=REGISTRY,
)


class _Queue(Protocol):
    def pending(self) -> int: ...


_queues: "weakref.WeakSet[Any]" = weakref.WeakSet()
LEARNING_QUEUE = Gauge(
    "reverie_learning_queue", "Episodes waiting in this process's learning queue.", registry=REGISTRY,
)
LEARNING_QUEUE.set_function(lambda: float(sum(q.pending() for q in list(_queues))))


def watch_queue(queue: _Queue) -> None:
    """Count this learning queue in ``reverie_learning_queue``."""
    _queues.add(queue)


def metrics_text() -> bytes:
    """Every metric in the Prometheus text format: this process's, or with :func:`share_metrics`
    the sum of every process that shares the folder."""
    shared = _shared
    return shared.text() if shared is not None else generate_latest(REGISTRY)


# how often each process of a shared folder writes its metrics (and once more as it answers)
SNAPSHOT_SECONDS = 2.0
_shared: "SharedMetrics | None" = None


class SharedMetrics:
    """The metrics of the processes of one ``reverie serve --workers N`` as one server's.

    Each process writes its own registry to ``<folder>/<pid>.prom`` (atomically, every
    SNAPSHOT_SECONDS and whenever it answers ``/metrics``), and ``/metrics`` answers the sum
    of every file there: counters, histograms and the learning queue added up, so a scrape
    counts every worker's recalls and the learning process's engine calls, whichever worker
    answers it. A summed counter never goes back from one scrape to the next: each file only
    moves forward, and the answering process writes its own first. The file of a process that
    ended stays, so its counts stay counted, until the server stops (the folder is the
    server's own)."""

    def __init__(self, folder: Path, *, every: float = SNAPSHOT_SECONDS):
        self.folder = Path(folder)
        self.path = self.folder / f"{os.getpid()}.prom"
        self._stop = threading.Event()
        self.write()
        self._thread = threading.Thread(target=self._run, args=(every,), name="reverie-metrics", daemon=True)
        self._thread.start()

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.write()
            except OSError as exc:  # the folder went away (the server is stopping)
                log.debug("metrics not written: %s", exc)

    def write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(generate_latest(REGISTRY))
        os.replace(tmp, self.path)

    def text(self) -> bytes:
        self.write()
        texts = []
        for path in sorted(self.folder.glob("*.prom")):
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except OSError:  # replaced as it was read: its next write counts next time
                continue
        return merged_metrics(texts)

    def stop(self) -> None:
        self._stop.set()


def share_metrics(folder: str | Path) -> SharedMetrics:
    """From now on this process writes its metrics to ``folder`` and answers ``/metrics`` with
    the sum of every process that writes there (:class:`SharedMetrics`)."""
    global _shared
    if _shared is not None:
        _shared.stop()
    _shared = SharedMetrics(Path(folder))
    return _shared


def merged_metrics(texts: list[str]) -> bytes:
    """Prometheus texts of several processes as one: each sample (by name and labels) summed,
    but a ``_created`` time, which is the earliest."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            if family.name not in families:
                families[family.name] = Metric(family.name, family.documentation, family.type)
            summed = values.setdefault(family.name, {})
            for sample in family.samples:
                key = (sample.name, tuple(sample.labels.items()))
                if key not in summed:
                    summed[key] = sample.value
                elif sample.name.endswith("_created"):
                    summed[key] = min(summed[key], sample.value)
                else:
                    summed[key] += sample.value
    for name, family in families.items():
        for (sample_name, labels), value in values[name].items():
            family.add_sample(sample_name, dict(labels), value)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(list(families.values())))
    return generate_latest(registry)


class _Fixed(Collector):
    """Metric families already gathered."""

    def __init__(self, families: list[Metric]):
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def configure_logging(level: str | None = None, *, default: str | None = None) -> None:
    """Send ``reverie.*`` logs to stderr at ``level`` (else ``$REVERIE_LOG``, else ``default``;
    debug, info, warning, error or trace), one plain line each and only there (not also
    through a handler another library put on the root logger). Hosts that configure logging
    themselves need not call it."""
    name = (level or os.environ.get("REVERIE_LOG") or default or "").strip().upper()
    if not name:
        return
    value = TRACE if name == "TRACE" else logging.getLevelName(name)
    if not isinstance(value, int):
        raise ValueError(f"REVERIE_LOG must be trace, debug, info, warning or error, not {name.lower()!r}")
    logger = logging.getLogger("reverie")
    logger.setLevel(value)
    if not any(getattr(h, "_reverie", False) for h in logger.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler._reverie = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.propagate = False


def _size(value: Any) -> int:
    dump = getattr(value, "model_dump_json", None)
    return len(dump()) if callable(dump) else len(str(value))


def _text(value: Any) -> str:
    dump = getattr(value, "model_dump", None)
    data = dump(mode="json") if callable(dump) else value
    return redact(json.dumps(data, ensure_ascii=False, default=str))


def observed(step: str, engine: str, model: str, call: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``call`` (one engine step) timed, counted, and logged."""

    def run(request: Any) -> Any:
        started = time.perf_counter()
        try:
            answer = call(request)
        except Exception as exc:
            seconds = time.perf_counter() - started
            ENGINE_CALLS.labels(step, engine, "error").inc()
            ENGINE_SECONDS.labels(step, engine).observe(seconds)
            log.debug("step=%s engine=%s model=%s request_chars=%d seconds=%.3f error=%s",
                      step, engine, model, _size(request), seconds, redact(str(exc))[:300])
            raise
        seconds = time.perf_counter() - started
        ENGINE_CALLS.labels(step, engine, "ok").inc()
        ENGINE_SECONDS.labels(step, engine).observe(seconds)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("step=%s engine=%s model=%s request_chars=%d seconds=%.3f answer_chars=%d",
                      step, engine, model, _size(request), seconds, _size(answer))
        if log.isEnabledFor(TRACE):
            log.log(TRACE, "step=%s request=%s answer=%s", step, _text(request), _text(answer))
        return answer

    return run
