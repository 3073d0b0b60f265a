"""A person's hand edit of a file reverie wrote (MEMORY.md), as tests make it."""

from __future__ import annotations

from pathlib import Path


def edit_text(path: Path, old: str, new: str) -> None:
    """Replace ``old`` with ``new`` in the UTF-8 file at ``path``."""
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def dreamed(mem, home: Path, user: str = "ana") -> Path:
    """``user``'s first dream done: the MEMORY.md it wrote, for a hand edit."""
    run = mem.dream(user=user)
    assert run.status == "done", run.error
    return home / "users" / user / "MEMORY.md"
