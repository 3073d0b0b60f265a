"""``reverie serve --workers N``: several server processes over one home.

Each worker serves REST and MCP with its own :class:`~reverie.memory.Memory` that does
not learn (``learn="elsewhere"``): the turns it completes wait in the store, and the
one ``reverie serve`` process that started the workers learns them (``learn="poll"``)
and runs the nightly dream, so both happen once however many workers there are. SQLite
in WAL mode lets every worker read while one writes.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import socket
import threading
import time
from typing import Any

from fastapi import FastAPI

from reverie.memory import Memory
from reverie.observe import share_metrics
from reverie.server.balance import CONNECTION_EXTENSION, Balance, BalanceConnections
from reverie.server.limits import GuardedHttpProtocol
from reverie.server.rest import create_app
from reverie.settings import Settings
from reverie.text import load_dictionaries

CONFIG_ENV = "REVERIE_SERVE_WORKER"
# a worker looks this often whether the `reverie serve` process that started it is still there,
# and once it is gone, exits at the latest this long after it began to shut down
PARENT_POLL_SECONDS = 0.5
PARENT_GONE_GRACE_SECONDS = 20.0
log = logging.getLogger("reverie.serve")

# this worker's share of the connections (reverie.server.balance), set by worker_app
_balance: Balance | None = None


class NoDelayHttpProtocol(GuardedHttpProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools' C parser, as uvicorn picks it by itself for
    one process), with the bounds of :class:`reverie.server.limits.GuardedHttpProtocol` (the
    size and time of a request's head) and TCP_NODELAY on every connection. ``reverie
    serve`` uses it with one process and with several.

    With several workers uvicorn binds the listening socket itself, without a protocol
    number, and asyncio then leaves Nagle's algorithm on for the connections it accepts
    (it sets TCP_NODELAY only on sockets whose ``proto`` is TCP). A keep-alive client then
    waits for the delayed ACK, about 40 ms, on every response written in two parts: a
    64 ms recall where one worker answered in 18.

    It also counts the worker's connections for the balance among workers
    (:mod:`reverie.server.balance`)."""

    _peer: tuple[Any, ...] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # not a TCP socket after all: nothing to tune
                pass
        peer = transport.get_extra_info("peername")
        if _balance is not None and isinstance(peer, tuple):
            self._peer = tuple(peer[:2])  # as the request's scope names its client
            # (after a WebSocket upgrade this protocol no longer sees the close: the transport says)
            _balance.opened(self._peer, lambda: not transport.is_closing())
        super().connection_made(transport)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._peer is not None:  # which connection a request came on, whatever proxy headers say
            self.scope["extensions"] = {**(self.scope.get("extensions") or {}),
                                        CONNECTION_EXTENSION: {"peer": self._peer}}

    def connection_lost(self, exc: Exception | None) -> None:
        if _balance is not None and self._peer is not None:
            _balance.closed(self._peer)
        super().connection_lost(exc)


def settle_heap() -> None:
    """Take what start-up built (modules, schemas, lexicons: hundreds of thousands of objects)
    out of the cyclic garbage collector's reach, as a long-running server should: a full
    collection walking them cost about one recall in 18 some 30 ms (recall p95 at 100k
    episodes 53 -> 43 ms, p99 72-94 -> 51 ms). Reference counting still frees what they drop.
    The text dictionaries are loaded first, to be among them (a first Chinese message would
    load them, into the collector's reach, in a request)."""
    load_dictionaries()
    gc.collect()
    gc.freeze()


def worker_config(
    home: str, *, auth: bool, default_user: str, overrides: dict[str, Any], balance: str | None = None,
    metrics: str | None = None, parent: int | None = None,
) -> str:
    """What a worker needs to build its app, as the JSON its environment carries
    (``balance``: the workers' shared file, :func:`reverie.server.balance.create_file`;
    ``metrics``: the folder where every process writes its metrics, :func:`reverie.observe.share_metrics`;
    ``parent``: the pid of the ``reverie serve`` process, whose end the worker follows, :func:`watch_parent`)."""
    return json.dumps({"home": home, "auth": auth, "user": default_user, "overrides": overrides,
                       "balance": balance, "metrics": metrics, "parent": parent})


def watch_parent(parent: int | None, *, every: float = PARENT_POLL_SECONDS,
                 grace: float = PARENT_GONE_GRACE_SECONDS) -> threading.Thread | None:
    """Stop this worker when ``parent`` (the ``reverie serve`` process that started it) is gone.

    A parent killed outright (SIGKILL, the OOM killer) cannot stop its workers: they were
    handed to init and went on serving the port while nothing learned their turns, nor
    dreamed, and /healthz said ok. A thread looks every ``every`` seconds whether this
    process's parent is still ``parent``; when it is not, the worker shuts down as on SIGTERM
    (uvicorn finishes the requests it is answering), and exits regardless after ``grace``."""
    if not parent:
        return None

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        log.warning("the reverie serve process (pid %d) that started this worker is gone: this worker stops", parent)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace)
        os._exit(1)

    thread = threading.Thread(target=watch, name="reverie-parent-watch", daemon=True)
    thread.start()
    return thread


def worker_app() -> FastAPI:
    """The app of one worker (a uvicorn factory, read from the environment)."""
    config = json.loads(os.environ[CONFIG_ENV])
    watch_parent(config.get("parent"))
    # usage counts are written every few seconds, not on every recall (Settings.for_server)
    settings = Settings.load(config["home"], **config["overrides"]).for_server()
    memory = Memory(settings=settings, background=False, learn="elsewhere")
    app = create_app(memory, auth=config["auth"], default_user=config["user"])
    if config.get("metrics"):
        share_metrics(config["metrics"])
    if config.get("balance"):
        global _balance
        try:
            _balance = Balance(config["balance"])
        except (OSError, ValueError, RuntimeError) as exc:  # serving matters more than balance
            log.warning("this worker serves without keeping connections even with the others: %s", exc)
        else:
            app.add_middleware(BalanceConnections, balance=_balance)
    settle_heap()
    return app
