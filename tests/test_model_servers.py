"""The embeddings and re-rank server adapters, driven through the real `openai` client against a local server
on 127.0.0.1 that computes real vectors (the hashing embedder), in both re-rank wire shapes."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.support.fake_model_server import FakeModelServer
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.protocols import Embedder, ModelServerError, Reranker
from threadwise.db.conversations import ThreadKey
from threadwise.index.indexer import index_pages
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder, how_to_keep
from threadwise.models.server_embedder import ServerEmbedder
from threadwise.models.server_reranker import ServerReranker
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

TEXTS = [f"text number {i}: the TPM version is {i}.0 on laptop model {i * 7}" for i in range(10)]


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as started:
        yield started


def embedder(server: FakeModelServer, **options: object) -> ServerEmbedder:
    return ServerEmbedder(model="hashing-256", base_url=server.url, **options)  # type: ignore[arg-type]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_vectors_through_the_server_equal_in_process_ones_in_order(server: FakeModelServer) -> None:
    remote = embedder(server, batch_size=3, concurrency=2)
    vectors = remote.embed(TEXTS)
    assert isinstance(remote, Embedder) and remote.dim == 256  # learnt from the reply
    assert np.allclose(vectors, HashingEmbedder().embed(TEXTS), atol=1e-6)
    embedding_requests = [r for r in server.requests if r.path == "/v1/embeddings"]
    assert sorted(len(r.body["input"]) for r in embedding_requests) == [
        1,
        3,
        3,
        3,
    ]  # batches of 3, one left over
    assert all(
        r.body["model"] == "hashing-256" and r.body["encoding_format"] == "float" for r in embedding_requests
    )
    assert np.allclose(remote.embed_query(TEXTS[4]), vectors[4], atol=1e-6)  # no prefixes: symmetric
    assert remote.symmetric and remote.embed([]).shape == (0, 256)


def test_concurrency_is_bounded(server: FakeModelServer) -> None:
    server.delay = 0.05  # each request takes a while, so parallel ones overlap
    remote = embedder(server, batch_size=1, concurrency=3)
    remote.embed(TEXTS)
    assert server.max_overlap() == 3
    server.requests.clear()
    embedder(server, batch_size=1, concurrency=1).embed(TEXTS[:4])
    assert server.max_overlap() == 1


def test_prefixes_dimensions_and_the_name(server: FakeModelServer) -> None:
    remote = embedder(server, query_prefix="query: ", passage_prefix="passage: ", dimensions=64)
    assert remote.embed(["a passage"]).shape == (1, 64)
    assert remote.embed_query("a question").shape == (64,)
    inputs = [r.body["input"] for r in server.requests]
    assert inputs == [["passage: a passage"], ["query: a question"]]
    assert all(r.body["dimensions"] == 64 for r in server.requests)
    assert not remote.symmetric  # Explain compares texts with another model then
    assert remote.name.startswith(f"hashing-256@{server.url},dim=64,prefixes=")
    assert how_to_keep(remote.name).startswith(
        f"THREADWISE_EMBEDDINGS_MODEL=hashing-256 THREADWISE_EMBEDDINGS_BASE_URL={server.url} "
        "THREADWISE_EMBEDDINGS_DIMENSIONS=64"
    )


def test_retries_on_429_and_5xx_then_succeeds(server: FakeModelServer) -> None:
    server.fail(429, times=1, retry_after=0.01)
    server.fail(503, times=1, retry_after=0.01)
    vectors = embedder(server, max_retries=3).embed(TEXTS[:2])
    assert vectors.shape == (2, 256)
    assert [r.status for r in server.requests] == [429, 503, 200]


def test_failures_name_the_url_and_never_the_credentials(server: FakeModelServer) -> None:
    port = closed_port()
    unreachable = ServerEmbedder(
        model="m", base_url=f"http://alice:s3cret@127.0.0.1:{port}/v1?api-key=k3y", max_retries=0
    )
    with pytest.raises(ModelServerError) as caught:
        unreachable.embed(["x"])
    message = str(caught.value)
    assert f"http://***@127.0.0.1:{port}/v1?***" in message and "THREADWISE_EMBEDDINGS_BASE_URL" in message
    assert "s3cret" not in message and "k3y" not in message and "alice" not in message

    server.api_key = "right"
    wrong_key = ServerEmbedder(model="m", base_url=server.url, api_key="wrong", max_retries=0)
    with pytest.raises(ModelServerError, match="THREADWISE_EMBEDDINGS_API_KEY"):
        wrong_key.embed(["x"])
    assert ServerEmbedder(model="m", base_url=server.url, api_key="right").embed(["x"]).shape == (1, 256)

    server.api_key = ""
    server.fail(500, times=None)
    with pytest.raises(ModelServerError, match="HTTP 500") as failed:
        embedder(server, max_retries=1).embed(["x"])
    assert "after 2 attempts" in str(failed.value)


@pytest.mark.parametrize("api", ["cohere", "tei"])
@pytest.mark.parametrize("root", [False, True])
def test_rerank_scores_in_both_wire_shapes(server: FakeModelServer, api: str, root: bool) -> None:
    base_url = server.root if root else server.url  # TEI and Infinity serve /rerank, vLLM and Jina /v1/rerank
    reranker = ServerReranker(model="hashing-ce", base_url=base_url, api=api, batch_size=2)
    assert isinstance(reranker, Reranker)
    query, docs = "TPM version", TEXTS[:5]
    scores = reranker.score(query, docs)
    vectors = HashingEmbedder().embed([query, *docs])
    assert np.allclose(scores, vectors[1:] @ vectors[0], atol=1e-5)  # each document's own score, in order
    requests = server.requests
    assert [r.path for r in requests] == [
        "/rerank" if root else "/v1/rerank"
    ] * 3  # 5 documents in batches of 2
    key = "texts" if api == "tei" else "documents"
    assert sorted(len(r.body[key]) for r in requests) == [1, 2, 2]
    assert reranker.score(query, []) == []


def test_rerank_refuses_a_partial_reply(server: FakeModelServer) -> None:
    reranker = ServerReranker(model="m", base_url=server.url, max_retries=0)
    original = server.rerank_reply
    server.rerank_reply = lambda body: original({**body, "top_n": 1})  # type: ignore[method-assign]
    with pytest.raises(ModelServerError, match="scored 1 of 3"):
        reranker.score("q", ["a", "b", "c"])


def test_the_index_records_the_server_embedder_and_refuses_another(
    server: FakeModelServer, tmp_path: Path
) -> None:
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    index = EvidenceIndex(directory=tmp_path / "idx", embedder=embedder(server))
    report = index_pages(index, pages)
    assert report.embedded == len(pages) and not report.failures
    hits = index.search_dense(index.embedder.embed_query("on-call severity 1 incident"), 3)
    assert hits and server.texts_embedded >= report.embedded

    other = ServerEmbedder(model="another-model", base_url=server.url)
    with pytest.raises(ValueError) as refused:
        EvidenceIndex(directory=tmp_path / "idx", embedder=other)
    message = str(refused.value)
    assert f"THREADWISE_EMBEDDINGS_MODEL=hashing-256 THREADWISE_EMBEDDINGS_BASE_URL={server.url}" in message
    assert "sync --full" in message


def test_wiring_answers_through_both_servers(server: FakeModelServer, tmp_path: Path) -> None:
    env = {
        "THREADWISE_EMBEDDINGS_BASE_URL": server.url,
        "THREADWISE_EMBEDDINGS_MODEL": "hashing-256",
        "THREADWISE_EMBEDDINGS_CONCURRENCY": "2",
        "THREADWISE_EMBEDDINGS_MAX_RETRIES": "0",
        "THREADWISE_RERANK_BASE_URL": server.root,
        "THREADWISE_RERANK_API": "tei",
        "THREADWISE_SIMILARITY_EMBEDDER": "hashing",
    }
    app = Threadwise(settings=load_settings(env=env, data_dir=tmp_path))
    assert isinstance(app.embedder, ServerEmbedder) and app.embedder.server.concurrency == 2
    assert isinstance(app.reranker, ServerReranker) and app.reranker.api == "tei"
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    index_pages(app.index, pages)
    view = app.conversations.ask(ThreadKey("cli", "l", "c", "t"), "Who is on call for a severity 1 incident?")
    assert view.error is None and not view.not_found and view.cited
    assert any(r.path == "/rerank" for r in server.requests)

    server.fail(503, times=None)  # the servers go down: the user is told, no traceback
    down = app.conversations.ask(ThreadKey("cli", "l", "c", "t2"), "Who approves vacation?")
    # users are not told where the internal servers run (issue 18); the log and the trace's error say what failed
    assert down.error and "search models" in down.answer and "127.0.0.1" not in down.answer
    assert "embeddings server" in down.error and "127.0.0.1" not in down.error


def test_wiring_refuses_two_embedders_at_once(tmp_path: Path) -> None:
    env = {"THREADWISE_EMBEDDER": "e5", "THREADWISE_EMBEDDINGS_BASE_URL": "http://127.0.0.1:9/v1"}
    with pytest.raises(ValueError, match="both set"):
        _ = Threadwise(settings=load_settings(env=env, data_dir=tmp_path)).embedder
    env = {"THREADWISE_EMBEDDINGS_BASE_URL": "http://127.0.0.1:9/v1"}
    with pytest.raises(ValueError, match="THREADWISE_EMBEDDINGS_MODEL"):
        _ = Threadwise(settings=load_settings(env=env, data_dir=tmp_path)).embedder
    env = {"THREADWISE_EMBEDDINGS_MODEL": "m", "THREADWISE_EMBEDDINGS_CONCURRENCY": "0"}
    with pytest.raises(ValueError, match="THREADWISE_EMBEDDINGS_CONCURRENCY='0' must be at least 1"):
        _ = Threadwise(settings=load_settings(env=env, data_dir=tmp_path)).embedder
    env = {"THREADWISE_RERANK_BASE_URL": "http://127.0.0.1:9", "THREADWISE_RERANK_API": "soap"}
    with pytest.raises(ValueError, match="unknown re-rank API 'soap'"):
        _ = Threadwise(settings=load_settings(env=env, data_dir=tmp_path)).reranker
