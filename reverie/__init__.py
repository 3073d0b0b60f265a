"""reverie: local-first long-term memory for AI agents.

    from reverie import Memory
    mem = Memory(home="./mem")
    with mem.turn("I always want the conclusion first", user="ana") as turn:
        print(turn.context)
        turn.complete("Noted.")
"""

from reverie.aio import AsyncMemory
from reverie.errors import (
    AccessDenied,
    Conflict,
    EngineError,
    InvalidInput,
    NotFound,
    ReverieError,
    StoreBusy,
    StoreError,
)
from reverie.memory import Memory
from reverie.models import (
    Episode,
    Fact,
    Feedback,
    KnowledgeDoc,
    Message,
    Note,
    Perception,
    Profile,
    ProfileSection,
    Tag,
)
from reverie.recall import Recall, RecallItem
from reverie.settings import Settings
from reverie.turn import Turn
from reverie.version import __version__

__all__ = [
    "AsyncMemory",
    "AccessDenied",
    "__version__",
    "Conflict",
    "EngineError",
    "Episode",
    "Fact",
    "Feedback",
    "InvalidInput",
    "KnowledgeDoc",
    "Memory",
    "Message",
    "Note",
    "NotFound",
    "Perception",
    "Profile",
    "ProfileSection",
    "Recall",
    "RecallItem",
    "ReverieError",
    "Settings",
    "StoreBusy",
    "StoreError",
    "Tag",
    "Turn",
]
