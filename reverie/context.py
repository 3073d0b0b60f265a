"""What every line (recall, learning, dream, maintenance, import, turns) is built with.

The :class:`~reverie.memory.Memory` facade makes one :class:`Context` and hands
it down; no line reaches back up into the facade.
"""

from __future__ import annotations

from dataclasses import dataclass

from reverie.engines import Engines
from reverie.facts import FactWriter
from reverie.files import UserFiles
from reverie.settings import Settings
from reverie.store.base import Store


@dataclass(frozen=True)
class Context:
    """The store, the settings, the engines for each step, the home's files, and the one
    fact writer."""

    store: Store
    settings: Settings
    engines: Engines
    files: UserFiles
    facts: FactWriter

    @classmethod
    def build(cls, store: Store, settings: Settings, files: UserFiles) -> "Context":
        return cls(store=store, settings=settings, engines=Engines(settings), files=files,
                   facts=FactWriter(store, settings))
