"""What reverie tells the host about itself: Prometheus metrics and engine-step logs."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx

from reverie import Memory
from reverie.server import create_app
from tests.live_server import live_server

ROOT = Path(__file__).resolve().parents[1]


def metric(text: str, name: str) -> float:
    """The value of one sample line (``name`` with its labels, as Prometheus prints them)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_count_recalls_and_engine_steps_in_prometheus_text(home):
    with Memory(home, background=False) as memory:
        memory.remember("Ana runs a bakery in Porto", user="ana")
        with live_server(create_app(memory, auth=False, default_user="ana", mcp=False)) as url:
            before = httpx.get(f"{url}/metrics").text
            for _ in range(3):
                httpx.post(f"{url}/api/memory/recall", json={"query": "where is the bakery?"}).raise_for_status()
            r = httpx.get(f"{url}/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    after = r.text
    assert metric(after, "reverie_recall_seconds_count") - metric(before, "reverie_recall_seconds_count") >= 3
    perceive = 'reverie_engine_calls_total{engine="heuristic",outcome="ok",step="perceive"}'
    assert metric(after, perceive) - metric(before, perceive) >= 3
    assert "reverie_learning_queue " in after and "reverie_learning_failures_total" in after
    assert "bakery" not in after and "ana" not in after  # no content, no user


def test_engine_steps_are_logged_at_debug_and_in_full_redacted_at_trace(tmp_path):
    home = tmp_path / "home"
    with Memory(home, background=False) as memory:
        memory.remember("Ana runs a bakery in Porto", user="ana")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REVERIE_LOG": "trace"}
    run = subprocess.run(
        [sys.executable, "-m", "reverie.cli", "recall", "mail me at ana@example.com about the bakery",
         "--user", "ana", "--home", str(home)],
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "reverie.engine: step=perceive engine=heuristic" in run.stderr and "seconds=" in run.stderr
    assert "TRACE reverie.engine: step=perceive request=" in run.stderr
    assert "ana@example.com" not in run.stderr and "[email]" in run.stderr
    quiet = subprocess.run(
        [sys.executable, "-m", "reverie.cli", "recall", "bakery", "--user", "ana", "--home", str(home)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
    )
    assert "reverie.engine" not in quiet.stderr
    logging.getLogger("reverie").handlers.clear()


def test_a_record_is_logged_once_on_one_line_beside_the_mcp_sdks_root_handler():
    # the MCP SDK configures the root logger (a wrapping handler); reverie's own handler must
    # not let its records reach that one too (each was printed twice, one of them wrapped)
    script = (
        "import logging; from reverie import Memory; import tempfile\n"
        "from reverie.server.mcp_server import create_mcp\n"
        "from reverie.observe import configure_logging\n"
        "create_mcp(Memory(tempfile.mkdtemp(), background=False), user='ana')\n"
        "configure_logging('warning')\n"
        "logging.getLogger('reverie.learn').warning('engine failed for %d episodes, ' + 'x' * 200, 3)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if "engine failed" in line or "xxxx" in line]
    assert len(lines) == 1 and "WARNING reverie.learn: engine failed for 3 episodes" in lines[0]


def _process(recalls: list[float], calls: int) -> str:
    """The metrics text of a process that made these recalls and engine calls (a registry of its own)."""
    from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

    registry = CollectorRegistry()
    seconds = Histogram("reverie_recall_seconds", "Time to answer one recall.", registry=registry,
                        buckets=(0.01, 0.1, 1.0))
    counted = Counter("reverie_engine_calls", "Engine steps.", ("step",), registry=registry)
    for value in recalls:
        seconds.observe(value)
    if calls:
        counted.labels("summarize").inc(calls)
    return generate_latest(registry).decode()


def test_the_metrics_of_several_processes_are_summed_sample_by_sample():
    from reverie.observe import merged_metrics

    texts = [_process([0.005, 0.05], 0), _process([0.5], 3), _process([], 0)]
    merged = merged_metrics(texts).decode()
    assert metric(merged, "reverie_recall_seconds_count") == 3
    assert metric(merged, 'reverie_recall_seconds_bucket{le="0.01"}') == 1
    assert metric(merged, 'reverie_recall_seconds_bucket{le="0.1"}') == 2
    assert metric(merged, 'reverie_recall_seconds_bucket{le="+Inf"}') == 3
    assert metric(merged, "reverie_recall_seconds_sum") == 0.555
    assert metric(merged, 'reverie_engine_calls_total{step="summarize"}') == 3  # the one process that called it
    created = [metric(t, "reverie_recall_seconds_created") for t in texts]
    assert metric(merged, "reverie_recall_seconds_created") == min(created)  # the earliest, not a sum
    assert merged.count("# TYPE reverie_recall_seconds histogram") == 1
