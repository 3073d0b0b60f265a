"""A new memory home without running every migration again: see the ``new_store_file`` fixture."""

from __future__ import annotations

import os
from pathlib import Path


def new_home(home: Path, store_file: bytes) -> Path:
    """``home`` made as a new Memory makes it (its folders 0700, ``reverie.db`` 0600) with the
    store a new Memory writes there, so that opening it migrates nothing. A home that exists
    already (a test laid something there first) is left as it is, for the Memory to open."""
    from reverie.files import private_dirs

    if home.exists():
        return home
    private_dirs(home)
    fd = os.open(home / "reverie.db", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(store_file)
    return home
