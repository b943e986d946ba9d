"""Dense search within a scope, against numpy's exact ranking of the same vectors: whether the scope is
applied after an unfiltered search (it lists every indexed space) or by Chroma (it leaves a space out, or the
pages it hides fill the top), the hits are the nearest rows the scope allows."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from tests.test_index import evidences, page
from threadwise.core.types import Evidence, Scope
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder

QUESTION = "firmware update for the docking station"


@dataclass
class Wiki:
    index: EvidenceIndex
    written: dict[str, list[Evidence]]

    def dense(self, k: int, scope: Scope | None) -> list[str]:
        vector = self.index.embedder.embed_query(QUESTION)
        return [h.evidence.id for h in self.index.search_dense(vector, k, scope)]

    def exact(self, k: int, allowed: set[str]) -> list[str]:
        """The k evidences of `allowed` pages nearest the question by numpy's cosine, over the same vectors."""
        candidates = [e for pid in sorted(allowed) for e in self.written[pid]]
        embedder = self.index.embedder
        vectors = embedder.embed([e.context_text for e in candidates])
        order = np.argsort(-(vectors @ embedder.embed_query(QUESTION)), kind="stable")
        return [candidates[i].id for i in order[:k]]


@pytest.fixture
def wiki(tmp_path: Path) -> Wiki:
    """Two spaces; page H (in ENG) says ten times what the question asks, in slightly different words."""
    index = EvidenceIndex(directory=tmp_path / "idx", embedder=HashingEmbedder())
    models = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett"]
    near = [f"firmware update for the docking station {m}" + " model" * i for i, m in enumerate(models)]
    pages = [
        (page("H", "", space="ENG", title="Dock firmware"), near),
        (page("E", "", space="ENG", title="Build"), ["the build runs nightly", "firmware of the build farm"]),
        (page("O", "", space="OPS", title="On-call"), ["docking station for the on-call desk", "pager rota"]),
        (page("F", "", space="OPS", title="Fleet"), ["laptop fleet update policy", "station wagon rental"]),
    ]
    written = {p.id: evidences(p, texts) for p, texts in pages}
    for p, _ in pages:
        assert index.put_page(p, written[p.id])
    return Wiki(index, written)


def test_a_scope_listing_every_indexed_space_finds_what_no_scope_finds(wiki: Wiki) -> None:
    everything = wiki.dense(6, None)
    assert everything == wiki.exact(6, {"H", "E", "O", "F"})
    assert wiki.dense(6, Scope.of(["OPS", "ENG"])) == everything
    # a space with no pages changes nothing
    assert wiki.dense(6, Scope.of(["ENG", "OPS", "HR"])) == everything


def test_hidden_pages_never_come_back_even_when_they_fill_the_top(wiki: Wiki) -> None:
    assert {i.split(":")[0] for i in wiki.dense(5, None)} == {"H"}  # unfiltered, the top is all H
    hidden = Scope.of(["ENG", "OPS"], ["H"])
    # searched unfiltered, 10 rows deeper (H has 10 evidences), and filtered here
    assert wiki.dense(2, hidden) == wiki.exact(2, {"E", "O", "F"})
    assert wiki.dense(8, hidden) == wiki.exact(8, {"E", "O", "F"})  # all 16 rows seen: the 6 allowed
    assert wiki.dense(3, Scope.of(None, ["O"])) == wiki.exact(3, {"H", "E", "F"})
    assert wiki.dense(6, Scope.of(None, ["H", "O"])) == wiki.exact(6, {"E", "F"})
    # the hidden rows are more than three times those asked for: Chroma filters
    assert wiki.dense(1, hidden) == wiki.exact(1, {"E", "O", "F"})


def test_chroma_filters_when_the_hidden_pages_hold_more_rows_than_the_manifest_counts(wiki: Wiki) -> None:
    """As while a hidden page is rewritten (its new rows beside the old): the deeper search comes back short."""
    state = wiki.index.page_states()["H"]
    wiki.index.manifest.put(replace(state, evidence_count=1))
    assert wiki.dense(2, Scope.of(None, ["H"])) == wiki.exact(2, {"E", "O", "F"})


def test_a_scope_leaving_a_space_out_finds_only_its_spaces(wiki: Wiki) -> None:
    assert wiki.dense(3, Scope.of(["OPS"])) == wiki.exact(3, {"O", "F"})
    assert wiki.dense(3, Scope.of(["ENG"], ["H"])) == wiki.exact(3, {"E"})
