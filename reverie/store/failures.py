"""What to tell a person when the SQLite file under a store fails: damaged, or in a folder
this user may not write. One wording for the CLI, REST, MCP and the console.

SQLite says "database disk image is malformed" (or "file is not a database") for a file
whose pages were overwritten, and "unable to open database file" for one it cannot open,
often because the folder is read-only (SQLite writes its -wal and -shm files beside the
store). Neither says what to do; :func:`store_failure` does. The store itself is left as
it is: the error is mapped where it is reported.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from reverie.errors import StoreError

_DAMAGED = ("malformed", "file is not a database", "database disk image")
_UNOPENABLE = "unable to open database file"


def store_failure(exc: BaseException, path: str | Path | None) -> StoreError | None:
    """A StoreError that says what happened to the SQLite file at ``path`` and what to do,
    for a SQLite error (raw, or a StoreError that carries one) about a damaged file or one
    that cannot be opened; None for any other error."""
    said = _sqlite_said(exc)
    if said is None:
        return None
    where = Path(path) if path else None
    named = str(where) if where else "the store file"
    lowered = said.lower()
    if any(mark in lowered for mark in _DAMAGED):
        recover = recovery(where)
        if "not a database" in lowered:  # no SQLite header at all: another file, or its first page lost
            return StoreError(f"cannot open the store at {named}: it is not an SQLite database, or its first page "
                              f"is damaged (SQLite: {said}). If it is reverie's store: {recover}")
        return StoreError(f"the store file {named} is damaged (SQLite: {said}): part of it cannot be read. {recover}")
    if _UNOPENABLE in lowered:
        folder = where.parent if where else None
        if folder is not None and folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            return StoreError(f"cannot open the store at {named}: the folder {folder} is not writable (by this user, "
                              f"or it is on a read-only file system), and SQLite writes its -wal and -shm files "
                              f"beside the store; make it writable, or pass --home with a folder this user can "
                              f"write (SQLite: {said})")
        if where is not None and where.exists() and not os.access(where, os.R_OK | os.W_OK):
            return StoreError(f"cannot open the store at {named}: this user may not read and write the file; "
                              f"give it read and write access, or pass --home with a store it owns (SQLite: {said})")
        return StoreError(f"cannot open the store at {named}: SQLite could not open the file (SQLite: {said}); "
                          f"check that the path exists and that this user may write there")
    return None


def recovery(path: str | Path | None) -> str:
    """What to do with the damaged SQLite file at ``path``: recover what it still holds into
    a new file, or restore an export."""
    where = Path(path) if path else None
    named = str(where) if where else "the store file"
    fixed = str(where.with_name("fixed.db")) if where else "fixed.db"
    return (
        f"Stop every process that writes to it (reverie serve, its workers, scripts), keep a copy of it, "
        f"then recover what it still holds: sqlite3 {named} \".recover\" | sqlite3 {fixed}, check the copy "
        f"(sqlite3 {fixed} \"PRAGMA integrity_check\"), move the damaged file and its -wal and -shm files "
        f"aside and put {Path(fixed).name} in its place; or restore the memory from an earlier export "
        f"(reverie import)")


def _sqlite_said(exc: BaseException) -> str | None:
    """What SQLite said, if ``exc`` is (or was raised from) a sqlite3 error."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlite3.Error):
            return str(current)
        current = current.__cause__ or current.__context__
    if isinstance(exc, StoreError) and _UNOPENABLE in str(exc):
        return _UNOPENABLE
    return None
