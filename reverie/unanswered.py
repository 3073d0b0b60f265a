"""Turns that never got their reply. A turn still waiting ``reply_timeout_seconds`` after it
opened (pending: the agent never called ``save_memory`` or ``complete_turn``; interrupted: the
process that held it stopped) is closed with the user's message alone: completed, marked
``meta["unanswered"]``, then learned and recalled like any other episode, and counted in
``health``. What the user said is not lost because the agent forgot the second phase. A reply
that comes later is still taken (:meth:`reverie.turn.Turn.complete`).

The learning process sweeps (:class:`reverie.learn.Learner`: now and then, and at every
flush); on a shared store every replica may, each turn closed in its own transaction.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from reverie.models import Episode, as_utc, utcnow
from reverie.store.base import Store, meta_record

log = logging.getLogger("reverie.turn")

# per user: {"turns": closed without a reply so far, "last_at"} (a per-user meta prefix)
UNANSWERED_META = "turns-unanswered:{user}"
# turns closed in one sweep at most (the rest wait for the next)
CLOSE_PAGE = 500
UNANSWERED = "unanswered"  # Episode.meta: closed without a reply (True); "late" once one came


def close_unanswered(store: Store, timeout: float, *, now: datetime | None = None) -> list[Episode]:
    """Close every turn still waiting for its reply ``timeout`` seconds after it opened: the
    user's message is kept as a completed episode (marked unanswered) for the learning line
    to learn and recall to find; returns what was closed (a ``timeout`` of 0 closes none).
    Each turn is its own transaction and re-read in it: a reply or another replica's sweep
    that came first wins."""
    if timeout <= 0:
        return []
    now = as_utc(now) if now else utcnow()
    cutoff = now - timedelta(seconds=timeout)
    closed: list[Episode] = []
    for ep in store.waiting_turns(cutoff, limit=CLOSE_PAGE):
        with store.transaction():
            current = store.get_episode(ep.id)
            if current is None or current.status not in ("pending", "interrupted") or as_utc(current.created_at) >= cutoff:
                continue
            current.status, current.owner = "completed", None
            current.completed_at = now
            current.meta = {**current.meta, UNANSWERED: True}
            store.put_episode(current)
            key = UNANSWERED_META.format(user=current.user)
            record = meta_record(store, key)
            record.update({"turns": int(record.get("turns", 0)) + 1, "last_at": now.isoformat()})
            store.set_meta(key, json.dumps(record, sort_keys=True))
        closed.append(current)
    if closed:
        log.warning("closed %d turn(s) that got no reply within %g s; they are learned from the user's message "
                    "alone", len(closed), timeout)
    return closed


def unanswered_record(store: Store, user: str) -> dict[str, Any]:
    """The turns of ``user`` closed without a reply so far: {"turns": n, "last_at"}."""
    return meta_record(store, UNANSWERED_META.format(user=user))


