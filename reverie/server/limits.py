"""What one HTTP connection may take from ``reverie serve``: the size of a request's head
and the time it may take to send it, whatever the app behind it does.

uvicorn's HTTP/1.1 protocol over httptools (the C parser it picks by itself) bounds neither:
a 20 MB header was read whole (a 200 MB one grew the process to 568 MB), and a client that
sends half a request line, or half its headers, held its connection (and a slot of the
server's) for as long as it liked. :class:`GuardedHttpProtocol` keeps httptools' speed and
adds the bounds that h11 would partly have given (h11 bounds the size, not the time):

- a request's head (request line and headers) larger than :data:`MAX_HEADER_BYTES` is
  answered 431 and the connection closed, without reading more of it;
- a head that has not arrived whole :data:`HEADER_SECONDS` after it began (or after the
  connection opened, for a connection that sends nothing) is answered 408 (a silent
  connection is just closed);
- a request answered before its body arrived whole (a 413, a 404, an endpoint that
  takes no body) is closed if the rest of the body has not come within
  :data:`HEADER_SECONDS` after the answer, instead of being read for as long as it trickles.

How long a body that the app reads may take is bounded by the app itself
(:class:`reverie.server.rest.BodyDeadline`, a 408 after ``BODY_SECONDS``), so that it
holds whichever server runs the app.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

# a request line and headers larger than this are a 431 (browsers send a few KB; nginx
# allows 4 buffers of 8 KB, h11 16 KB)
MAX_HEADER_BYTES = 64 * 1024
# from the first byte of a request (or the opening of a connection) to the end of its headers;
# and how long the rest of a body may take to arrive after the request was answered
HEADER_SECONDS = 10.0


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bounded request head (size and time), and a
    bounded wait for the rest of a body that was answered before it arrived."""

    max_header_bytes = MAX_HEADER_BYTES
    header_seconds = HEADER_SECONDS

    _head = True  # the bytes coming are a request's head (request line and headers)
    _head_bytes = 0  # bytes received since that head began (counted a chunk at a time)
    _head_begun = False  # a byte of that head arrived
    _too_large = False  # a whole head past the limit was parsed: the request is refused, unanswered by the app
    _body_done = True  # the request's body (if any) arrived to its end
    _head_timer: asyncio.TimerHandle | None = None
    _rest_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head()  # a connection that never sends a byte is closed too

    def data_received(self, data: bytes) -> None:
        if self._head:
            self._head_bytes += len(data)
        if self._too_large:
            return  # refused: nothing more on this connection is read
        super().data_received(data)
        # read a chunk at a time (at most 256 KB): the head never grows past the limit and a chunk;
        # a head that ended in this chunk was measured whole by on_headers_complete
        too_large = self._too_large or (self._head and self._head_bytes > self.max_header_bytes)
        if too_large and not self.transport.is_closing():
            self._refuse(431, f"the request line and headers are larger than {self.max_header_bytes} bytes",
                         "headers")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_begun, self._body_done = True, False
        if self._head_timer is None:
            self._arm_head()

    def on_headers_complete(self) -> None:
        self._head, self._head_bytes, self._head_begun = False, 0, False
        self._disarm_head()
        if self._too_large or self._head_size() > self.max_header_bytes:
            # the count a chunk at a time misses a head that ends in the chunk that crosses the
            # limit (the parser ends the head, and that count, before the count is checked): it is
            # refused here, before the app sees it, and answered once the parser is done with the
            # chunk (a request pipelined behind it in that chunk is not served either)
            self._too_large = True
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._too_large:  # the body of a refused request goes nowhere
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._too_large:
            return
        super().on_message_complete()
        self._head, self._head_bytes, self._body_done = True, 0, True
        if self._rest_timer is not None:
            self._rest_timer.cancel()
            self._rest_timer = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self._body_done and self._rest_timer is None and not self.transport.is_closing():
            # answered before the body came whole: its rest is read (and dropped) for a while, so
            # that a client still sending it reads the answer, then the connection is closed
            self._rest_timer = self.loop.call_later(self.header_seconds, self._close)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head()
        if self._rest_timer is not None:
            self._rest_timer.cancel()
            self._rest_timer = None
        super().connection_lost(exc)

    def _head_size(self) -> int:
        """The size of the head just parsed, as sent: request line, each header line and the
        blank line after them (less any spaces after a value, which the parser drops)."""
        size = len(self.parser.get_method()) + 1 + len(self.url) + len(" HTTP/1.1\r\n") + 2
        return size + sum(len(name) + 2 + len(value) + 2 for name, value in self.headers)

    # ------------------------------------------------------------ timers
    def _arm_head(self) -> None:
        self._disarm_head()
        self._head_timer = self.loop.call_later(self.header_seconds, self._head_late)

    def _disarm_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # a request is being answered (the next one's head waits behind it, reading paused)
            self._arm_head()
            return
        if self._head_begun or self._head_bytes:
            self._refuse(408, f"the request line and headers did not arrive within {self.header_seconds:g} seconds",
                         "headers")
        else:
            self.transport.close()  # opened and never used

    def _close(self) -> None:
        self._rest_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _refuse(self, status: int, detail: str, field: str) -> None:
        """Answer ``status`` with reverie's error shape and close the connection."""
        if self.cycle is not None and not self.cycle.response_complete:
            self.transport.close()  # an answer is being written on this connection: no other goes in it
            return
        body = json.dumps({"detail": detail, "field": field}, separators=(",", ":")).encode()
        head: list[Any] = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head.extend([b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(body),
                     b"connection: close\r\n", b"\r\n", body])
        self.transport.write(b"".join(head))
        self.transport.close()
