"""Exactly once and never silence across replicas: the claims this replica answers, and the orphans it adopts.

Every question a front end starts answering is claimed with what it takes to answer it again (the thread, the
question, where the placeholder is). One daemon thread per replica renews the leases of its open claims every
third of the TTL (one UPDATE for all of them) and, every `sweep_s`, looks for claims whose holder stopped
renewing before it answered — a replica killed, or cut off from the database. It takes each over (only one
replica can) and hands it to the platform's `resume`: the question is answered in the thread, or, when
`max_attempts` replicas have already died on it or it is older than `max_age`, the thread is told it was
interrupted and to ask again (a question that kills whoever answers it must not take every replica down).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from threadwise.db.claims import Claim, ClaimStore

log = logging.getLogger(__name__)

INTERRUPTED = "Sorry, I was interrupted while answering this. Please ask again."
SWEEP_S = 15.0

# resume(claim, give_up): answer the claimed question again, or (give_up) tell its thread it was interrupted
Resume = Callable[[Claim, bool], None]


def continue_claim(
    claim: Claim,
    give_up: bool,
    *,
    answer: Callable[[], object],
    tell: Callable[[str], object],
    finish: Callable[[str], None],
) -> None:
    """What a platform's `resume` does with an adopted claim: `answer()` (which finishes the claim once the
    answer is out), or, when giving up, `tell` the conversation it was interrupted and `finish` the claim."""
    if not give_up:
        answer()
        return
    try:
        tell(INTERRUPTED)
    finally:
        finish(claim.key)


class ClaimKeeper:
    def __init__(
        self,
        *,
        store: ClaimStore,
        replica: str,
        ttl_s: float = 30.0,
        sweep_s: float = SWEEP_S,
        max_attempts: int = 3,
        max_age: timedelta = timedelta(minutes=30),
    ) -> None:
        self.store = store
        self.replica = replica
        self.ttl_s = ttl_s
        self.sweep_s = sweep_s
        self.max_attempts = max_attempts
        self.max_age = max_age
        self._resumers: dict[str, Resume] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def claim(self, key: str, payload: dict[str, Any]) -> bool:
        """True the first time `key` is claimed, across replicas; this replica then answers it (and renews)."""
        self.start()
        return self.store.claim(key, self.replica, self.ttl_s, payload)

    def receive(self, key: str, payload: dict[str, Any]) -> None:
        """Keep an arrival until `finish(key)`, without renewing it: after one TTL another replica may replay
        it (whatever then answers must claim it again, so it is answered once)."""
        self.start()
        self.store.claim(key, f"{self.replica}:received", self.ttl_s, payload)

    def note(self, key: str, **fields: Any) -> None:
        self.store.note(key, **fields)

    def finish(self, key: str) -> None:
        """Answered, or told why not: never resumed elsewhere. Failures are logged (the answer is out)."""
        try:
            self.store.finish(key)
        except Exception as err:
            log.warning("could not mark %s answered: %s", key, type(err).__name__)

    def resume_with(self, prefix: str, resume: Resume) -> None:
        """Adopt orphaned claims whose key starts with `prefix` (a platform's) through `resume`."""
        self._resumers[prefix] = resume
        self.start()

    def start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._loop, name="threadwise-claims", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        """Stop renewing and sweeping (claims still open then are adopted by another replica)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.ttl_s)

    def _loop(self) -> None:
        renew_every = self.ttl_s / 3
        next_renew = next_sweep = time.monotonic()
        while not self._stop.wait(min(renew_every, self.sweep_s) / 2):
            now = time.monotonic()
            try:
                if now >= next_renew:
                    next_renew = now + renew_every
                    self.store.renew(self.replica, self.ttl_s)
                if now >= next_sweep and self._resumers:
                    next_sweep = now + self.sweep_s
                    self.sweep()
            except Exception as err:  # the database is away: try again next round
                log.warning("claims upkeep failed: %s", type(err).__name__)

    def sweep(self) -> int:
        """Take over and resume the orphans this replica can answer; returns how many it took."""
        taken = 0
        for prefix, resume in list(self._resumers.items()):
            for orphan in self.store.orphans(prefix):
                mine = self.store.take_over(orphan, self.replica, self.ttl_s)
                if mine is None:
                    continue  # another replica was quicker
                taken += 1
                too_old = self.store.now() - mine.created_at > self.max_age
                give_up = mine.attempts > self.max_attempts or too_old
                log.warning(
                    "%s takes over %s from %s (attempt %d)%s",
                    self.replica,
                    mine.key,
                    orphan.holder,
                    mine.attempts,
                    ": telling the thread to ask again" if give_up else "",
                )
                try:
                    resume(mine, give_up)
                except Exception:  # e.g. a payload an older release wrote: not renewed for ever
                    log.exception("resuming %s failed", mine.key)
                    self.finish(mine.key)
        return taken
