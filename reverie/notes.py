"""Daily notes and the markdown views beside the database.

The store is the truth; ``<home>/users/<user>/memory/YYYY-MM-DD.md`` mirrors it
so a person can read a day at a glance. Files are written atomically (temp file
+ rename): a crash never leaves half a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from reverie.memory import Memory


def user_dir(memory: "Memory", user: str) -> Path:
    return Path(memory.home) / "users" / user


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Temp file + rename: readers see the old file or the new one, never half of one.
    ``durable=False`` skips the fsync, for views the store can always render again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def render_day(date: str, lines: Iterable[str]) -> str:
    body = "\n".join(f"- {line}" for line in lines)
    return f"# {date}\n\n{body}\n"


def mirror_notes(memory: "Memory", user: str, dates: Iterable[str]) -> None:
    """Rewrite the markdown file of each given day from the store."""
    folder = user_dir(memory, user) / "memory"
    for date in sorted(set(dates)):
        notes = memory.store.list_notes(user, since=date, until=date)
        if notes:
            # the store holds the notes; a lost file is written again on the next flush
            write_atomic(folder / f"{date}.md", render_day(date, (n.content for n in notes)), durable=False)
