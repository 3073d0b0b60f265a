"""One small exception hierarchy; every message says what is wrong and what to do.

Every message is redacted where the error is made (:func:`reverie.redact.redact`): one
built from a value sent (an id, a tag, a section, a user) must not carry a secret typed
there back to the caller, onto a terminal or into a log, whichever door it leaves by.
"""

from reverie.redact import redact


class ReverieError(Exception):
    """Base of every error reverie raises on purpose."""

    def __init__(self, message: str = "", *args: object):
        super().__init__(redact(message) if isinstance(message, str) else message, *args)


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
