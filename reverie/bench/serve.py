"""Recall throughput of ``reverie serve`` with one client and with several at once.

    report = run_serve_bench(home, user="bench", workers=2, clients=(1, 8), requests=200)

A server is started on a free port of 127.0.0.1 over ``home`` (``--no-auth``, so only
loopback), warmed up, then each client count sends ``requests`` recalls in all, each
client taking the next until none is left; every request is timed. The server is stopped
at the end.

``replicas=N`` starts N separate ``reverie serve`` processes instead, each on a port of
its own over the same store (with ``store``, a PostgreSQL URL: the replicas of a team's
deployment), and the clients take turns among them, as behind a load balancer.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from http.client import HTTPConnection, HTTPException
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlencode, urlsplit

from reverie.bench.stats import percentile

QUERIES = (
    "What did we talk about last week?", "Where did Ana go hiking?", "What does Bob think about cooking?",
    "When is the trip to Lisbon?", "Who lent me the camera?", "How much was the guitar?",
    "What happened at the pottery class?", "Did anyone move to Oslo?", "What are my plans for May?",
    "Tell me about the kayak and the lake",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_serve_bench(
    home: Path, *, user: str, workers: int = 2, clients: Sequence[int] = (1, 8), requests: int = 200,
    budget: int = 500, replicas: int = 1, store: str | None = None,
) -> dict[str, Any]:
    env = {**os.environ, "REVERIE_DEBOUNCE_SECONDS": "3600"}
    urls: list[str] = []
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(replicas):
            port = _free_port()
            command = [sys.executable, "-m", "reverie.cli", "serve", "--no-auth", "--home", str(home),
                       "--port", str(port), "--workers", str(workers)]
            if store:
                command += ["--store", store]
            procs.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            urls.append(f"http://127.0.0.1:{port}")
        for url, proc in zip(urls, procs):
            _wait(url, proc)
        # every worker warms up: a keep-alive connection stays with the worker that accepted it,
        # so the warm-up comes over as many connections at once as the most clients measured
        # (over one, the other workers met their first recalls inside a measured row)
        most = max(clients, default=1) * replicas
        _load(urls, user, most, len(QUERIES) * most, budget)
        rows = [_load(urls, user, n, requests, budget) for n in clients]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    single = rows[0]["recalls_per_s"] if rows else 0.0
    for row in rows:
        row["speedup"] = round(row["recalls_per_s"] / single, 2) if single else 0.0
    return {"workers": workers, "replicas": replicas, "store": "postgresql" if store else "sqlite",
            "requests": requests, "budget": budget, "rows": rows}


def _connect(url: str, timeout: float = 60) -> HTTPConnection:
    """A keep-alive connection to ``url`` (http://host:port). The standard library's, not
    httpx: the clients share the machine's cores with the servers, and httpx took 1.9-2.7 ms
    of CPU a recall where this takes ~0.6 (each row's client_cpu_ms says what they took)."""
    parts = urlsplit(url)
    return HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)


def _recall_path(user: str) -> str:
    return f"/api/memory/recall?{urlencode({'user': user})}"


def _recall(http: HTTPConnection, path: str, query: str, budget: int) -> tuple[int, str | None]:
    """One recall over ``http``: the response's status, and the worker that answered (the
    slot ``reverie serve --workers N`` names in ``X-Reverie-Worker``; None from one process)."""
    http.request("POST", path, json.dumps({"query": query, "budget": budget}), {"Content-Type": "application/json"})
    response = http.getresponse()
    response.read()
    return response.status, response.getheader("x-reverie-worker")


def against_first(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set every row of ``reports`` (run_serve_bench's, in the order run) against the first
    row, the fewest replicas, workers and clients (``x_first``): with workers 1 and 2 and
    clients 1 and 8 the last row's is issue 11's ratio, with replicas 1 and 2 issue 14's."""
    first = reports[0]["rows"][0]["recalls_per_s"] if reports and reports[0]["rows"] else 0.0
    for report in reports:
        for row in report["rows"]:
            row["x_first"] = round(row["recalls_per_s"] / first, 2) if first else 0.0
    return reports


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"reverie serve exited with {proc.returncode}")
        http = _connect(url, timeout=1)
        try:
            http.request("GET", "/healthz")
            if http.getresponse().status == 200:
                return
        except (OSError, HTTPException):
            pass  # not listening yet
        finally:
            http.close()
        time.sleep(0.2)
    raise RuntimeError("reverie serve did not answer within 60 s")


def _load(urls: Sequence[str], user: str, clients: int, requests: int, budget: int) -> dict[str, Any]:
    """``requests`` recalls from ``clients`` keep-alive clients at once, each sending its next
    as soon as its last is answered, until all ``requests`` are taken: every client is busy
    until the end. (Each sending a fixed share measured fewer clients at the end: a worker
    that had accepted 2 of 8 connections finished its share and idled while the other's 6
    went on, 1.24x where a 4 / 4 split of the same server gave 1.85x.)"""
    latencies: list[float] = []
    errors = 0
    left = requests
    answered: dict[int, str] = {}  # client -> the worker that answered its last request
    lock = threading.Lock()
    path = _recall_path(user)

    def take() -> bool:
        nonlocal left
        with lock:
            left -= 1
            return left >= 0

    def client(index: int) -> None:
        nonlocal errors
        # client i talks to replica i mod N: the clients are spread evenly over the replicas
        http = _connect(urls[index % len(urls)])
        try:
            sent = 0
            while take():
                query = QUERIES[(index + sent) % len(QUERIES)]
                sent += 1
                started = time.perf_counter()
                try:
                    status, worker = _recall(http, path, query, budget)
                    failed = status != 200
                    if worker is not None:
                        answered[index] = worker
                except (OSError, HTTPException):  # counted; the next request opens a new connection
                    http.close()
                    failed = True
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(elapsed)
                    errors += failed
        finally:
            http.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started, cpu = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "clients": clients, "recalls": len(latencies), "errors": errors,
        "recalls_per_s": round(len(latencies) / seconds, 1) if seconds else 0.0,
        "p50_ms": round(percentile(latencies, 50), 1), "p95_ms": round(percentile(latencies, 95), 1),
        # the clients run on the machine's cores too: what each recall cost them
        "client_cpu_ms": round(1000 * cpu / len(latencies), 2) if latencies else 0.0,
        # how the clients' connections ended up spread over the workers (most first): each
        # worker answers one recall at a time, so an uneven spread makes some wait longer
        "split": sorted(Counter(answered.values()).values(), reverse=True),
    }
