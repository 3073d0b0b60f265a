"""Persistence behind one interface (see base.Store); SQLite is the embedded default.

    open_store("/home/me/.reverie/reverie.db")         # SQLite
    open_store("postgresql://reverie@db/reverie")      # PostgreSQL (pip install 'reverie[postgres]')
"""

from __future__ import annotations

from pathlib import Path

from reverie.store.base import ApiKey, DreamRun, EpisodeRef, Hit, Posting, Store
from reverie.store.postgres import PostgresStore, holds_store, is_postgres_url, redact_url
from reverie.store.sqlite import SQLiteStore


def open_store(where: str | Path, *, durability: str = "normal", pool_size: int = 10) -> Store:
    """The store at ``where``: a ``postgresql://`` URL (``?schema=NAME`` keeps reverie's
    tables in a schema of their own) or the path of a SQLite file. ``durability`` is the
    SQLite store's setting (PostgreSQL's is the server's own ``synchronous_commit``)."""
    if is_postgres_url(where):
        return PostgresStore(str(where), max_size=pool_size)
    return SQLiteStore(where, durability=durability)


__all__ = [
    "ApiKey",
    "DreamRun",
    "EpisodeRef",
    "Hit",
    "Posting",
    "PostgresStore",
    "SQLiteStore",
    "Store",
    "holds_store",
    "is_postgres_url",
    "open_store",
    "redact_url",
]
