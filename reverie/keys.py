"""API keys: who may use the REST and MCP doors, and as which user.

A key is ``rv_`` followed by 43 url-safe characters (256 random bits). It is
shown once, when it is created; the store keeps only an HMAC-SHA256 of it under
a random per-install salt, so a copy of the database hands out no working key.
An admin key belongs to a user too, but may act for any user it names.

    >>> from reverie.keys import create_key, verify_key
    >>> new = create_key(mem.store, user="ana", name="laptop")
    >>> new.secret                     # give it to the client; it is never shown again
    'rv_...'
    >>> verify_key(mem.store, new.secret).user
    'ana'
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from reverie.errors import AccessDenied, InvalidInput, NotFound
from reverie.inputs import check_user
from reverie.models import new_id, utcnow
from reverie.redact import redact
from reverie.store.base import ApiKey, Store

PREFIX = "rv_"


@dataclass(frozen=True, slots=True)
class NewKey:
    """A key just created: ``secret`` is the only copy of the key itself."""

    secret: str
    key: ApiKey


def create_key(store: Store, *, user: str, name: str = "", admin: bool = False) -> NewKey:
    """Create a key for ``user`` and return it with its secret (shown once)."""
    user = check_user(user)
    if not isinstance(name, str) or len(name) > 200:
        raise InvalidInput("name must be text of at most 200 characters", field="name")
    # a label is shown wherever keys are listed: an address or a secret typed into it is not kept
    name = redact(name.strip())
    secret = PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(id=new_id("key"), user=user, name=name, admin=bool(admin), created_at=utcnow())
    with store.transaction():
        store.put_api_key(key, hash_key(store, secret))
    return NewKey(secret=secret, key=key)


def list_keys(store: Store, *, user: str | None = None) -> list[ApiKey]:
    """Every key (revoked ones included, with ``revoked_at`` set), oldest first."""
    return [k for k in store.list_api_keys() if user is None or k.user == user]


def revoke_key(store: Store, key_id: str) -> ApiKey:
    """Revoke a key for good; requests that carry it are refused from now on."""
    with store.transaction():
        if not store.revoke_api_key(key_id, utcnow()):
            raise NotFound(f"no active key {key_id!r}; `reverie keys list` shows the ids")
    return next(k for k in store.list_api_keys() if k.id == key_id)


def verify_key(store: Store, secret: str | None) -> ApiKey | None:
    """The live key behind ``secret``, or None (unknown, malformed or revoked)."""
    if not secret or not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    key = store.find_api_key(hash_key(store, secret))
    if key is None or key.revoked_at is not None:
        return None
    return key


def authorize(store: Store, secret: str | None, *, user: str | None = None) -> str:
    """The user a request acts for: the key's own user, or ``user`` when the key is
    an admin key (a plain key may name only its own user)."""
    key = verify_key(store, secret)
    if key is None:
        reason = "no API key" if not secret else "unknown or revoked API key"
        # (the hint names no key's shape: a message is redacted, and "rv_..." read as a token)
        raise AccessDenied(f"{reason}: send the header 'Authorization: Bearer' followed by your key (it begins with "
                           "rv_; create one with `reverie keys create`)")
    if user is None or user == key.user:
        return key.user
    if not key.admin:
        raise AccessDenied(f"this key reaches only {key.user}'s memory; naming a user needs an admin key", status=403)
    return check_user(user)


def hash_key(store: Store, secret: str) -> str:
    return hmac.new(store.salt(), secret.encode("utf-8"), hashlib.sha256).hexdigest()
