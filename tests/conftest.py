"""Shared fixtures: a fresh memory home per test, and the scripted OpenAI server."""

from __future__ import annotations

import pytest

from tests.fake_openai import fake_openai  # noqa: F401  (re-exported fixture)
from tests.homes import new_home
from tests.pg import backend, pg_session_url, pg_url, store_url  # noqa: F401  (re-exported fixtures)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture(scope="session")
def new_store_file(tmp_path_factory) -> bytes:
    """The ``reverie.db`` a new Memory makes in an empty home, made once per run by reverie
    itself: every migration from an empty file to the current schema (~60 ms, most of a new
    home's cost). A new home is always the same store, no id, key or time drawn in it: two are
    made here and must hold the same rows, else no copy of one may stand for a new one."""
    import sqlite3
    from contextlib import closing

    from reverie import Memory

    dumps = []
    for name in ("home", "again"):
        home = tmp_path_factory.mktemp("new-home") / name
        Memory(home, background=False).close()
        made = sorted(p.name for p in home.iterdir())
        assert made == ["reverie.db"], f"a new home holds more than its store now: {made} (copy those too)"
        with closing(sqlite3.connect(home / "reverie.db")) as db:
            dumps.append(list(db.iterdump()))
    assert dumps[0] == dumps[1], "two new stores differ: a copy of one is no new store (make each anew)"
    return (home / "reverie.db").read_bytes()


@pytest.fixture
def mem(home, new_store_file):
    """A Memory with no background worker: tests call flush() when they want learning."""
    from reverie import Memory

    memory = Memory(new_home(home, new_store_file), background=False)
    yield memory
    memory.close()


@pytest.fixture
def bmem(home, backend, new_store_file):
    """``mem`` on each backend in turn: SQLite in the home, then PostgreSQL (an emptied schema;
    its documents mirrored as files into the home, where the tests read them)."""
    from reverie import Memory

    if backend is None:
        new_home(home, new_store_file)
    memory = Memory(home, background=False, store=backend, mirror_dir=home if backend else None)
    yield memory
    memory.close()
