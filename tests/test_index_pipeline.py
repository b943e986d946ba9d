"""The index pipeline: batch n+1 is embedded in a worker thread while batch n is written, and the index ends
up as if the pages had been indexed one after the other."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.types import Page
from threadwise.index.indexer import IndexPipeline, index_page
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, noting which thread each call ran on; `fail_on` makes that call raise."""

    def __init__(self, *, fail_on: int | None = None) -> None:
        super().__init__()
        self.threads: list[str] = []
        self.fail_on = fail_on

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        if len(self.threads) == self.fail_on:
            raise RuntimeError("the embeddings server went away")
        return super().embed(texts)


def sample_pages() -> list[Page]:
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    assert len(pages) >= 6
    return pages


def rows(index: EvidenceIndex) -> dict[str, tuple[int, str, int]]:
    return {pid: (s.version, s.content_hash, s.evidence_count) for pid, s in index.page_states().items()}


def test_batches_are_embedded_ahead_and_written_in_order(tmp_path: Path) -> None:
    pages = sample_pages()
    batches = [pages[i : i + 2] for i in range(0, len(pages), 2)]
    embedder = RecordingEmbedder()
    piped = EvidenceIndex(directory=tmp_path / "piped", embedder=embedder)
    with IndexPipeline[int](piped) as pipeline:
        finished = list(pipeline.run((batch, n) for n, batch in enumerate(batches)))
    assert [tag for tag, _ in finished] == list(range(len(batches)))
    assert all(outcomes == [True, True] for _, outcomes in finished)
    assert embedder.threads and all(name.startswith("index-ahead") for name in embedder.threads)

    one_by_one = EvidenceIndex(directory=tmp_path / "one-by-one", embedder=HashingEmbedder())
    for page in pages:
        index_page(one_by_one, page)
    assert rows(piped) == rows(one_by_one)
    piped.flush()
    one_by_one.flush()
    question = HashingEmbedder().embed_query("Who gets paged for a SEV2 incident?")
    assert [h.evidence.id for h in piped.search_dense(question, 5)] == [
        h.evidence.id for h in one_by_one.search_dense(question, 5)
    ]


def test_a_failing_batch_stops_the_pipeline_and_keeps_what_was_written(tmp_path: Path) -> None:
    pages = sample_pages()
    batches = [pages[i : i + 2] for i in range(0, len(pages), 2)]
    index = EvidenceIndex(directory=tmp_path, embedder=RecordingEmbedder(fail_on=3))
    with pytest.raises(RuntimeError, match="went away"), IndexPipeline[int](index) as pipeline:
        for n, batch in enumerate(batches):
            pipeline.put(batch, n)
        pipeline.finish()
    written = {p.id for batch in batches[:2] for p in batch}
    assert set(index.page_states()) == written
    assert all(index.are_current(batches[0] + batches[1]))
    assert not any(t.name.startswith("index-ahead") for t in threading.enumerate())
