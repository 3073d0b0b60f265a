"""``reverie serve --workers N`` keeps keep-alive connections even among its workers.

A keep-alive connection stays with the worker that accepted it, and the kernel decides which
that is: eight clients split 6 / 2 between two workers as often as 4 / 4. A worker over its
fair share closes a connection after a whole response, and the client's next request
connects again. These tests use real processes, a real shared file and a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from http.client import HTTPConnection
from pathlib import Path
from typing import Iterator

import pytest

from reverie.server.balance import SLOT, Balance, create_file, fair_share
from tests.test_rest import ROOT, served

# reverie.server.balance read from its file alone: a worker process's share of the file is all
# these processes stand for, and importing the whole of reverie took most of their start
_BALANCE = str(ROOT / "reverie" / "server" / "balance.py")
_IMPORT = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("reverie.server.balance", sys.argv[1])
balance_module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(balance_module)
Balance = balance_module.Balance
"""
# a second worker: claims a slot of the file, reports it and its count, then waits for a line
_WORKER = _IMPORT + r"""
balance = Balance(sys.argv[2])
for peer in range(int(sys.argv[3])):
    balance.opened(("127.0.0.1", peer))
print(balance.slot, flush=True)
sys.stdin.readline()
"""


def _worker(path: Path, connections: int) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-c", _WORKER, _BALANCE, str(path), str(connections)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()


def test_fair_share_is_the_mean_rounded_up():
    assert fair_share([6, 2]) == 4
    assert fair_share([5, 4]) == 5
    assert fair_share([1, 0, 0]) == 1
    assert fair_share([]) == 0


def test_each_worker_claims_its_own_slot_and_a_dead_workers_slot_is_free_again(tmp_path):
    path = create_file(tmp_path / "balance", 2)
    other, slot = _worker(path, 3)
    try:
        mine = Balance(path)
        assert {mine.slot, slot} == {0, 1}
        assert mine.counts() == [0, 3]  # this worker's first, then the live other's
    finally:
        _stop(other)
    assert mine.counts() == [0]  # a dead worker's count no longer counts
    again, slot_again = _worker(path, 0)  # its replacement takes the slot it left
    try:
        assert slot_again == slot
        # a third worker finds both slots held by live workers, and says so
        third = subprocess.run([sys.executable, "-c", _IMPORT + "Balance(sys.argv[2])", _BALANCE, str(path)],
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert third.returncode != 0 and "every one of the 2 balance slots is held by a live worker" in third.stderr
    finally:
        _stop(again)


@contextmanager
def _two_workers(tmp_path: Path, mine: int, theirs: int) -> Iterator[tuple[Balance, list[tuple[str, int]], Path]]:
    """This process as one worker with ``mine`` connections open, beside another process
    holding ``theirs``: (this worker's balance, its connections' peers, the shared file)."""
    path = create_file(tmp_path / "balance", 2)
    other, _ = _worker(path, theirs)
    try:
        balance = Balance(path)
        peers = [("127.0.0.1", 5000 + i) for i in range(mine)]
        for peer in peers:
            balance.opened(peer)
        yield balance, peers, path
    finally:
        _stop(other)


def test_a_worker_over_its_fair_share_closes_connections_until_it_is_within_it(tmp_path):
    with _two_workers(tmp_path, 6, 2) as (mine, peers, path):
        # 6 against 2: fair is 4, so two of this worker's connections are closed, then none
        shed = [peer for peer in peers if mine.shed(peer)]
        assert len(shed) == 2 and mine.kept == 4
        assert not mine.shed(shed[0])  # a connection already closing is not counted twice
        for peer in shed:
            mine.closed(peer)
        # their clients are connecting again, to the other worker if it is the one waiting:
        # for a moment they still count here, and nothing more is closed meanwhile
        assert SLOT.unpack_from(path.read_bytes(), mine.slot * SLOT.size) == (os.getpid(), 6)  # the others read
        assert mine.kept == 4 and not any(mine.shed(p) for p in peers if p not in shed)


def test_a_worker_within_its_share_keeps_every_connection(tmp_path):
    with _two_workers(tmp_path, 4, 4) as (mine, peers, _):
        assert not any(mine.shed(peer) for peer in peers)
    alone = ("127.0.0.1", 7000)
    mine.opened(alone)
    assert not mine.shed(alone)  # alone, every connection is its fair share


def _both_workers_up(port: int) -> None:
    """Until both workers answer (the server answers as soon as one has started): a new
    connection a request, until both slots have been seen."""
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    while seen != {"0", "1"}:
        assert time.monotonic() < deadline, f"only worker(s) {seen} answered within 60 s"
        http = HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            http.request("GET", "/healthz")
            response = http.getresponse()
            response.read()
            seen.add(response.getheader("x-reverie-worker") or "")
        finally:
            http.close()
        time.sleep(0.05)


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory) -> Iterator[int]:
    """`reverie serve --workers 2` with both workers up: its port. The runs below share it (each
    closes every connection it opened before the next); it must exit cleanly at the end."""
    with served(tmp_path_factory.mktemp("balance") / "home", "--workers", "2", debounce="3600") as url:
        port = int(url.rsplit(":", 1)[1])
        _both_workers_up(port)
        yield port


@pytest.mark.parametrize("proxy", [False, True], ids=["direct", "behind-a-local-proxy"])
def test_two_workers_end_up_with_four_of_eight_keep_alive_connections_each(two_workers, proxy):
    # behind a proxy on this machine (X-Forwarded-For from 127.0.0.1), uvicorn gives the
    # request the forwarded client's address: the connection is still the one counted
    clients, rounds = 8, 20
    headers = {"Content-Type": "application/json", **({"X-Forwarded-For": "203.0.113.7"} if proxy else {})}
    slots: dict[int, list[str]] = {i: [] for i in range(clients)}
    statuses: Counter[int] = Counter()
    start = threading.Barrier(clients)
    port = two_workers

    def client(index: int) -> None:
        http = HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            start.wait()
            for step in range(rounds):
                # every client sends its next request once all have had the last answered,
                # so all eight connections stay open until the end
                http.request("POST", "/api/memory/recall", json.dumps({"query": f"plans {step}"}), headers)
                response = http.getresponse()
                response.read()
                statuses[response.status] += 1
                slots[index].append(response.getheader("x-reverie-worker") or "")
                step_done.wait()  # then a moment, as clients that think between requests
        finally:
            http.close()

    step_done = threading.Barrier(clients, action=lambda: time.sleep(0.02))
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == Counter({200: clients * rounds})  # a closed connection lost no request
    last = Counter(slots[i][-1] for i in range(clients))
    assert sorted(last.values()) == [4, 4], [Counter(s[k] for s in slots.values()) for k in range(rounds)]


def test_a_worker_that_finds_no_free_slot_still_serves(tmp_path, monkeypatch, caplog):
    import gc

    from fastapi.testclient import TestClient

    from reverie.server import workers

    path = create_file(tmp_path / "balance", 1)
    other, _ = _worker(path, 0)  # holds the only slot
    monkeypatch.setattr(workers, "_balance", None)
    monkeypatch.setenv(workers.CONFIG_ENV, workers.worker_config(
        str(tmp_path / "home"), auth=False, default_user="ana", overrides={}, balance=str(path)))
    try:
        app = workers.worker_app()
        with TestClient(app, base_url="http://127.0.0.1") as client:
            response = client.get("/healthz")
        assert response.status_code == 200 and "x-reverie-worker" not in response.headers
        assert workers._balance is None
        assert "serves without keeping connections even" in caplog.text
    finally:
        gc.unfreeze()
        _stop(other)


def test_a_connection_upgraded_to_a_websocket_stops_counting_when_it_closes(tmp_path, monkeypatch):
    # after the upgrade the close reaches the WebSocket protocol, not the HTTP one that
    # counted the connection: the count must not keep it forever
    import asyncio
    import socket

    from uvicorn.config import Config
    from uvicorn.server import ServerState

    from reverie.server import workers

    balance = Balance(create_file(tmp_path / "balance", 1))
    monkeypatch.setattr(workers, "_balance", balance)

    async def app(scope, receive, send):  # refuses every WebSocket, as reverie has none
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.close", "code": 1000})

    config = Config(app=app, lifespan="off", log_level="warning")  # ws="auto", as reverie serve runs
    config.load()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()

    async def upgrade() -> tuple[int, int, bytes]:
        loop = asyncio.get_running_loop()
        protocol = workers.NoDelayHttpProtocol(config=config, server_state=ServerState(), app_state={})
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock=accepted)
        before = balance.kept
        client.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        for _ in range(250):
            await asyncio.sleep(0.02)
            if transport.is_closing():
                break
        await asyncio.sleep(0.05)
        return before, balance.counts()[0], client.recv(4096)

    try:
        before, after, answer = asyncio.run(upgrade())
    finally:
        client.close()
        listener.close()
    assert answer.startswith(b"HTTP/1.1 403")  # the upgrade was handled, and refused
    assert (before, after) == (1, 0)
