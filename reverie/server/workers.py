"""``reverie serve --workers N``: several server processes over one home.

Each worker serves REST and MCP with its own :class:`~reverie.memory.Memory` that does
not learn (``learn="elsewhere"``): the turns it completes wait in the store, and the
one ``reverie serve`` process that started the workers learns them (``learn="poll"``)
and runs the nightly dream, so both happen once however many workers there are. SQLite
in WAL mode lets every worker read while one writes.
"""

from __future__ import annotations

import json
import os
from typing import Any

from fastapi import FastAPI

from reverie.memory import Memory
from reverie.server.rest import create_app
from reverie.settings import Settings

CONFIG_ENV = "REVERIE_SERVE_WORKER"
WORKER_USAGE_FLUSH = 2.0


def worker_config(home: str, *, auth: bool, default_user: str, overrides: dict[str, Any]) -> str:
    """What a worker needs to build its app, as the JSON its environment carries."""
    return json.dumps({"home": home, "auth": auth, "user": default_user, "overrides": overrides})


def worker_app() -> FastAPI:
    """The app of one worker (a uvicorn factory, read from the environment)."""
    config = json.loads(os.environ[CONFIG_ENV])
    # usage counts are written every WORKER_USAGE_FLUSH seconds, not on every recall: a write
    # from one process makes every other process drop its page cache
    settings = Settings.load(config["home"], **{"usage_flush_seconds": WORKER_USAGE_FLUSH, **config["overrides"]})
    memory = Memory(settings=settings, background=False, learn="elsewhere")
    return create_app(memory, auth=config["auth"], default_user=config["user"])
