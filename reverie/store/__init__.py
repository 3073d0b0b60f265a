"""Persistence behind one interface (see base.Store); SQLite is the embedded default."""

from reverie.store.base import ApiKey, DreamRun, Hit, Posting, Store
from reverie.store.sqlite import SQLiteStore

__all__ = ["ApiKey", "DreamRun", "Hit", "Posting", "SQLiteStore", "Store"]
