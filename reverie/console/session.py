"""Who is using the console: a signed session cookie, and the CSRF token that goes with it.

Signing in takes an API key (the same keys as REST) in a form post; the key itself is
never kept, shown or logged. The cookie holds the key's id, the user the console shows
and a CSRF token, signed with HMAC-SHA256 under a random secret kept in the store (so
that every server process over the same home reads the same cookies). Each request
checks the signature, the expiry, and that the key is still live: revoking a key ends
its console sessions at once. Signing out ends the session on the server too: its
CSRF token (a random value of its own, kept by the session until it ends) is recorded,
hashed, in the store's meta key ``console.signed_out`` until the cookie would have
expired anyway, and a cookie of a recorded session is refused by every server process
over the store (a copy of the cookie taken before sign-out reads and writes nothing).

Without keys (``reverie serve --no-auth``, only on 127.0.0.1) every visitor gets a
session that may show any user, as REST's ``?user=`` does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from reverie.errors import AccessDenied
from reverie.inputs import check_user
from reverie.keys import verify_key
from reverie.store.base import Store

COOKIE = "reverie_console"
FLASH_COOKIE = "reverie_console_flash"
SESSION_SECONDS = 12 * 3600
_SECRET_META = "console.secret"
# {sha256 of a signed-out session's CSRF token: when its cookie expires}, pruned as it is written
_SIGNED_OUT_META = "console.signed_out"


@dataclass(frozen=True, slots=True)
class Session:
    """One browser's console session. ``user`` is None before sign-in (the session then only
    carries the CSRF token of the sign-in form)."""

    csrf: str
    expires: int
    user: str | None = None  # whose memory the console shows
    key_id: str | None = None  # the key signed in with (None without keys)
    key_user: str | None = None  # the key's own user
    admin: bool = False  # may show any user

    @property
    def signed_in(self) -> bool:
        return self.user is not None


class Sessions:
    """Issue and read session cookies for one store."""

    def __init__(self, store: Store, *, auth: bool, default_user: str):
        self.store = store
        self.auth = auth
        self.default_user = check_user(default_user)
        self._secret: bytes | None = None

    # ------------------------------------------------------------ cookies
    def new(self) -> Session:
        """A fresh session: signed out with keys, showing the default user without."""
        csrf = secrets.token_urlsafe(32)
        expires = int(time.time()) + SESSION_SECONDS
        if self.auth:
            return Session(csrf=csrf, expires=expires)
        return Session(csrf=csrf, expires=expires, user=self.default_user, key_user=self.default_user, admin=True)

    def encode(self, session: Session) -> str:
        body = base64.urlsafe_b64encode(json.dumps(asdict(session), separators=(",", ":")).encode()).decode()
        return f"{body}.{self._sign(body)}"

    def decode(self, cookie: str | None) -> Session | None:
        """The session a cookie carries, or None: unsigned, tampered, expired, or its key revoked."""
        if not cookie or "." not in cookie or len(cookie) > 4096:
            return None
        body, signature = cookie.rsplit(".", 1)
        if not same_token(self._sign(body), signature):
            return None
        try:
            session = Session(**json.loads(base64.urlsafe_b64decode(body)))
        except (ValueError, TypeError):
            return None
        if session.expires < time.time():
            return None
        if self.auth and session.user is not None and _ended(session) in self._signed_out():
            return None  # signed out: a copy of the cookie is worth nothing
        if not self.auth:
            return session if session.user is not None else None
        if session.key_id is not None:
            key = next((k for k in self.store.list_api_keys() if k.id == session.key_id), None)
            if key is None or key.revoked_at is not None:
                return None
            # the key's rights are read again, never trusted from the cookie
            return replace(session, key_user=key.user, admin=key.admin)
        return session if session.user is None else None

    def sign_in(self, session: Session, secret: str | None) -> Session:
        """The session after signing in with ``secret`` (AccessDenied for a bad key); a new
        CSRF token, so that one seen before sign-in is worth nothing after it."""
        key = verify_key(self.store, (secret or "").strip() or None)
        if key is None:
            raise AccessDenied("that is not a live API key: check it, or create one with `reverie keys create`")
        return Session(csrf=secrets.token_urlsafe(32), expires=int(time.time()) + SESSION_SECONDS,
                       user=key.user, key_id=key.id, key_user=key.user, admin=key.admin)

    def sign_out(self, session: Session) -> Session:
        """End ``session`` for good (a copy of its cookie is refused from now on, by every
        process over the store) and return a fresh one."""
        if self.auth and session.signed_in:  # (without keys any visitor gets the same session anew)
            now = int(time.time())
            with self.store.transaction():
                ended = {k: v for k, v in self._signed_out().items() if isinstance(v, int) and v >= now}
                ended[_ended(session)] = session.expires
                self.store.set_meta(_SIGNED_OUT_META, json.dumps(ended, sort_keys=True))
        return self.new()

    def _signed_out(self) -> dict[str, Any]:
        """The sessions signed out whose cookies have not expired yet (read from the store on
        each request: a session ended by another server process is ended here too)."""
        raw = self.store.get_meta(_SIGNED_OUT_META)
        try:
            record = json.loads(raw) if raw else {}
        except ValueError:
            return {}
        return record if isinstance(record, dict) else {}

    def switch(self, session: Session, user: str) -> Session:
        """Show another user's memory (admin keys, or no keys, only)."""
        return replace(session, user=self.may_show(session, user))

    def may_show(self, session: Session, user: str) -> str:
        """``user`` if this session may show that user's memory; AccessDenied (403) otherwise."""
        user = check_user(user)
        if session.user is None:
            raise AccessDenied("sign in first")
        if user != session.key_user and not session.admin:
            raise AccessDenied(f"this key reaches only {session.key_user}'s memory; showing another user "
                               "needs an admin key", status=403)
        return user

    # ------------------------------------------------------------ signing
    def sign(self, text: str) -> str:
        return f"{text}.{self._sign(text)}"

    def unsign(self, value: str | None) -> str | None:
        if not value or "." not in value:
            return None
        text, signature = value.rsplit(".", 1)
        return text if same_token(self._sign(text), signature) else None

    def _sign(self, body: str) -> str:
        return hmac.new(self._key(), body.encode(), hashlib.sha256).hexdigest()

    def _key(self) -> bytes:
        if self._secret is None:
            secret = self.store.get_meta(_SECRET_META)
            if secret is None:
                # read again inside the write: two processes must not pick different secrets
                with self.store.transaction():
                    secret = self.store.get_meta(_SECRET_META)
                    if secret is None:
                        secret = secrets.token_hex(32)
                        self.store.set_meta(_SECRET_META, secret)
            self._secret = bytes.fromhex(secret)
        return self._secret


def _ended(session: Session) -> str:
    """How a signed-out session is recorded: a hash of its CSRF token, drawn at sign-in and
    kept by that session alone (switching users keeps it, signing in again draws another)."""
    return hashlib.sha256(session.csrf.encode()).hexdigest()[:32]


def same_token(expected: str, given: str | None) -> bool:
    """``given`` is ``expected``, compared in constant time as bytes: a cookie or form value may
    hold any character (hmac.compare_digest refuses non-ASCII strings with a TypeError)."""
    return bool(given) and hmac.compare_digest(expected.encode(), (given or "").encode("utf-8", "surrogatepass"))
