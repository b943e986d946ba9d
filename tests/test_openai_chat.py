"""OpenAIChat through the real `openai` client against the local fake server: replies, retries, clear errors."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.llm import chat_for, unused_port
from threadwise.core.protocols import ChatError
from threadwise.models.llm_settings import (
    LOCAL_PLACEHOLDER_KEY,
    LLMSettings,
    llm_settings_from_env,
    make_chat,
)
from threadwise.models.openai_chat import OpenAIChat

HELLO = [{"role": "user", "content": "Hello?"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_scripted_reply_and_the_exact_request_sent(server: FakeOpenAI) -> None:
    server.push("  Paris [Source 1]  ")
    reply = chat_for(server).chat([{"role": "system", "content": "Be brief."}, *HELLO], max_tokens=50)
    assert reply == "Paris [Source 1]"
    (request,) = server.requests
    assert request.body["model"] == "fake-model"
    assert request.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 50
    assert request.headers["authorization"] == "Bearer sk-test"


def test_rate_limit_is_retried_honouring_retry_after(server: FakeOpenAI) -> None:
    server.fail(429, retry_after=0.01)
    server.push("after the wait")
    assert chat_for(server).chat(HELLO) == "after the wait"
    assert [r.status for r in server.requests] == [429, 200]
    assert server.requests[1].headers["x-stainless-retry-count"] == "1"


def test_persistent_server_error_becomes_a_clear_chat_error(server: FakeOpenAI) -> None:
    server.fail(500, times=None, retry_after=0.01)
    with pytest.raises(ChatError, match=r"HTTP 500 after 2 attempts") as caught:
        chat_for(server).chat(HELLO)
    assert "fake-model" in str(caught.value) and server.url in str(caught.value)
    assert len(server.requests) == 2


def test_persistent_rate_limit_says_so(server: FakeOpenAI) -> None:
    server.fail(429, times=None, retry_after=0.01)
    with pytest.raises(ChatError, match=r"Rate limited .* \(HTTP 429\), still after 2 attempts"):
        chat_for(server).chat(HELLO)


def test_timeout_becomes_chat_error(server: FakeOpenAI) -> None:
    server.stall(5.0, times=None)
    with pytest.raises(ChatError, match=r"No answer from .* within 0.3 s"):
        chat_for(server, timeout=0.3, max_retries=0).chat(HELLO)
    assert len(server.requests) == 1


def test_wrong_key_names_the_key_problem_and_is_not_retried(server: FakeOpenAI) -> None:
    with pytest.raises(ChatError, match=r"API key was rejected .* \(HTTP 401\)") as caught:
        chat_for(server, api_key="sk-wrong").chat(HELLO)
    assert "sk-wrong" not in str(caught.value)
    assert len(server.requests) == 1


def test_unreachable_endpoint() -> None:
    port = unused_port()
    chat = OpenAIChat(
        model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", timeout=0.3, max_retries=0
    )
    with pytest.raises(ChatError, match=rf"Cannot reach the language model m at http://127.0.0.1:{port}/v1"):
        chat.chat(HELLO)


def test_unknown_model_or_path(server: FakeOpenAI) -> None:
    with pytest.raises(ChatError, match=r"Not found.*HTTP 404.*ends in /v1"):
        chat_for(server, base_url=server.root).chat(HELLO)  # base URL without /v1


def test_model_that_refuses_max_tokens_is_adapted(server: FakeOpenAI) -> None:
    def reasoning_model(body: dict) -> str:
        return "ok" if "max_completion_tokens" in body else "unexpected"

    server.respond = reasoning_model
    server.fail(400, message="Unsupported parameter: 'max_tokens' is not supported with this model.")
    assert chat_for(server).chat(HELLO, max_tokens=20) == "ok"
    assert "max_tokens" in server.requests[0].body and server.requests[1].body["max_completion_tokens"] == 20


def test_azure_deployment_path(server: FakeOpenAI) -> None:
    server.push("from azure")
    chat = OpenAIChat(
        model="my-deployment", base_url=server.root, api_key="sk-test", azure_api_version="2024-10-21"
    )
    assert chat.chat(HELLO) == "from azure"
    (request,) = server.requests
    assert request.path == "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"
    assert request.headers["api-key"] == "sk-test"


def test_one_instance_serves_many_threads_at_once(server: FakeOpenAI) -> None:
    server.delay = 0.2
    server.respond = lambda body: body["messages"][0]["content"].upper()
    chat = chat_for(server)
    with ThreadPoolExecutor(max_workers=6) as pool:
        replies = list(pool.map(lambda i: chat.chat([{"role": "user", "content": f"q{i}"}]), range(6)))
    assert replies == [f"Q{i}" for i in range(6)]
    assert len(server.requests) == 6 and server.max_overlap() > 1


# -- settings from the environment -------------------------------------------------------------------------


def test_no_llm_configured() -> None:
    assert llm_settings_from_env({}) is None
    assert llm_settings_from_env({"THREADWISE_LLM_MODEL": "gpt-4o"}) is None
    assert llm_settings_from_env({"OPENAI_API_KEY": "sk-x", "THREADWISE_LLM": "off"}) is None


def test_openai_key_alone_configures_every_role() -> None:
    settings = llm_settings_from_env({"OPENAI_API_KEY": "sk-x"})
    assert settings is not None and set(settings) == {"completion", "answer", "counterfactual", "judge"}
    assert settings["answer"] == LLMSettings(model="gpt-4o-mini", api_key="sk-x")
    assert "sk-x" not in repr(settings["answer"])


def test_role_overrides_and_counterfactual_follows_answer() -> None:
    env = {
        "THREADWISE_LLM_BASE_URL": "http://localhost:11434/v1",
        "THREADWISE_LLM_MODEL": "llama3.1",
        "THREADWISE_ANSWER_MODEL": "qwen2.5:14b",
        "THREADWISE_JUDGE_MODEL": "gpt-4o",
        "THREADWISE_JUDGE_BASE_URL": "https://api.openai.com/v1",
        "THREADWISE_JUDGE_API_KEY": "sk-judge",
        "THREADWISE_LLM_TIMEOUT": "12.5",
        "THREADWISE_COMPLETION_MAX_RETRIES": "0",
    }
    settings = llm_settings_from_env(env)
    assert settings is not None
    assert settings["completion"] == LLMSettings(
        model="llama3.1",
        base_url="http://localhost:11434/v1",
        api_key=LOCAL_PLACEHOLDER_KEY,
        timeout=12.5,
        max_retries=0,
    )
    assert settings["answer"].model == settings["counterfactual"].model == "qwen2.5:14b"
    assert (
        settings["judge"].api_key == "sk-judge" and settings["judge"].base_url == "https://api.openai.com/v1"
    )


def test_azure_from_its_own_variables() -> None:
    env = {
        "AZURE_OPENAI_ENDPOINT": "https://x.openai.azure.com",
        "AZURE_OPENAI_API_KEY": "az",
        "THREADWISE_LLM_MODEL": "dep",
    }
    settings = llm_settings_from_env(env)
    assert settings is not None
    assert settings["answer"] == LLMSettings(
        model="dep", base_url="https://x.openai.azure.com", api_key="az", azure_api_version="2024-10-21"
    )


def test_bad_number_names_the_variable() -> None:
    with pytest.raises(ValueError, match="THREADWISE_ANSWER_TIMEOUT='soon'"):
        llm_settings_from_env({"OPENAI_API_KEY": "k", "THREADWISE_ANSWER_TIMEOUT": "soon"})


def test_make_chat_talks_to_the_configured_endpoint(server: FakeOpenAI) -> None:
    settings = llm_settings_from_env(
        {"THREADWISE_LLM_BASE_URL": server.url, "THREADWISE_LLM_API_KEY": server.api_key}
    )
    assert settings is not None
    server.push("configured")
    assert make_chat(settings["answer"]).chat(HELLO) == "configured"
