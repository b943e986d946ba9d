"""Full and incremental sync of one Confluence space into the evidence index.

One run, holding the space's lock (a file lock, so it holds across processes):
1. list the space's current pages without bodies (ids, titles, breadcrumbs: on Cloud up through folders) and
   apply the scope (parent, labels);
2. remove from the index every page that is no longer listed or no longer in scope (deleted, archived, moved,
   labelled);
3. pick the pages to fetch: all of them for a full run; otherwise those CQL reports modified since the last
   successful run (minus a safety overlap) whose version differs from the index, pages in scope but not in
   the index, pages whose title (in the index's manifest) or breadcrumb (kept per page in `synced_pages`)
   changed (a renamed ancestor, a move), and last run's failures;
   under THREADWISE_PERMISSIONS=open-pages, leave out the pages to fetch that have a read restriction on
   themselves or an ancestor (all listed pages when the policy changed): nothing of them is fetched or
   stored, and what the index held of them is removed. Restrictions change without a new version, so a
   page restricted later is seen by the next full sync (pages left out are re-checked on every run);
4. fetch them a few at a time ahead of the indexing (the fetching threads work while the model embeds) and
   hand them in batches to the index pipeline (`IndexPipeline`, the folder indexer's road too, one batch
   extracted and embedded while the one before is written): nothing is extracted or embedded when version
   and content hash are unchanged, texts embedded before come from the index's embedding cache, one call
   to the embedder serves the batch, and the index swaps each page's evidence atomically;
5. advance the cursor to this run's start and record the run.
A run killed midway leaves every page either old or new in the index; the cursor did not move, so the next
run looks at the same changes again and finishes the job. One bad page is a failure value, never a stop.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from filelock import FileLock, Timeout
from sqlalchemy.orm import Session, sessionmaker

from threadwise import metrics
from threadwise.connectors.confluence import (
    NOT_CONFIGURED,
    PAGE_ARCHIVED,
    PAGE_NOT_FOUND,
    ConfluenceClient,
    ConfluenceError,
    PageRef,
)
from threadwise.connectors.scope import SpaceScope
from threadwise.core.ingest.extract import extract_evidence
from threadwise.core.protocols import PageSource
from threadwise.core.types import Page, PageFailure, RestrictedPage
from threadwise.db.sync_tables import utcnow
from threadwise.index.indexer import Extract, IndexPipeline, PageLimits
from threadwise.index.store import EvidenceIndex, PageState
from threadwise.permissions.store import PermissionStore
from threadwise.sync.listing import pages_to_fetch, scoped_listing
from threadwise.sync.readers import read_permissions
from threadwise.sync.report import RunTally, SyncReport, breadcrumb
from threadwise.sync.store import SyncStore

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (pages done, pages to fetch) of the space being synced

CQL_OVERLAP = timedelta(hours=26)  # CQL reads dates in the token user's zone (UTC-12..+14), plus clock skew


class SpaceSyncer:
    """Syncs spaces into one index. Thread- and process-safe per space; different spaces may run at once."""

    def __init__(
        self,
        *,
        client: ConfluenceClient | None,
        index: EvidenceIndex,
        sessions: sessionmaker[Session],
        lock_dir: Path,
        extract: Extract = extract_evidence,
        overlap: timedelta = CQL_OVERLAP,
        fetch_workers: int = 4,
        batch_pages: int = 16,
        permissions: str = "open-pages",
        limits: PageLimits | None = None,
    ) -> None:
        """`client` None: Confluence is not configured; syncs fail with that reason, purging still works.
        `permissions`: THREADWISE_PERMISSIONS: `open-pages` (restricted pages are never indexed), `per-user`
        (every page is indexed and its readers are stored) or `off`."""
        self.client = client
        self.index = index
        self.store = SyncStore(sessions=sessions)
        self.readers = PermissionStore(sessions=sessions)  # who may read each page (per-user)
        self.lock_dir = Path(lock_dir)
        self.extract = extract
        self.overlap = overlap
        self.fetch_workers = fetch_workers
        self.batch_pages = batch_pages  # pages per call to the embedder
        self.permissions = permissions
        self.limits = limits or PageLimits()  # a page beyond them is indexed up to them (and logged)

    @contextmanager
    def locked(self, space: str, *, wait_s: float = 0.0) -> Iterator[None]:
        """Hold the space's lock; raises SyncBusyError when another sync holds it longer than `wait_s`."""
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.lock_dir / f"sync-{re.sub(r'[^A-Za-z0-9_~-]', '_', space)}.lock")
        try:
            lock.acquire(timeout=wait_s)
        except Timeout:
            raise SyncBusyError(f"a sync of space {space} is already running") from None
        try:
            yield
        finally:
            lock.release()

    def sync(
        self,
        scope: SpaceScope,
        *,
        full: bool = False,
        trigger: str = "manual",
        progress: Progress | None = None,
    ) -> SyncReport:
        """Bring the index up to date with the space; never raises for Confluence trouble or bad pages."""
        try:
            with self.locked(scope.space):
                return self._sync_locked(scope, full=full, trigger=trigger, progress=progress)
        except SyncBusyError as e:
            metrics.sync_run("busy", 0, 0, 0, 0, 0.0)
            return SyncReport(space=scope.space, full=full, status="busy", error=str(e))

    def purge(self, space: str, *, wait_s: float = 60.0) -> int:
        """Remove a space's evidence and sync state (waits for a running sync); returns pages removed."""
        with self.locked(space, wait_s=wait_s):
            removed = self.index.delete_space(space)
            self.index.flush()
            self.store.forget_space(space)
            self.readers.forget_space(space)
            return removed

    # ----- one run -----
    def _sync_locked(
        self, scope: SpaceScope, *, full: bool, trigger: str, progress: Progress | None
    ) -> SyncReport:
        space = scope.space
        run_id, after_crash = self.store.start_run(space, full=full, trigger=trigger)
        started = utcnow()
        run = RunTally(space=space)
        finished = False
        try:
            self._run(scope, full=full, started=started, run=run, progress=progress)
        except ConfluenceError as e:
            status, error = "failed", str(e)
        except BaseException as e:  # killed by an exception: record it, then let it go on
            self.store.finish_run(
                run_id, status="failed", counts=run.counts(), failures=run.failures, error=repr(e)
            )
            raise
        else:
            status, error = ("partial" if run.failures else "ok"), ""
            finished = True
        finally:
            if run.changed or after_crash or not finished:  # sweep leftovers, refresh BM25; a no-op otherwise
                self.index.flush()
        duration = self.store.finish_run(
            run_id, status=status, counts=run.counts(), failures=run.failures, error=error or None
        )
        report = SyncReport(
            space=space,
            full=full,
            status=status,
            counts=run.counts(),
            failures=tuple(run.failures),
            error=error,
            duration_s=duration,
            run_id=run_id,
            vectors=run.vectors,
            restricted=tuple(run.restricted),
        )
        log.info("sync %s", report.summary())
        c = report.counts
        metrics.sync_run(status, c.added, c.updated, c.deleted, c.failed, duration)
        return report

    def _run(
        self, scope: SpaceScope, *, full: bool, started: datetime, run: RunTally, progress: Progress | None
    ) -> None:
        space, client = scope.space, self.client
        if client is None:
            raise ConfluenceError(NOT_CONFIGURED)
        listing = scoped_listing(client, scope)
        run.pages = len(listing)
        indexed = self.index.page_states(space)
        breadcrumbs = self.store.breadcrumbs(space)

        gone = [pid for pid in indexed if pid not in listing]
        for pid in gone:
            self.index.delete_page(pid)
        run.deleted = len(gone)
        self.readers.forget_pages(gone)
        self.store.forget_pages(space, [pid for pid in breadcrumbs if pid not in listing])

        state = self.store.state(space)
        todo = pages_to_fetch(
            client, scope, listing, indexed, breadcrumbs, state, full=full, overlap=self.overlap
        )
        if self.permissions == "open-pages":
            checked = todo if state.permissions == self.permissions else list(listing.values())
            restricted = client.restricted_pages(checked, space=space, workers=self.fetch_workers)
            todo = self._leave_out(restricted, todo, indexed, run)
        elif self.permissions == "per-user":  # restricted pages too, with their readers, before their text
            self._record_readers(
                client, space, listing, todo, full=full or state.permissions != self.permissions
            )
        batch: list[tuple[PageRef, Page]] = []
        done = 0
        with IndexPipeline[list[tuple[PageRef, Page]]](
            self.index, extract=self.extract, counts=run.vectors, limits=self.limits
        ) as pipeline:
            for ref, page in self._fetched(client, todo, space):
                if isinstance(page, PageFailure):
                    self._count_failure(ref, page, indexed, run)
                    done += 1
                else:
                    batch.append((ref, page))
                if len(batch) >= self.batch_pages:
                    done += self._count_batches(pipeline.put([p for _, p in batch], batch), indexed, run)
                    batch = []
                if progress is not None:
                    progress(done, len(todo))
            if batch:
                done += self._count_batches(pipeline.put([p for _, p in batch], batch), indexed, run)
            done += self._count_batches(pipeline.finish(), indexed, run)
        if progress is not None:
            progress(done, len(todo))

        self.store.save_state(
            replace(
                state,
                cursor=started,
                last_full_sync_at=started if full else state.last_full_sync_at,
                retry_page_ids=tuple(f.page_id for f in run.failures),
                permissions=self.permissions,
                restricted=tuple(run.restricted),
            )
        )

    def _record_readers(
        self,
        client: ConfluenceClient,
        space: str,
        listing: dict[str, PageRef],
        todo: Sequence[PageRef],
        *,
        full: bool,
    ) -> None:
        """Store who may read the pages to fetch and those without stored readers (all pages: `full`), with the
        space's viewers and the groups involved; the permission sync keeps the rest current."""
        known = self.readers.page_ids(space)
        fetching = {ref.id for ref in todo}
        refs = [r for r in listing.values() if full or r.id in fetching or r.id not in known]
        perms = read_permissions(client, space, refs, workers=self.fetch_workers)
        self.readers.save(space, perms.readers, perms.viewers, perms.groups, perms.users, every_page=full)
        for problem in perms.problems:
            log.warning("permissions of %s: %s (treated as restricted)", space, problem)

    def _leave_out(
        self,
        restricted: Sequence[RestrictedPage],
        todo: Sequence[PageRef],
        indexed: dict[str, PageState],
        run: RunTally,
    ) -> list[PageRef]:
        """Restricted pages are not indexed at all: never fetched, and what the index held of them goes."""
        ids = {r.page_id for r in restricted}
        for pid in sorted(ids & indexed.keys()):
            self.index.delete_page(pid)
            run.deleted += 1
        self.store.forget_pages(run.space, sorted(ids))
        run.pages -= len(ids)
        run.restricted = list(restricted)
        return [ref for ref in todo if ref.id not in ids]

    def _fetched(
        self, client: PageSource, refs: Sequence[PageRef], space: str
    ) -> Iterator[tuple[PageRef, Page | PageFailure]]:
        """Pages in listing order, fetched by `fetch_workers` threads up to `8 × fetch_workers` pages ahead of
        the indexing: while the model embeds one batch, the next one arrives."""
        workers = max(1, self.fetch_workers)
        ahead: deque[tuple[PageRef, Future[Page | PageFailure]]] = deque()
        upcoming = iter(refs)
        with ThreadPoolExecutor(max_workers=workers) as pool:

            def submit() -> None:
                ref = next(upcoming, None)
                if ref is not None:
                    future = pool.submit(client.get_page, ref.id, space=space, ancestors=ref.ancestors)
                    ahead.append((ref, future))

            for _ in range(workers * 8):
                submit()
            while ahead:
                ref, future = ahead.popleft()
                submit()
                yield ref, future.result()

    def _count_failure(
        self, ref: PageRef, failure: PageFailure, indexed: dict[str, PageState], run: RunTally
    ) -> None:
        """A page that could not be fetched is a failure, or gone when it was deleted or archived since the
        listing."""
        if failure.reason in (PAGE_NOT_FOUND, PAGE_ARCHIVED):
            if ref.id in indexed:
                self.index.delete_page(ref.id)
                run.deleted += 1
            run.pages -= 1
            self.store.forget_pages(run.space, [ref.id])
            return
        run.failures.append(replace(failure, title=failure.title or ref.title))

    def _count_batches(
        self,
        finished: Sequence[tuple[Sequence[tuple[PageRef, Page]], Sequence[bool | PageFailure]]],
        indexed: dict[str, PageState],
        run: RunTally,
    ) -> int:
        """Count the batches the index pipeline has written, page by page; returns how many pages."""
        done = 0
        for batch, outcomes in finished:
            for (ref, page), outcome in zip(batch, outcomes, strict=True):
                if isinstance(outcome, PageFailure):
                    run.failures.append(replace(outcome, reason=f"unusable page: {outcome.reason}"))
                    continue
                if outcome:
                    if ref.id in indexed:
                        run.updated += 1
                    else:
                        run.added += 1
                self.store.save_breadcrumb(run.space, page.id, breadcrumb(page.ancestors))
            done += len(batch)
        return done


class SyncBusyError(RuntimeError):
    """Another sync of the same space holds its lock."""
