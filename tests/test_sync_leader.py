"""One sync leader and one sync at a time across replicas: two sets of services over one real database (a SQLite
file and PostgreSQL), each with its own engine, as two `threadwise serve` processes have."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from tests.support.fake_confluence import FakeConfluence, FakePage
from tests.support.sync_env import SyncEnv, make_env
from threadwise.db.base import make_engine, make_sessions
from threadwise.db.leases import Leases
from threadwise.db.schema import upgrade
from threadwise.models.embedders import HashingEmbedder
from threadwise.sync.admin import AdminError
from threadwise.sync.leader import LeaderElection, SyncLock, lease_ttl, replica_id
from threadwise.sync.scheduler import SyncScheduler
from threadwise.sync.store import SyncStore
from threadwise.sync.sync import SyncReport


def _leases(url: str, clock: list[datetime] | None = None) -> Leases:
    """Leases through an engine of its own; `clock`: a settable time (clock[0]) instead of the wall clock."""
    engine = make_engine(url)
    upgrade(engine)
    if clock is None:
        return Leases(sessions=make_sessions(engine))
    return Leases(sessions=make_sessions(engine), clock=lambda: clock[0])


def test_a_lease_has_one_holder_until_it_expires_or_is_released(database_url: str) -> None:
    clock = [datetime(2026, 1, 1, 12, 0, tzinfo=UTC)]
    a, b = _leases(database_url, clock), _leases(database_url, clock)
    assert a.acquire("sync-leader", "replica-a", 30)
    assert not b.acquire("sync-leader", "replica-b", 30)
    clock[0] += timedelta(seconds=20)
    assert a.acquire("sync-leader", "replica-a", 30)  # renewed: live until 12:00:50
    first = b.current("sync-leader")
    assert first is not None and first.holder == "replica-a"
    assert first.acquired_at == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # a renewal keeps when it was taken
    clock[0] += timedelta(seconds=25)
    assert not b.acquire("sync-leader", "replica-b", 30)  # 12:00:45: still a's
    clock[0] += timedelta(seconds=6)
    assert b.acquire("sync-leader", "replica-b", 30)  # a stopped renewing: b takes it over
    assert not a.acquire("sync-leader", "replica-a", 30)
    taken = a.current("sync-leader")
    assert taken is not None and taken.holder == "replica-b" and taken.acquired_at == clock[0]
    b.release("sync-leader", "replica-b")
    assert a.acquire("sync-leader", "replica-a", 30)  # released: no wait for the TTL


def test_the_same_first_lease_is_won_once_by_many_at_once(database_url: str) -> None:
    replicas = [_leases(database_url) for _ in range(4)]
    won: list[str] = []
    barrier = threading.Barrier(8)

    def attempt(n: int) -> None:
        barrier.wait()
        if replicas[n % 4].acquire("race", f"r{n}", 30):
            won.append(f"r{n}")

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1


def test_a_dead_leader_is_replaced_after_its_lease_runs_out(database_url: str) -> None:
    a = LeaderElection(leases=_leases(database_url), holder="replica-a", ttl_s=1.0)
    elected: list[str] = []
    b = LeaderElection(
        leases=_leases(database_url), holder="replica-b", ttl_s=1.0, on_elected=lambda: elected.append("b")
    )
    assert a.try_lead() and a.is_leader()
    assert not b.try_lead() and not b.is_leader() and elected == []
    # replica a dies: it renews no more (no release: a killed process says nothing)
    time.sleep(1.1)
    assert not a.is_leader()  # it stops counting itself the leader before its lease ends
    assert b.try_lead() and b.is_leader() and elected == ["b"]
    assert not a.try_lead()
    b.stop()  # a clean stop hands the lease over at once
    assert a.try_lead()


def test_lease_ttl_setting_is_checked() -> None:
    assert lease_ttl("") == 30.0 and lease_ttl("12") == 12.0
    for bad in ("61", "2", "soon"):
        with pytest.raises(ValueError, match="THREADWISE_LEASE_TTL_SECONDS"):
            lease_ttl(bad)
    assert replica_id(" web-1 ") == "web-1" and replica_id("")


class _Overlap:
    """An embedder shared by two replicas' syncs that records how many embed at once (slowly, so two syncs
    running together would overlap)."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.name, self.dim, self.max_tokens = self.inner.name, self.inner.dim, self.inner.max_tokens
        self.now = 0
        self.most = 0
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        pass

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.05)
        with self._lock:
            self.now -= 1
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


@pytest.fixture
def fake() -> Iterator[FakeConfluence]:
    pages = [
        FakePage(id=str(600 + n), space="HR", title=f"Policy {n}", body=f"<p>Rule {n}.</p>") for n in range(6)
    ]
    with FakeConfluence(pages=pages) as server:
        yield server


def _replica(tmp_path: Path, name: str, url: str, database_url: str, embedder: _Overlap) -> SyncEnv:
    """One replica's admin stack (its own data folder, so no shared file lock) over the shared database."""
    env = make_env(tmp_path / name, url, embedder=embedder, database_url=database_url)
    env.syncer.batch_pages = 1
    env.admin.sync_lock = SyncLock(leases=_leases(database_url), replica=name, ttl_s=5.0, poll_s=0.05)
    return env


def test_admin_syncs_on_two_replicas_run_one_after_the_other(
    tmp_path: Path, fake: FakeConfluence, database_url: str
) -> None:
    embedder = _Overlap()
    a = _replica(tmp_path, "replica-a", fake.url, database_url, embedder)
    b = _replica(tmp_path, "replica-b", fake.url, database_url, embedder)
    a.admin.add_space("HR")
    waited: list[str] = []
    results: dict[str, list[str]] = {}

    def sync(name: str, env: SyncEnv) -> None:
        reports = env.admin.sync("HR", full=True, trigger="slack", on_wait=waited.append)
        results[name] = [r.status for r in reports]

    threads = [threading.Thread(target=sync, args=(n, e)) for n, e in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"a": ["ok"], "b": ["ok"]}
    assert embedder.most == 1  # never two syncs embedding at once
    assert len(waited) == 1 and waited[0] in ("replica-a", "replica-b")  # the second was told who ran first

    # a scheduled run does not queue: while one sync runs it is skipped, saying where the sync runs
    with a.admin.sync_lock.held():  # type: ignore[union-attr]
        with pytest.raises(AdminError, match="already running on replica-a"):
            b.admin.sync("HR", trigger="schedule", wait=False)
        with pytest.raises(AdminError, match="already running on replica-a; try again when it has finished"):
            b.admin.remove_space("HR")  # no purge under another replica's sync
    assert b.admin.remove_space("HR") == 6


def test_only_the_leader_runs_the_schedule(tmp_path: Path, fake: FakeConfluence, database_url: str) -> None:
    embedder = _Overlap()
    replicas = [_replica(tmp_path, f"replica-{n}", fake.url, database_url, embedder) for n in "ab"]
    replicas[0].admin.add_space("HR")
    seen: list[str] = []

    def recorder(name: str) -> Callable[[list[SyncReport]], None]:
        return lambda reports: seen.extend(f"{name}:{r.status}" for r in reports)

    schedulers = [
        SyncScheduler(
            admin=env.admin,
            interval_minutes=60,
            on_reports=recorder(n),
            leader=LeaderElection(leases=_leases(database_url), holder=f"replica-{n}", ttl_s=5.0),
        )
        for n, env in zip("ab", replicas, strict=True)
    ]
    for s in schedulers:
        s.start(run_now=True)
    try:
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
        for s in schedulers:  # both schedules' first runs are over (the follower's skipped)
            s._scheduler.remove_all_jobs()
        time.sleep(0.3)
    finally:
        for s in schedulers:
            s.shutdown()
    assert seen == ["a:ok"]  # replica a started first and leads; replica b skipped its turn
    runs = SyncStore(sessions=replicas[1].sessions).last_run("HR")
    assert runs is not None and runs.trigger == "schedule"


def test_a_replica_elected_after_a_dead_leader_syncs_at_once(
    tmp_path: Path, fake: FakeConfluence, database_url: str
) -> None:
    """The dead leader's lease runs out; the replica that takes it syncs then, not an interval later."""
    env = _replica(tmp_path, "replica-b", fake.url, database_url, _Overlap())
    env.admin.add_space("HR")
    # killed: it renews no more; 3 s, so that it still holds the lease when the replica starts on a busy host
    assert _leases(database_url).acquire("sync-leader", "dead-replica", 3.0)
    seen: list[str] = []
    scheduler = SyncScheduler(
        admin=env.admin,
        interval_minutes=60,
        on_reports=lambda reports: seen.extend(r.status for r in reports),
        leader=LeaderElection(leases=_leases(database_url), holder="replica-b", ttl_s=1.5),
    )
    scheduler.start(run_now=False)  # the schedule's first turn is an hour away
    try:
        assert scheduler.leader is not None and not scheduler.leader.is_leader()
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        scheduler.shutdown()
    assert seen == ["ok"]
    last = SyncStore(sessions=env.sessions).last_run("HR")
    assert last is not None and last.trigger == "schedule"
    current = _leases(database_url).current("sync-leader")
    assert current is not None and current.holder == "replica-b"
