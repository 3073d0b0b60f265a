"""Faults found at the doors: a request head between the limit and two read chunks of it
was served, and an archived fact made live by an edit left its newer value live too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from reverie import Memory
from reverie.server.limits import MAX_HEADER_BYTES
from reverie.server.rest import create_app
from tests.live_server import free_port, live_server, stop_process, wait_for
from tests.test_limits import _raw

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------ A: the size of a request's head
@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``reverie serve --no-auth`` as a subprocess (the protocol the fault was in); yields its URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "reverie.cli", "serve", "--no-auth", "--port", str(port),
                             "--home", str(tmp_path_factory.mktemp("serve") / "home")],
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(f"{url}/healthz", proc)
        yield url
    finally:
        stop_process(proc)


def _send(url: str, data: bytes) -> bytes:
    """Send ``data`` on a raw connection and read what comes back until the server closes it."""
    return _raw(url, data)[0]


def _head(size: int) -> bytes:
    """A GET /healthz whose request line and headers are ``size`` bytes in all."""
    start = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Big: "
    head = start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"
    assert len(head) == size
    return head


@pytest.mark.parametrize("size", [MAX_HEADER_BYTES + 1, 70_000, 100_000, 130_000, 200_000])
def test_a_request_head_past_the_limit_is_answered_431_whatever_its_size(served, size):
    # a head that ended in the chunk crossing the limit was parsed whole (and the count of its
    # bytes reset) before the count was checked: up to about two chunks of it were served 200
    answer = _send(served, _head(size))
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"connection: close" in head.lower()
    assert json.loads(body) == {"detail": f"the request line and headers are larger than {MAX_HEADER_BYTES} bytes",
                                "field": "headers"}


def test_a_request_head_at_the_limit_and_usual_requests_are_served_as_ever(served):
    assert _send(served, _head(MAX_HEADER_BYTES)).startswith(b"HTTP/1.1 200 ")
    with httpx.Client() as client:
        assert client.get(f"{served}/healthz", headers={"X-Fine": "b" * 8000}).status_code == 200
        # a body in the same packets as its head is the body's, not the head's
        assert client.post(f"{served}/api/memory/recall", json={"query": "x" * 100_000},
                           params={"user": "ana"}).status_code == 200


# ------------------------------------------------------------ B: an archived fact made live by an edit
def _superseded(memory: Memory) -> tuple[str, str]:
    madrid = memory.remember("Lives in Madrid", user="ana", category="context")
    seville = memory.remember("Lives in Seville", user="ana", category="context")
    assert seville.supersedes == madrid.id and memory.fact(madrid.id).status == "archived"
    return madrid.id, seville.id


def _restored(memory: Memory, madrid: str, seville: str) -> None:
    back = memory.fact(madrid)
    assert back.status == "consolidated" and back.archived_reason == "" and back.superseded_by is None
    newer = memory.fact(seville)
    assert newer.status == "archived" and newer.superseded_by == madrid
    assert [f.content for f in memory.facts(user="ana") if "Lives in" in f.content] == ["Lives in Madrid"]
    assert memory.health(user="ana").contradictions == []


def test_an_archived_fact_set_live_by_update_fact_is_restored_and_its_newer_value_gives_way(tmp_path):
    with Memory(tmp_path / "home", background=False) as memory:
        madrid, seville = _superseded(memory)
        memory.update_fact(madrid, user="ana", status="consolidated")
        _restored(memory, madrid, seville)
        # one edit: one undo takes both back
        memory.undo(memory.changes(user="ana")[0].id, user="ana")
        assert memory.fact(seville).status == "consolidated" and memory.fact(madrid).status == "archived"
        # asked for pending, it comes back pending
        memory.update_fact(madrid, user="ana", status="pending")
        assert memory.fact(madrid).status == "pending" and memory.fact(seville).status == "archived"


def test_patching_an_archived_fact_live_over_rest_restores_it_and_archives_its_newer_value(tmp_path):
    with Memory(tmp_path / "home", background=False) as memory, \
            live_server(create_app(memory, auth=False, mcp=False)) as url:
        madrid, seville = _superseded(memory)
        answer = httpx.patch(f"{url}/api/memory/facts/{madrid}", params={"user": "ana"},
                             json={"status": "consolidated"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"] == "consolidated" and answer.json()["superseded_by"] is None
        _restored(memory, madrid, seville)


def test_a_live_fact_set_archived_by_update_fact_is_put_away_as_forget_does(tmp_path):
    with Memory(tmp_path / "home", background=False) as mem:
        fact = mem.remember("Lives in Madrid", user="ana", category="context")
        mem.set_profile("user.personalContext", "Lives in Madrid. Likes tea.", user="ana")
        archived = mem.update_fact(fact.id, user="ana", status="archived")
        assert (archived.status, archived.archived_reason, archived.archived_from) == ("archived", "forgotten",
                                                                                        "consolidated")
        assert mem.profile(user="ana").section("user.personalContext").summary == "Likes tea."
        assert mem.facts(user="ana") == []
        assert mem.restore_fact(fact.id, user="ana").status == "consolidated"  # and back, as after forget
