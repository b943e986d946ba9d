"""BGE-M3 and bge-reranker adapters through FlagEmbedding, on tiny model folders built in the test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

# `make test` installs the [bge] extra; a default install (no torch) skips these instead of failing
pytest.importorskip("FlagEmbedding", reason="the [bge] extra (torch, FlagEmbedding) is not installed")

from tests.support.tiny_models import build_tiny_models
from threadwise.core.retrieve.retriever import Retriever
from threadwise.core.types import Evidence
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import BGEM3Embedder
from threadwise.models.rerank import FlagCrossEncoder
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("models"))


def test_bge_m3_embeds_unit_vectors_from_a_local_folder(tiny: tuple[Path, Path]) -> None:
    embedder = BGEM3Embedder(model=str(tiny[0]), device="cpu")
    vectors = embedder.embed(["the tpm version", "dell bios", "the tpm version"])
    assert vectors.shape == (3, 32) and embedder.dim == 32  # the dimension comes from the model's config
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[2], atol=1e-5)
    assert embedder.embed([]).shape == (0, 32)


def test_reranker_reorders_the_fused_list(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    embedder = BGEM3Embedder(model=str(tiny[0]), device="cpu")
    reranker = FlagCrossEncoder(model=str(tiny[1]), device="cpu")
    index = EvidenceIndex(directory=tmp_path, embedder=embedder)
    from threadwise.core.types import Page

    page = Page(id="1", space="S", title="Tests", url="u", body="x")
    texts = ["the tpm version is 2.0", "dell optiplex bios 1.14.0", "vacation days per year"]
    evidences = [
        Evidence(
            id=f"1:{i}",
            page_id="1",
            space="S",
            page_title="Tests",
            url="u",
            page_version=1,
            kind="passage",
            position=i,
            text=t,
            context_text=t,
        )
        for i, t in enumerate(texts)
    ]
    index.put_page(page, evidences)
    got = Retriever(index=index, embedder=embedder, reranker=reranker).retrieve("tpm version")
    assert got.reranked and len(got.reranked) == len(got.fused)
    scores = reranker.score("tpm version", [e.context_text for e in got.evidences])
    assert scores == sorted(scores, reverse=True)  # the final order is the cross-encoder's
    assert [h.evidence_id for h in got.reranked] == [e.id for e in got.evidences]


def test_settings_choose_the_flag_models(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    env = {"THREADWISE_EMBEDDER_MODEL": str(tiny[0]), "THREADWISE_RERANKER_MODEL": str(tiny[1])}
    app = Threadwise(settings=load_settings(env=env, data_dir=tmp_path))
    assert isinstance(app.embedder, BGEM3Embedder) and isinstance(app.reranker, FlagCrossEncoder)
    assert app.pipeline.config["embedder"] == "bge-m3"
