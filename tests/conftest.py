"""Shared fixtures: a fresh memory home per test, and the scripted OpenAI server."""

from __future__ import annotations

import pytest

from tests.fake_openai import fake_openai  # noqa: F401  (re-exported fixture)


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
