"""Thread pools that know how much work they hold, so the bot can say "2 questions ahead of yours" and tests,
benchmarks and shutdown can wait until every listener and answer has finished; the answer pool is fair
between users (`FairPool`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from threadwise import metrics

log = logging.getLogger(__name__)


class Activity:
    """Work in flight across pools; `wait_idle` blocks until there is none."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._in_flight = 0

    def started(self) -> None:
        with self._changed:
            self._in_flight += 1

    def finished(self) -> None:
        with self._changed:
            self._in_flight -= 1
            self._changed.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._in_flight == 0, timeout=timeout)


class TrackedPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor whose jobs count in an `Activity` from submission to their end."""

    def __init__(self, *, max_workers: int, name: str, activity: Activity) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=name)
        self.max_workers = max_workers
        self.activity = activity
        self._held = 0
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        """Jobs submitted that no worker has taken up yet (roughly: held beyond the workers)."""
        with self._lock:
            return max(0, self._held - self.max_workers)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.activity.started()
        with self._lock:
            self._held += 1

        def run() -> Any:
            try:
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self._held -= 1
                self.activity.finished()

        try:
            return super().submit(run)
        except RuntimeError:  # shut down: the job will never run
            with self._lock:
                self._held -= 1
            self.activity.finished()
            raise

    def submit_logged(self, job: Callable[[], None], what: str) -> Future[None]:
        """Run `job`; its exceptions are logged ("answering failed"), never lost in a Future nobody reads."""

        def run() -> None:
            try:
                job()
            except Exception:
                log.exception("%s failed", what)

        return self.submit(run)


class FairPool:
    """Workers that take jobs round-robin by owner (the user who asked), so one user's burst of questions
    waits behind itself, not in front of everyone else. Counts in an `Activity` like `TrackedPool`."""

    def __init__(self, *, max_workers: int, name: str, activity: Activity) -> None:
        self.max_workers = max_workers
        self.activity = activity
        self._cond = threading.Condition()
        # per owner: (job, its future, when it was queued)
        self._queues: OrderedDict[str, deque[tuple[Callable[[], Any], Future[Any], float]]] = OrderedDict()
        self._running: dict[str, int] = {}
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True) for i in range(max_workers)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def waiting(self) -> int:
        """Jobs submitted that no worker has taken up yet."""
        with self._cond:
            return sum(len(q) for q in self._queues.values())

    def submit_logged(self, job: Callable[[], None], what: str, *, owner: str = "") -> Future[None]:
        """Run `job` in the owner's turn; its exceptions are logged, never lost in a Future nobody reads."""

        def run() -> None:
            try:
                job()
            except Exception:
                log.exception("%s failed", what)

        return self.submit(run, owner=owner)

    def in_flight(self, owner: str) -> int:
        """The owner's jobs, waiting or running."""
        with self._cond:
            return len(self._queues.get(owner, ())) + self._running.get(owner, 0)

    def submit(self, fn: Callable[..., Any], /, *args: Any, owner: str = "", **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the pool is shut down")
            self.activity.started()
            job = (lambda: fn(*args, **kwargs), future, time.monotonic())
            self._queues.setdefault(owner, deque()).append(job)
            self._cond.notify()
        return future

    def _take(self) -> tuple[str, Callable[[], Any], Future[Any]] | None:
        with self._cond:
            self._cond.wait_for(lambda: self._queues or self._closed)
            if not self._queues:
                return None
            owner, queue = next(iter(self._queues.items()))
            job, future, queued = queue.popleft()
            metrics.QUEUE_WAIT_SECONDS.observe(time.monotonic() - queued)
            del self._queues[owner]
            if queue:  # the owner's next job goes to the back of the line
                self._queues[owner] = queue
            self._running[owner] = self._running.get(owner, 0) + 1
            return owner, job, future

    def _work(self) -> None:
        while (taken := self._take()) is not None:
            owner, job, future = taken
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(job())
                    except BaseException as err:
                        future.set_exception(err)
            finally:
                with self._cond:
                    self._running[owner] -= 1
                    if not self._running[owner]:
                        del self._running[owner]
                self.activity.finished()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._cond:
            self._closed = True
            if cancel_futures:
                for queue in self._queues.values():
                    for _job, future, _queued in queue:
                        future.cancel()
                        self.activity.finished()
                self._queues.clear()
            self._cond.notify_all()
        if wait:
            for thread in self._threads:
                thread.join()


TOO_MANY = "You have {count} questions waiting for answers already; I'll take new ones as soon as those are answered."


class Admission:
    """At most `limit` questions of one person waiting or being answered at once. Several listeners check at
    once, so a question counts from `reserve` until it is in the pool (which counts it from then on)."""

    def __init__(self, *, pool: FairPool, limit: int) -> None:
        self.pool = pool
        self.limit = limit
        self._lock = threading.Lock()
        self._reserved: dict[str, int] = {}  # questions past the check, not yet in the pool

    def reserve(self, user: str) -> str | None:
        """Count a question of `user` as in flight from now, or say (politely) why not."""
        with self._lock:
            count = self.pool.in_flight(user) + self._reserved.get(user, 0)
            if count >= self.limit:
                return TOO_MANY.format(count=count)
            self._reserved[user] = self._reserved.get(user, 0) + 1
            return None

    def release(self, user: str) -> None:
        """The reservation ends once the question is in the pool (or was refused)."""
        with self._lock:
            self._reserved[user] -= 1
            if not self._reserved[user]:
                del self._reserved[user]
