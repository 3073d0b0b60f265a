"""Persistence behind one interface (see base.Store); SQLite is the embedded default."""

from reverie.store.base import ApiKey, DreamRun, EpisodeRef, Hit, Posting, Store
from reverie.store.sqlite import SQLiteStore

__all__ = ["ApiKey", "DreamRun", "EpisodeRef", "Hit", "Posting", "SQLiteStore", "Store"]
