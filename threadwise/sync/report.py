"""What a sync run counts while it goes, and the report it ends with (kept apart from the sync itself)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from threadwise.core.types import PageFailure, RestrictedPage
from threadwise.index.embedding_cache import EmbedCounts
from threadwise.sync.store import RunCounts


@dataclass(frozen=True)
class SyncReport:
    """What one sync of one space did. status: ok, partial (some pages failed), failed, busy."""

    space: str
    full: bool
    status: str
    counts: RunCounts = RunCounts()
    failures: tuple[PageFailure, ...] = ()
    error: str = ""
    duration_s: float = 0.0
    run_id: int | None = None
    # evidences written; of their vectors, how many were embedded, reused from the cache, shared by rows
    vectors: EmbedCounts = field(default_factory=EmbedCounts)
    restricted: tuple[RestrictedPage, ...] = ()  # left out under THREADWISE_PERMISSIONS=open-pages

    def summary(self) -> str:
        c, v = self.counts, self.vectors
        if self.status in ("failed", "busy"):
            return f"{self.space}: {self.status}: {self.error}"
        text = (
            f"{self.space}: {c.pages} pages, {c.added} added, {c.updated} updated, {c.deleted} deleted, "
            f"{c.unchanged} unchanged, {c.failed} failed; {v.embedded} texts embedded, "
            f"{v.cached + v.shared} reused ({self.duration_s:.1f}s)"
        )
        if self.restricted:
            text += f"; {len(self.restricted)} left out as restricted"
        text += "".join(f"\n  failed: {f.title or f.page_id}: {f.reason}" for f in self.failures)
        return text + "".join(f"\n  left out: {r.title or r.page_id}: {r.reason}" for r in self.restricted)


@dataclass
class RunTally:
    """Counters of a run in progress."""

    space: str
    pages: int = 0
    added: int = 0
    updated: int = 0
    deleted: int = 0

    def __post_init__(self) -> None:
        self.failures: list[PageFailure] = []
        self.restricted: list[RestrictedPage] = []
        self.vectors = EmbedCounts()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.deleted)

    def counts(self) -> RunCounts:
        failed = len(self.failures)
        unchanged = max(0, self.pages - self.added - self.updated - failed)
        return RunCounts(self.pages, self.added, self.updated, self.deleted, unchanged, failed)


def breadcrumb(ancestors: Sequence[str]) -> str:
    return " / ".join(ancestors)
