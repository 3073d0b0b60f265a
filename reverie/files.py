"""The home's file layout, and the one way reverie writes a file.

    <home>/reverie.db
    <home>/users/<user>/MEMORY.md
    <home>/users/<user>/memory/YYYY-MM-DD.md
    <home>/users/<user>/memory/dreams/YYYY-MM-DD.md

Every value that becomes part of a path is checked where it enters (a user id
from the safe alphabet of :mod:`reverie.inputs`, a real ``YYYY-MM-DD`` date),
and every write goes through :meth:`UserFiles.write`, which resolves the final
path and refuses anything outside that user's folder. Files are written
atomically (temp file + rename): a crash never leaves half a file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from reverie.errors import InvalidInput
from reverie.inputs import check_date, check_user


class UserFiles:
    """Where each user's markdown views live under one home."""

    def __init__(self, home: str | Path):
        self.home = Path(home)

    def user_dir(self, user: str) -> Path:
        return self.home / "users" / check_user(user)

    def memory_md(self, user: str) -> Path:
        return self.user_dir(user) / "MEMORY.md"

    def notes_dir(self, user: str) -> Path:
        return self.user_dir(user) / "memory"

    def notes_file(self, user: str, date: str) -> Path:
        return self.notes_dir(user) / f"{check_date(date)}.md"

    def diary_dir(self, user: str) -> Path:
        return self.notes_dir(user) / "dreams"

    def diary_file(self, user: str, date: str) -> Path:
        return self.diary_dir(user) / f"{check_date(date)}.md"

    def confine(self, user: str, path: Path) -> Path:
        """``path`` resolved, if it lies inside ``user``'s folder; InvalidInput otherwise."""
        root = self.user_dir(user).resolve()
        final = Path(path).resolve()
        if final == root or root not in final.parents:
            raise InvalidInput(f"refusing to write {path.name!r} outside the folder of user {user!r}", field="path")
        return final

    def remove_user(self, user: str) -> int:
        """Delete the user's folder (MEMORY.md, notes, diaries); returns files removed."""
        return remove_tree(self.user_dir(user))

    def read(self, user: str, path: Path) -> str | None:
        """The text of a file in ``user``'s folder, or None when there is none."""
        final = self.confine(user, path)
        return final.read_text(encoding="utf-8") if final.is_file() else None

    def write(self, user: str, path: Path, text: str, *, durable: bool = True) -> Path:
        """Write ``text`` to ``path`` inside ``user``'s folder, atomically. ``durable=False``
        skips the fsync, for views the store can always render again."""
        final = self.confine(user, path)
        write_atomic(final, text, durable=durable)
        return path


def remove_tree(root: Path) -> int:
    """Delete a folder and everything in it (links inside are removed, never followed; a
    folder that is itself a link is left alone); returns how many files went."""
    if not root.is_dir() or root.is_symlink():
        return 0
    files = sum(len(names) for _, _, names in os.walk(root))
    shutil.rmtree(root)
    return files


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Temp file + rename: readers see the old file or the new one, never half of one."""
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
