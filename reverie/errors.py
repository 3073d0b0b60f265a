"""One small exception hierarchy; every message says what is wrong and what to do."""


class ReverieError(Exception):
    """Base of every error reverie raises on purpose."""


class InvalidInput(ReverieError, ValueError):
    """The caller passed something reverie cannot use; the message names the field."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field


class NotFound(ReverieError, LookupError):
    """No such item for this user (also raised for another user's item: no existence leak)."""


class Conflict(ReverieError):
    """The request clashes with the current state (for example completing a finished turn)."""


class EngineError(ReverieError):
    """An engine could not produce a usable answer; nothing stored was changed."""


class StoreError(ReverieError):
    """The store could not be opened, migrated or reached."""


class StoreBusy(StoreError):
    """Another writer held what a write needed (a deadlock with another process, or a lock
    that outlasted the wait): the transaction wrote nothing, and the same call may succeed
    if made again."""


class AccessDenied(ReverieError):
    """No key, or an unknown or revoked one (``status`` 401); or a key naming a user
    it may not reach (403)."""

    def __init__(self, message: str, *, status: int = 401):
        super().__init__(message)
        self.status = status
