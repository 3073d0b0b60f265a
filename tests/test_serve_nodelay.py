"""``reverie serve --workers N``: every connection a worker accepts has TCP_NODELAY.

uvicorn binds a multi-worker listening socket without a protocol number, and asyncio
sets TCP_NODELAY only on sockets whose ``proto`` is TCP: without the workers' own
protocol class a keep-alive client waited ~40 ms (the delayed ACK) on every response.
These tests use real sockets and uvicorn's real protocol, on a real event loop."""

from __future__ import annotations

import asyncio
import socket

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from reverie.server.workers import NoDelayHttpProtocol


async def _app(scope, receive, send):  # a minimal ASGI app: the protocol needs one to load
    pass


def _nodelay_after_connection_made(protocol_class: type[HttpToolsProtocol]) -> int:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # proto 0, as uvicorn binds it
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    assert accepted.proto == 0  # the cause: asyncio will not set TCP_NODELAY on this one
    config = Config(app=_app, lifespan="off", log_level="warning")
    config.load()

    async def connect() -> int:
        loop = asyncio.get_running_loop()
        protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock=accepted)
        try:
            return accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            transport.close()

    try:
        return asyncio.run(connect())
    finally:
        client.close()
        listener.close()


def test_uvicorns_protocol_leaves_nagle_on_for_a_socket_bound_without_a_protocol():
    assert _nodelay_after_connection_made(HttpToolsProtocol) == 0


def test_the_workers_protocol_turns_nagle_off_on_every_connection():
    assert _nodelay_after_connection_made(NoDelayHttpProtocol) != 0


def test_settle_heap_takes_what_startup_built_out_of_the_collectors_reach():
    import gc

    from reverie.server.workers import settle_heap

    before = gc.get_freeze_count()
    try:
        settle_heap()
        assert gc.get_freeze_count() > max(before, 10_000)  # modules, schemas, lexicons
    finally:
        gc.unfreeze()
