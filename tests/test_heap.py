"""When the cyclic garbage collector runs: held while a recall or a learning batch runs."""

from __future__ import annotations

import gc
import threading
from datetime import datetime, timezone

import pytest

from reverie import heap
from reverie.heap import paused_gc


def test_pauses_of_the_collector_nest_and_end_even_on_an_error():
    with pytest.raises(RuntimeError):
        with paused_gc():
            with paused_gc():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the outer pause still holds
            raise RuntimeError("the batch failed")
    assert gc.isenabled()
    gc.disable()  # a host that runs without the collector keeps it off
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_pauses_that_overlap_for_long_still_let_the_collector_run(monkeypatch):
    """A busy server's recalls overlap: the collector is never enabled in between, so a pause
    that ends while another holds on runs the young generations itself."""
    monkeypatch.setattr(heap, "OVERLAP_COLLECT_SECONDS", 0.0)
    runs: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs.append(info["generation"])

    holding, release = threading.Event(), threading.Event()

    def other_recall() -> None:
        with paused_gc():
            holding.set()
            release.wait(10)

    other = threading.Thread(target=other_recall)
    other.start()
    gc.callbacks.append(seen)
    try:
        assert holding.wait(10)
        with paused_gc():
            pass
        assert runs and runs[0] in (1, 2)  # the pause that ended ran the collector
        assert not gc.isenabled()  # the other pause still holds it
    finally:
        release.set()
        other.join(10)
        gc.callbacks.remove(seen)
    assert gc.isenabled()


def test_a_recall_runs_with_the_collector_held_and_releases_it(mem, monkeypatch):
    mem.remember("I keep bees on the roof of my flat", user="u")
    during: list[bool] = []
    search = mem.store.search
    monkeypatch.setattr(mem.store, "search", lambda *a, **kw: during.append(gc.isenabled()) or search(*a, **kw))
    found = mem.recall("what do I keep on the roof?", user="u", at=datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert "bees" in found.context
    assert during == [False]
    assert gc.isenabled()
