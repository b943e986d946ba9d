"""Feeding a generated wiki to the index the way the sync does (bench-only: the package never needs it)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

from threadwise.core.types import Page, PageFailure
from threadwise.index.embedding_cache import EmbedCounts
from threadwise.index.indexer import BATCH_PAGES, IndexPipeline
from threadwise.index.store import EvidenceIndex


def index_stream(
    index: EvidenceIndex, pages: Iterable[Page], *, counts: EmbedCounts | None = None
) -> list[bool | PageFailure]:
    """`pages` through `IndexPipeline`, `BATCH_PAGES` at a time, without extraction options, progress or
    removals (the benches feed the wikis they generate this way); the outcomes in order."""
    upcoming = iter(pages)
    batches = iter(lambda: list(islice(upcoming, BATCH_PAGES)), [])
    with IndexPipeline[None](index, counts=counts) as pipeline:
        return [outcome for _, outcomes in pipeline.run((b, None) for b in batches) for outcome in outcomes]
