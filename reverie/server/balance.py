"""Connections shared evenly among the workers of ``reverie serve --workers N``.

Every worker accepts from one listening socket, and a keep-alive connection stays with the
worker that accepted it: which worker that is, the kernel decides, and eight clients were
seen to split 4 / 4, 5 / 3 or 6 / 2 between two workers from one run to the next. Each
worker answers one recall at a time, so the requests of a worker holding six connections
waited for five others while the other worker, holding two, idled half the time: recall p95
went from 84 to 148 ms over runs of the same server and store.

So the workers keep count. Each holds a slot of a small file that every worker maps (its
pid and how many connections it keeps), claimed by a lock on the slot that the kernel lets
go when the process ends. A worker that keeps more connections than its fair share (the
live workers' open connections over their number, rounded up) answers its next response with
``Connection: close``: the response is whole, and the client's next request opens a new
connection, which a worker with fewer connections is the likelier to accept (it is the
one waiting). Nothing is lost: the client only connects again. With as many connections as
workers or fewer, or connections already even, nothing is closed.
"""

from __future__ import annotations

import fcntl
import math
import mmap
import os
import struct
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SLOT = struct.Struct("<qq")  # pid, connections held (open, or closed by it a moment ago)
WORKER_HEADER = b"x-reverie-worker"  # the slot of the worker that answered, for load checks
# the ASGI scope's extension naming the connection a request came on (the workers' protocol
# sets it): behind a proxy on this machine, uvicorn puts the X-Forwarded-For address in the
# scope's "client", which names no connection
CONNECTION_EXTENSION = "reverie.connection"
# a connection this worker closed still counts as held for this long, or until this worker
# accepts a new one: its client is about to connect again (a client in the middle of its
# work does at once), and until it does this worker would seem to hold one fewer than it
# will, and close another. Short, since a client that lands on another worker is counted
# there too meanwhile.
IN_TRANSIT_SECONDS = 0.1


def create_file(path: Path, slots: int) -> Path:
    """The shared file of ``slots`` empty slots, made by the process that starts the workers."""
    if slots < 1:
        raise ValueError("a balance needs at least one slot")
    path.write_bytes(bytes(SLOT.size * slots))
    return path


def fair_share(counts: Iterable[int]) -> int:
    """The most connections a worker should keep, given how many each live worker has open
    (a connection being closed counts: its client will connect again)."""
    counts = list(counts)
    return math.ceil(sum(counts) / len(counts)) if counts else 0


class Balance:
    """One worker's view of the shared file: its own slot, written as connections come and
    go, and the other live workers' counts, read when a response could close a connection.
    Used from the worker's event loop; a lock keeps it right from any thread."""

    def __init__(self, path: str | Path):
        self._fd = os.open(path, os.O_RDWR)
        size = os.fstat(self._fd).st_size
        self.slots = size // SLOT.size
        if self.slots < 1:
            os.close(self._fd)
            raise ValueError(f"{path} holds no balance slot")
        self._map = mmap.mmap(self._fd, self.slots * SLOT.size)
        self.slot = self._claim()
        self.pid = os.getpid()
        # each open connection, with a test of whether it still is (a connection upgraded to
        # a WebSocket leaves the HTTP protocol that counted it, whose close is then not seen)
        self._open: dict[Any, Callable[[], bool]] = {}
        self._closing: set[Any] = set()
        self._transit: deque[float] = deque()  # when each connection it closed stops counting
        self._lock = threading.Lock()
        self._publish()

    def _claim(self) -> int:
        # a POSIX lock on the slot's first byte, held while this process lives (the fd is
        # never closed: closing any descriptor of the file would let every lock go)
        for slot in range(self.slots):
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot * SLOT.size)
            except OSError:
                continue
            return slot
        raise RuntimeError(f"every one of the {self.slots} balance slots is held by a live worker")

    @property
    def kept(self) -> int:
        """This worker's connections, less those it is closing."""
        return len(self._open) - len(self._closing)

    def held(self) -> int:
        """This worker's open connections and those it closed a moment ago (their clients
        are connecting again): its part of the total the fair share divides."""
        now = time.monotonic()
        while self._transit and self._transit[0] <= now:
            self._transit.popleft()
        return len(self._open) + len(self._transit)

    def _publish(self) -> None:
        self._prune()
        SLOT.pack_into(self._map, self.slot * SLOT.size, self.pid, self.held())

    def opened(self, peer: Any, still_open: Callable[[], bool] = lambda: True) -> None:
        """A connection from ``peer`` was accepted; ``still_open()`` says whether it is open
        yet, for a connection whose close may reach another protocol than the one counting."""
        with self._lock:
            self._open[peer] = still_open
            if self._transit:  # likely a client this worker closed, back already
                self._transit.popleft()
            self._publish()

    def closed(self, peer: Any) -> None:
        with self._lock:
            self._forget(peer)
            self._publish()

    def _forget(self, peer: Any) -> None:
        if peer in self._closing:
            self._closing.discard(peer)
            self._transit.append(time.monotonic() + IN_TRANSIT_SECONDS)
        self._open.pop(peer, None)

    def _prune(self) -> None:
        for peer in [p for p, still_open in self._open.items() if not still_open()]:
            self._forget(peer)

    def counts(self) -> list[int]:
        """How many connections every live worker holds, this one's first."""
        with self._lock:
            self._prune()
            return self._counts()

    def _counts(self) -> list[int]:
        out = [self.held()]
        for slot in range(self.slots):
            if slot == self.slot:
                continue
            pid, held = SLOT.unpack_from(self._map, slot * SLOT.size)
            if pid > 0 and _alive(pid):
                out.append(max(0, held))
        return out

    def shed(self, peer: Any) -> bool:
        """Whether the response now due on ``peer`` should close its connection: this worker
        keeps more than its fair share. The connection then no longer counts as kept."""
        with self._lock:
            self._prune()
            if peer not in self._open or peer in self._closing:
                return False
            if self.kept <= fair_share(self._counts()):
                return False
            self._closing.add(peer)
            return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's: not one of ours, but alive
        return True
    return True


class BalanceConnections:
    """ASGI middleware: names the answering worker's slot on every HTTP response and closes
    the connection after it when the worker keeps more than its fair share."""

    def __init__(self, app: ASGIApp, balance: Balance):
        self.app = app
        self.balance = balance

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        peer = ((scope.get("extensions") or {}).get(CONNECTION_EXTENSION) or {}).get("peer")
        if peer is None and scope.get("client"):
            peer = tuple(scope["client"])

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (WORKER_HEADER, str(self.balance.slot).encode())]
                if peer is not None and self.balance.shed(peer):
                    headers.append((b"connection", b"close"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)
