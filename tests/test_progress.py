"""Progress of long commands: a bar on a terminal, periodic lines elsewhere."""

from __future__ import annotations

import io
from pathlib import Path

from threadwise.cli.progress import ProgressBar
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.index.indexer import index_pages
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder


def test_not_a_terminal_prints_a_line_now_and_then_and_one_at_the_end() -> None:
    out = io.StringIO()
    bar = ProgressBar("Syncing DOCS", stream=out, interval_s=3600)
    for done in range(1, 101):
        bar(done, 100)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # the first call, then the end: not a line per page
    assert lines[0].startswith("Syncing DOCS: 1/100 pages, ") and "pages/s" in lines[0] and "ETA" in lines[0]
    assert lines[1].startswith("Syncing DOCS: 100/100 pages, ") and "\r" not in out.getvalue()
    bar(100, 100)  # finished: nothing more
    assert len(out.getvalue().splitlines()) == 2


def test_a_terminal_gets_one_bar_redrawn_in_place() -> None:
    out = io.StringIO()
    bar = ProgressBar("Indexing docs", stream=out, terminal=True)
    bar(0, 4)
    bar(4, 4)
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "[" + "█" * 24 + "] 4/4 pages" in text


def test_indexing_reports_its_start_so_a_rate_is_measured_from_it(tmp_path: Path) -> None:
    pages, _failures = load_pages(SAMPLE_WIKI_DIR)
    index = EvidenceIndex(directory=tmp_path / "index", embedder=HashingEmbedder())
    seen: list[tuple[int, int]] = []
    index_pages(index, pages, progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, len(pages)) and seen[-1] == (len(pages), len(pages))
