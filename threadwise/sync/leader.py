"""One sync leader among replicas, and one sync at a time, through leases in the shared database.

`LeaderElection` keeps trying to hold the lease "sync-leader" and renews it every third of its TTL: the
scheduled sync runs only on its holder, and when the holder dies the lease runs out and another replica takes
it at its next try (within TTL + TTL/3). `SyncLock` is the lease "sync", held for the length of one sync
wherever it was started (the leader's schedule, `/threadwise sync` on any replica, Teams admin, the CLI):
a second sync waits for the first, so two never run at once.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from threadwise.db.leases import Leases

log = logging.getLogger(__name__)

LEADER_LEASE = "sync-leader"
SYNC_LEASE = "sync"
DEFAULT_TTL_S = 30.0
MAX_TTL_S = 60.0  # a dead leader hands over within a minute


def replica_id(configured: str = "") -> str:
    """This process's name in leases and claims: THREADWISE_REPLICA_ID, else host and process id."""
    return configured.strip() or f"{socket.gethostname()}-{os.getpid()}"


def lease_ttl(value: str) -> float:
    """THREADWISE_LEASE_TTL_SECONDS: 5 to 60 seconds (default 30)."""
    if not value.strip():
        return DEFAULT_TTL_S
    try:
        ttl = float(value)
    except ValueError:
        raise ValueError(f"THREADWISE_LEASE_TTL_SECONDS={value!r} is not a number of seconds") from None
    if not 5.0 <= ttl <= MAX_TTL_S:
        raise ValueError(f"THREADWISE_LEASE_TTL_SECONDS={value} must be between 5 and {MAX_TTL_S:g} seconds")
    return ttl


class LeaderElection:
    """Holds (or waits for) the leader lease on a daemon thread; `is_leader()` answers from what it knows."""

    def __init__(
        self,
        *,
        leases: Leases,
        holder: str,
        ttl_s: float = DEFAULT_TTL_S,
        name: str = LEADER_LEASE,
        on_elected: Callable[[], None] | None = None,
    ) -> None:
        """`on_elected` runs (on the election thread) each time this replica becomes the leader."""
        self.leases = leases
        self.holder = holder
        self.ttl_s = ttl_s
        self.name = name
        self.on_elected = on_elected
        self._held_until = 0.0  # time.monotonic() up to which the lease is surely ours
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def is_leader(self) -> bool:
        return time.monotonic() < self._held_until

    def try_lead(self) -> bool:
        """One attempt to take or renew the lease; True while this replica is the leader."""
        was = self.is_leader()
        started = time.monotonic()
        try:
            held = self.leases.acquire(self.name, self.holder, self.ttl_s)
        except Exception as err:  # the database is unreachable: leadership lapses with the lease
            log.warning("could not renew the sync leader lease: %s", type(err).__name__)
            return self.is_leader()
        # counted from before the attempt, and a little short of it, so that this replica stops leading
        # before any other may start
        self._held_until = started + self.ttl_s * 0.9 if held else 0.0
        if held and not was:
            log.info("%s is the sync leader now", self.holder)
            if self.on_elected is not None:
                self.on_elected()
        elif was and not held:
            log.warning("%s is no longer the sync leader", self.holder)
        return held

    def start(self) -> None:
        """Try once now (so the first scheduled run knows), then keep trying every TTL/3 on a thread."""
        self.try_lead()
        self._thread = threading.Thread(target=self._loop, name="threadwise-leader", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            self.try_lead()

    def stop(self) -> None:
        """Stop trying, and hand the lease over at once if held (a rolling upgrade needs no TTL's wait)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.ttl_s)
        if self.is_leader():
            self._held_until = 0.0
            try:
                self.leases.release(self.name, self.holder)
            except Exception as err:
                log.warning("could not release the sync leader lease: %s", type(err).__name__)


class SyncBusy(Exception):
    """Another sync holds the sync lease (and the caller chose not to wait)."""


class SyncLock:
    """The "sync" lease, held while one sync runs, renewed on a thread until it ends."""

    def __init__(
        self, *, leases: Leases, replica: str, ttl_s: float = DEFAULT_TTL_S, poll_s: float = 1.0
    ) -> None:
        self.leases = leases
        self.replica = replica
        self.ttl_s = ttl_s
        self.poll_s = poll_s

    @contextmanager
    def held(self, *, wait: bool = True, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the lease for the block. Busy: wait for it (telling `on_wait` once who holds it), or raise
        SyncBusy when `wait` is False."""
        holder = f"{self.replica}:{uuid.uuid4().hex[:8]}"  # each sync is its own holder, even in one replica
        told = False
        while not self.leases.acquire(SYNC_LEASE, holder, self.ttl_s):
            current = self.leases.current(SYNC_LEASE)
            who = current.holder.rsplit(":", 1)[0] if current else "another replica"
            if not wait:
                raise SyncBusy(f"a sync is already running on {who}")
            if on_wait is not None and not told:
                on_wait(who)
                told = True
            time.sleep(self.poll_s)
        stop = threading.Event()
        renewer = threading.Thread(
            target=self._renew, args=(holder, stop), name="threadwise-sync-lease", daemon=True
        )
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join(timeout=self.ttl_s)
            self.leases.release(SYNC_LEASE, holder)

    def _renew(self, holder: str, stop: threading.Event) -> None:
        while not stop.wait(self.ttl_s / 3):
            try:
                if not self.leases.acquire(SYNC_LEASE, holder, self.ttl_s):
                    log.error("the sync lease of %s was taken over while its sync still runs", holder)
            except Exception as err:
                log.warning("could not renew the sync lease: %s", type(err).__name__)
