"""A real uvicorn on 127.0.0.1 for the REST and MCP tests, and helpers for `reverie serve` subprocesses."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

import httpx
import uvicorn


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve ``app`` from a thread on a free port; yields the base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen, timeout: float = 30) -> None:
    """Wait until a server subprocess answers ``url``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def wait_until(check, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll ``check`` until it holds; fail the test, naming ``what``, after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def stop_process(proc: subprocess.Popen[str]) -> None:
    """Stop a server process as its operator would (SIGTERM), and for good if it hangs."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
