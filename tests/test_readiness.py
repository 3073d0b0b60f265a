"""/readyz: whether the store answers, for a balancer to route around a replica whose
database is out of reach (/healthz says only that the process lives)."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import httpx

from reverie import Memory
from reverie.server import create_app
from tests.live_server import live_server


class Proxy:
    """A TCP relay to PostgreSQL that can be cut, as a network or a server going away is."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        self.cut = threading.Event()
        self.frozen = threading.Event()  # bytes are taken and held, as by a host that froze
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.cut.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                if not self.frozen.is_set():
                    b.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self.cut.set()
        self.listener.close()
        for s in self.open:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


@contextlib.contextmanager
def served_through_a_proxy(home, pg_url: str) -> Iterator[tuple[str, Proxy]]:
    """``reverie serve``'s app over a PostgreSQL store reached through a :class:`Proxy`, ready."""
    parts = urlsplit(pg_url)
    proxy = Proxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    via = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
    try:
        with Memory(home, background=False, store=via) as memory, \
                live_server(create_app(memory, auth=False, mcp=False)) as url:
            assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200
            yield url, proxy
            proxy.frozen.clear()
            proxy.close()  # (a statement left waiting ends with its connection)
    finally:
        proxy.close()


def test_readyz_says_ok_while_the_store_answers(home):
    with Memory(home, background=False) as memory, live_server(create_app(memory, auth=False, mcp=False)) as url:
        answer = httpx.get(f"{url}/readyz", timeout=10)
    assert answer.status_code == 200 and answer.json()["status"] == "ok"


def test_readyz_is_503_when_postgres_is_out_of_reach_and_healthz_stays_200(home, pg_url):
    with served_through_a_proxy(home, pg_url) as (url, proxy):
        proxy.close()
        down = httpx.get(f"{url}/readyz", timeout=30)
        assert down.status_code == 503, down.text
        assert "does not answer" in down.json()["detail"]
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200


def test_readyz_is_503_within_its_time_when_postgres_stops_answering(home, pg_url):
    """A server gone silent (a frozen host: connections open, no answer) left /readyz waiting
    for ever on a pooled connection; it answers 503 in its 2 s."""
    import time

    with served_through_a_proxy(home, pg_url) as (url, proxy):
        proxy.frozen.set()
        began = time.monotonic()
        down = httpx.get(f"{url}/readyz", timeout=30)
        assert down.status_code == 503 and "no answer within 2 s" in down.json()["detail"], down.text
        assert time.monotonic() - began < 10
