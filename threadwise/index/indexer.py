"""Bring an index in line with a set of pages: extract, embed only what changed, drop pages that are gone."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from threadwise.core.ingest.contextualize import ContextParts
from threadwise.core.ingest.extract import extract_many
from threadwise.core.types import Evidence, Page, PageFailure
from threadwise.index.store import EvidenceIndex

Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class IndexReport:
    pages: int = 0
    embedded: int = 0  # pages (re-)embedded
    unchanged: int = 0
    removed: int = 0
    failures: list[PageFailure] = field(default_factory=list)
    seconds: float = 0.0


def index_pages(
    index: EvidenceIndex,
    pages: Sequence[Page],
    *,
    parts: ContextParts | None = None,
    linearizer: str = "verbalized",
    index_tables: bool = True,
    index_rows: bool = True,
    remove_missing: bool = True,
    progress: Progress | None = None,
) -> IndexReport:
    """Index `pages`; a page whose version and content hash are unchanged is not re-embedded.

    With `remove_missing`, indexed pages not among `pages` are deleted (the folder is the whole truth).
    """
    started = time.perf_counter()
    report = IndexReport(pages=len(pages))
    todo = [p for p in pages if not index.is_current(p)]
    report.unchanged = len(pages) - len(todo)
    evidences, report.failures = extract_many(
        todo,
        parts=parts or ContextParts.from_name("ALL"),
        linearizer=linearizer,
        index_tables=index_tables,
        index_rows=index_rows,
    )
    by_page: dict[str, list[Evidence]] = defaultdict(list)
    for e in evidences:
        by_page[e.page_id].append(e)
    failed = {f.page_id for f in report.failures}
    todo = [p for p in todo if p.id not in failed]
    for done, page in enumerate(todo, start=1):
        report.embedded += index.put_page(page, by_page.get(page.id, []))
        if progress is not None:
            progress(done, len(todo))
    if remove_missing:
        # a page that failed to parse is still among `pages`: its previous evidence stays
        for gone in set(index.page_states()) - {p.id for p in pages}:
            index.delete_page(gone)
            report.removed += 1
    index.flush()
    report.seconds = time.perf_counter() - started
    return report
