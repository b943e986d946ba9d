"""The whole configured pipeline against the independent OpenAI-shaped inference server in ../shared/fakes
(written from OpenAI's, TEI's and Cohere's documentation by another hand): embeddings, re-ranking and the
LLM answerer and completer all go through the real `openai` client and our HTTP adapters to it, over
127.0.0.1, and the product answers, abstains and explains as it does on the embedded default."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.db.conversations import ThreadKey
from threadwise.index.indexer import index_pages
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

KEY = "sk-local-test"


@pytest.fixture(scope="module")
def inference(shared_fakes: Callable[[str], ModuleType]) -> Iterator[str]:
    module = shared_fakes("fake_inference")
    server, root = module.start(
        model="hashing", embeddings_key=KEY, rerank_key=KEY, chat_key=KEY, chat_chunk_ms=0
    )
    yield root
    server.shutdown()


def calls(root: str, kind: str) -> list[dict[str, Any]]:
    reply = requests.get(f"{root}/__calls", params={"kind": kind}, timeout=5)
    reply.raise_for_status()
    return list(reply.json()["calls"])


@pytest.fixture
def app(inference: str, tmp_path: Path) -> Threadwise:
    requests.delete(f"{inference}/__calls", timeout=5)
    env = {
        "THREADWISE_EMBEDDINGS_BASE_URL": f"{inference}/v1",
        "THREADWISE_EMBEDDINGS_MODEL": "hashing",
        "THREADWISE_EMBEDDINGS_API_KEY": KEY,
        "THREADWISE_RERANK_BASE_URL": inference,
        "THREADWISE_RERANK_API": "cohere",
        "THREADWISE_RERANK_API_KEY": KEY,
        "THREADWISE_LLM_BASE_URL": f"{inference}/v1",
        "THREADWISE_LLM_API_KEY": KEY,
        "THREADWISE_LLM_MODEL": "local-chat",
        "THREADWISE_SIMILARITY_EMBEDDER": "hashing",
    }
    built = Threadwise(settings=load_settings(env=env, data_dir=tmp_path))
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    report = index_pages(built.index, pages)
    assert report.embedded > 0 and not report.failures
    return built


def test_an_answer_through_the_vendor_shaped_servers_cites_its_source(
    app: Threadwise, inference: str
) -> None:
    key = ThreadKey("cli", "local", "c", "vendor-1")
    view = app.conversations.ask(key, "Who is the primary on-call engineer for a severity 1 incident?")
    assert view.error is None and not view.not_found
    assert view.cited == [1] and view.answer.endswith("[Source 1]")
    cited = view.sources[0]
    # the server quotes source 1 (as the prompt gave it, with its context): the cited evidence's own words
    assert cited.text[:60] in view.answer
    assert calls(inference, "embeddings") and calls(inference, "rerank")
    answers = [c for c in calls(inference, "chat") if c["task"] == "answer"]
    assert answers and all(c["status"] == 200 for c in answers)


def test_what_the_wiki_does_not_hold_is_not_found(app: Threadwise) -> None:
    view = app.conversations.ask(ThreadKey("cli", "local", "c", "vendor-2"), "What is the capital of France?")
    assert view.error is None and view.not_found and not view.cited


def test_explain_reanswers_through_the_server_and_attributes(app: Threadwise, inference: str) -> None:
    key = ThreadKey("cli", "local", "c", "vendor-3")
    view = app.conversations.ask(key, "Who is the primary on-call engineer for a severity 1 incident?")
    assert view.error is None and not view.not_found
    before = len([c for c in calls(inference, "chat") if c["task"] == "answer"])
    explained = app.conversations.explain(view.turn_id)
    assert explained.error is None and explained.result
    after = len([c for c in calls(inference, "chat") if c["task"] == "answer"])
    assert after > before  # the counterfactual answers were asked of the LLM
    assert "%" in explained.text
