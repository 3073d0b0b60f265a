"""Shared fixtures: a fresh memory home per test, and the scripted OpenAI server."""

from __future__ import annotations

import pytest

from tests.fake_openai import fake_openai  # noqa: F401  (re-exported fixture)
from tests.pg import backend, pg_session_url, pg_url, store_url  # noqa: F401  (re-exported fixtures)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def mem(home):
    """A Memory with no background worker: tests call flush() when they want learning."""
    from reverie import Memory

    memory = Memory(home, background=False)
    yield memory
    memory.close()


@pytest.fixture
def bmem(home, backend):
    """``mem`` on each backend in turn: SQLite in the home, then PostgreSQL (an emptied schema;
    its documents mirrored as files into the home, where the tests read them)."""
    from reverie import Memory

    memory = Memory(home, background=False, store=backend, mirror_dir=home if backend else None)
    yield memory
    memory.close()
