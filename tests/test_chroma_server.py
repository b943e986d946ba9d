"""The index's vectors on a real `chroma run` server (THREADWISE_CHROMA_URL) instead of the data folder."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import chromadb
import pytest

from tests.support.servers import free_port
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.retrieve.retriever import Retriever
from threadwise.db.conversations import ThreadKey
from threadwise.index.chroma_store import ChromaServer
from threadwise.index.indexer import index_pages
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise


def test_index_and_retrieve_through_a_chroma_server(chroma_url: str, tmp_path: Path) -> None:
    collection = f"evidence-{uuid.uuid4().hex[:8]}"
    index = EvidenceIndex(
        directory=tmp_path / "idx",
        embedder=HashingEmbedder(),
        collection=collection,
        chroma_server=ChromaServer(url=chroma_url),
    )
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    report = index_pages(index, pages)
    assert report.embedded == len(pages) and not report.failures
    assert not (tmp_path / "idx" / "chroma").exists()  # the vectors are on the server, not in the folder

    host, port = chroma_url.removeprefix("http://").split(":")
    on_server = chromadb.HttpClient(host=host, port=int(port)).get_collection(collection)
    assert on_server.count() == index.count() > 0

    retriever = Retriever(index=index, embedder=index.embedder)
    found = retriever.retrieve("Who is on call for a severity 1 incident?")
    assert "on-call" in found.evidences[0].page_title.lower()
    dense = index.search_dense(index.embedder.embed_query("severity 1 incident on-call rotation"), 3)
    assert dense and all(hit.evidence.page_id for hit in dense)

    # an edited page switches on the server too: its old rows go
    edited = replace(pages[0], version=pages[0].version + 1, body="<p>Replaced.</p>")
    index_pages(index, [edited, *pages[1:]])
    assert on_server.count() == index.count()
    assert {m["page_hash"] for m in on_server.get(where={"page_id": edited.id})["metadatas"] or []} == {
        edited.content_hash
    }


def test_wiring_uses_the_chroma_server_and_an_unreachable_one_is_named(
    chroma_url: str, tmp_path: Path
) -> None:
    collection = f"w{uuid.uuid4().hex[:8]}"
    env = {
        "THREADWISE_EMBEDDER": "hashing",
        "THREADWISE_CHROMA_URL": chroma_url,
        "THREADWISE_CHROMA_TOKEN": "t0k",
        "THREADWISE_CHROMA_COLLECTION": collection,
    }
    app = Threadwise(settings=load_settings(env=env, data_dir=tmp_path))
    assert app.index.collection == collection
    assert app.index.chroma_server == ChromaServer(url=chroma_url, token="t0k")
    assert "t0k" not in repr(app.index.chroma_server)
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    index_pages(app.index, pages)
    view = app.conversations.ask(
        ThreadKey("cli", "l", "c", "t"), "What is Alice's action item from the October 14 meeting?"
    )
    assert view.error is None and view.cited

    port = free_port()
    down = EvidenceIndex(
        directory=tmp_path / "down",
        embedder=HashingEmbedder(),
        chroma_server=ChromaServer(url=f"http://127.0.0.1:{port}", token="secret"),
    )
    with pytest.raises(ConnectionError) as caught:
        down.search_dense(HashingEmbedder().embed_query("x"), 3)
    assert f"http://127.0.0.1:{port}" in str(caught.value) and "secret" not in str(caught.value)
