"""The index's locks: a readers-writer lock (many readers at once, or one exclusive holder: reopening the
Chroma client), and the one-writer lock across threads and processes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout


class SharedLock:
    """Readers share it; `exclusive()` waits until no reader holds it and keeps new readers out meanwhile."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._waiting_exclusive)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting_exclusive += 1
            self._cond.wait_for(lambda: not self._exclusive and self._readers == 0)
            self._waiting_exclusive -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class WriteLock:
    """A re-entrant lock across threads (RLock) and processes on this machine (a lock file), and, if given,
    across machines: `shared()` (a lock in the shared database) is entered with the outermost hold."""

    def __init__(
        self, path: Path, *, shared: Callable[[], AbstractContextManager[object]] | None = None
    ) -> None:
        self._threads = threading.RLock()
        self._file = FileLock(str(path), thread_local=False)
        self._shared = shared
        self._depth = 0  # holds by the owning thread, which alone changes it
        self._held = ExitStack()

    def __enter__(self) -> None:
        self._threads.acquire()
        if self._depth == 0:
            try:
                with ExitStack() as taking:
                    taking.enter_context(self._file)
                    if self._shared is not None:
                        taking.enter_context(self._shared())
                    self._held = taking.pop_all()
            except BaseException:
                self._threads.release()
                raise
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                self._held.close()  # the database's lock first, then the file's
        finally:
            self._threads.release()

    def acquire_now(self) -> bool:
        """Take this machine's part of the lock (threads, the lock file) only if it is free this moment, or
        this thread holds it already; True if taken (release with __exit__). For what lies in this folder alone
        (BM25's files): the shared database's lock, which may wait on another replica, is not taken."""
        if not self._threads.acquire(blocking=False):
            return False
        if self._depth == 0:
            try:
                self._file.acquire(timeout=0)
            except Timeout:
                self._threads.release()
                return False
            self._held = ExitStack()
            self._held.callback(self._file.release)
        self._depth += 1
        return True
