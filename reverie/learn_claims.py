"""The learning line over a shared store: the queue is the store's rows, claimed by any replica.

With a PostgreSQL store several ``reverie serve`` replicas take turns from the same
clients, so no process may keep the learning queue in memory. A completed episode
waits in the store; every replica polls :meth:`Store.claim_learning`, which hands the
episodes of a thread that has been quiet for ``debounce_seconds`` to exactly one
replica, under a lease (``learn_lease_seconds``) it renews between batches. Learning
then runs as in :class:`~reverie.learn.Learner` (engines first, one transaction to
apply, re-reading the episodes under the user's lock and skipping any already learned),
so an episode is learned once even when a lease ran out under a slow replica. An
engine failure gives the episodes back to wait before the next try (doubling, like
the in-process queue's); a batch the store rolled back for another writer (StoreBusy, a
deadlock) gives them back to be claimed again at once; a replica that dies keeps its
lease until it runs out, then another replica takes the episodes.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

from reverie.context import Context
from reverie.errors import EngineError, StoreBusy, StoreError
from reverie.learn import POLL_BATCH, RETRY_BASE_SECONDS, RETRY_MAX_SECONDS, Learner, _chunks, failed
from reverie.models import Episode
from reverie.store.base import EpisodeRef

log = logging.getLogger("reverie.learn")

# how often an idle replica asks the store for due episodes, at most
CLAIM_POLL_SECONDS = 1.0


class ClaimingLearner(Learner):
    """:class:`Learner` whose queue is the shared store's: ``enqueue`` only wakes the
    poller, ``flush`` claims (without waiting for the debounce), ``pending`` counts the
    store's backlog."""

    def __init__(self, ctx: Context, *, background: bool = True, queue: bool = True, poll: float | None = None):
        # set before the base class starts the background thread
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease = ctx.settings.learn_lease_seconds
        self.every = min(CLAIM_POLL_SECONDS, max(0.05, ctx.settings.debounce_seconds / 2))
        super().__init__(ctx, background=background and queue, queue=queue, poll=None)
        # while the engines wait on an endpoint, more loops claim and learn other users' groups
        # (as more replicas would); a user's claims here still go one after another
        self._loops = [
            threading.Thread(target=self._run, name=f"reverie-learner-{n}", daemon=True)
            for n in range(1, self.settings.learn_threads if self._thread is not None and self._parallel() else 1)
        ]
        for loop in self._loops:
            loop.start()

    # ------------------------------------------------------------ the queue is the store's
    def enqueue(self, episodes: Iterable[Episode | EpisodeRef], *, delay: float | None = None) -> None:
        if not self.queue:
            return
        with self._cond:  # the episodes wait in the store already: wake the poller to look
            self._cond.notify()

    def requeue_unlearned(self, user: str | None = None) -> None:
        return None

    def pending(self) -> int:
        """Completed episodes waiting in the store (0 once this learner stopped)."""
        if self._stopped:
            return 0
        try:
            return self.store.learning_backlog()[0]
        except StoreError:
            return 0

    def flush(self, *, user: str | None = None) -> int:
        self.close_unanswered()
        return self._drain(user)

    def stop(self, *, drain: bool = True) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        for loop in self._loops:
            loop.join(timeout=10)
        super().stop(drain=drain)

    def _drain(self, user: str | None = None, *, retrying: bool = True) -> int:
        """Claim and learn everything completed now (of ``user``), debounce or not, failed
        ones too (unless not ``retrying``: at close); what another replica holds is left to
        it. While the engines wait on an endpoint, ``learn_threads`` loops claim at once (each
        stops at its first failure)."""
        loops = self.settings.learn_threads if user is None and self._parallel() else 1
        if loops > 1:
            with ThreadPoolExecutor(max_workers=loops, thread_name_prefix="reverie-flush") as pool:
                return sum(pool.map(lambda _: self._claim_all(None, retrying), range(loops)))
        return self._claim_all(user, retrying)

    def _claim_all(self, user: str | None, retrying: bool = True) -> int:
        learned = 0
        while True:
            refs = self.store.claim_learning(
                self.owner, lease_seconds=self.lease, debounce_seconds=0.0, limit=POLL_BATCH, user=user,
                retry_now=retrying,
            )
            if not refs:
                return learned
            done, failed = self._learn_claimed(refs)
            learned += done
            if failed:
                return learned  # the engine is down: the rest waits for its retry time

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
            self._close_unanswered_logged()  # (closed turns wait in the store's queue: claimed below)
            try:
                refs = self.store.claim_learning(
                    self.owner, lease_seconds=self.lease, debounce_seconds=self.settings.debounce_seconds,
                    limit=POLL_BATCH,
                )
                if refs:
                    self._learn_claimed(refs)
                    continue
            except Exception:  # the worker must survive anything; the claim's lease runs out
                log.exception("learning from the shared queue failed")
            with self._cond:
                if self._stopped:
                    return
                self._cond.wait(timeout=self.every)

    # ------------------------------------------------------------ one claim
    def _learn_claimed(self, refs: list[EpisodeRef]) -> tuple[int, bool]:
        """Learn the claimed episodes in batches, renewing the lease while at it; (how many
        were learned, whether an engine failed)."""
        with self._user_lock(refs[0].user):
            ids = [r.id for r in refs]
            found = self.store.get_episodes(ids)
            episodes = [e for e in found.values() if e.status == "completed" and not e.learned]
            episodes.sort(key=lambda e: (e.occurred_at, e.created_at))
            kept = {e.id for e in episodes}
            self.store.release_learning(self.owner, [i for i in ids if i not in kept])
            left = list(kept)  # what the heartbeat keeps claimed
            done = threading.Event()

            def heartbeat() -> None:  # a slow engine call must not lose the claim; a dead process does
                while not done.wait(self.lease / 3):
                    try:
                        self.store.renew_learning(self.owner, list(left), self.lease)
                    except Exception:
                        log.warning("could not renew the learning lease", exc_info=True)

            beat = threading.Thread(target=heartbeat, name="reverie-learn-lease", daemon=True)
            beat.start()
            learned = 0
            try:
                for start, chunk in _chunks(episodes, self.ctx.engines.extract.batch_chars):
                    try:
                        applied = self.learn(chunk)
                    except EngineError as exc:
                        rest = [e.id for e in episodes[start:]]
                        said = failed(exc, len(rest), refs[0].user)
                        done.set()
                        self.store.release_learning(
                            self.owner, rest, error=said[:500], retry_base=RETRY_BASE_SECONDS,
                            retry_max=RETRY_MAX_SECONDS,
                        )
                        return learned, True
                    learned += applied
                    left[:] = [e.id for e in episodes[start + len(chunk):]]
            except StoreBusy as exc:
                # rolled back for another writer (a deadlock): nothing was written, and the
                # episodes are given back to be claimed again now, by this replica or another
                done.set()
                log.warning("learning %d episodes of %s met another writer, they are given back: %s",
                            len(left), refs[0].user, exc)
                self.store.release_learning(self.owner, list(left))
                return learned, False
            except BaseException:
                done.set()
                self.store.release_learning(self.owner, [e.id for e in episodes], error="learning was interrupted")
                raise
            finally:
                done.set()
                beat.join()
            return learned, False
