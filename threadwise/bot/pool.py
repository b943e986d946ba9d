"""Thread pools that know how much work they hold, so the bot can say "2 questions ahead of yours" and tests,
benchmarks and shutdown can wait until every listener and answer has finished.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

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
