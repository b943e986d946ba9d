"""LLMCompleter through the real `openai` client against the local fake server."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.llm import chat_for, unused_port
from threadwise.core.complete.llm import LLMCompleter, clean_completion
from threadwise.core.protocols import ChatError
from threadwise.core.types import Completion, PastTurn
from threadwise.models.openai_chat import OpenAIChat

FIRST = PastTurn(
    question="What BIOS did the Dell Optiplex 7040 use in the OpenXT 9.0 measurement tests?",
    completed_question="What BIOS did the Dell Optiplex 7040 use in the OpenXT 9.0 measurement tests?",
    answer="It used BIOS 1.4.5 [Source 1].",
    page_ids=("p1",),
)


class PreviousQuestionFirst:
    """A stand-in offline completer: prepends the previous completed question."""

    def complete(self, question: str, history: Sequence[PastTurn]) -> Completion:
        return Completion(question=f"{history[-1].completed_question} {question}", method="offline-test")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_first_turn_passes_through_without_a_request(server: FakeOpenAI) -> None:
    completion = LLMCompleter(chat=chat_for(server, max_retries=0)).complete(
        "  What BIOS did the Optiplex use? ", []
    )
    assert completion == Completion(question="What BIOS did the Optiplex use?", method="first-turn")
    assert server.requests == []


def test_follow_up_is_rewritten_from_questions_and_answers(server: FakeOpenAI) -> None:
    server.push(
        'Rewritten question: "What TPM version did the Dell Optiplex 7040 use in the OpenXT 9.0 tests?"'
    )
    completion = LLMCompleter(chat=chat_for(server, max_retries=0)).complete("And TPM?", [FIRST])

    assert completion.question == "What TPM version did the Dell Optiplex 7040 use in the OpenXT 9.0 tests?"
    assert completion.method == "llm"
    (call,) = completion.calls
    assert call.role == "completion" and call.messages == server.requests[0].body["messages"]
    user = server.requests[0].user_text
    assert FIRST.completed_question in user and FIRST.answer in user  # previous questions AND answers
    assert user.index(FIRST.answer) < user.index("And TPM?")


def test_only_the_last_turns_and_shortened_answers_are_sent(server: FakeOpenAI) -> None:
    history = [
        PastTurn(question=f"q{i}?", completed_question=f"question {i}?", answer="word " * 400)
        for i in range(12)
    ]
    LLMCompleter(chat=chat_for(server, max_retries=0), max_turns=3, max_answer_chars=100).complete(
        "and then?", history
    )
    user = server.requests[0].user_text
    assert "question 8?" not in user and "question 9?" in user and "question 11?" in user
    assert user.count("word") < 3 * 30


def test_unreachable_llm_falls_back_and_says_why(server: FakeOpenAI) -> None:
    server.fail(503, times=None)
    completer = LLMCompleter(chat=chat_for(server, max_retries=0), fallback=PreviousQuestionFirst())
    completion = completer.complete("And TPM?", [FIRST])
    assert completion.question == f"{FIRST.completed_question} And TPM?"
    assert completion.method.startswith("offline-test (LLM unavailable: ") and "HTTP 503" in completion.method


def test_timeout_without_fallback_raises(server: FakeOpenAI) -> None:
    server.stall(5.0, times=None)
    with pytest.raises(ChatError, match="within 0.3 s"):
        LLMCompleter(chat=chat_for(server, timeout=0.3, max_retries=0)).complete("And TPM?", [FIRST])


def test_rate_limit_then_success(server: FakeOpenAI) -> None:
    server.fail(429, retry_after=0.01)
    server.push("What TPM version did the Dell Optiplex 7040 use?")
    completion = LLMCompleter(chat=chat_for(server, max_retries=2)).complete("And TPM?", [FIRST])
    assert completion.method == "llm" and len(server.requests) == 2


def test_connection_refused_falls_back() -> None:
    port = unused_port()
    chat = OpenAIChat(
        model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", timeout=0.3, max_retries=0
    )
    completion = LLMCompleter(chat=chat, fallback=PreviousQuestionFirst()).complete("And TPM?", [FIRST])
    assert "Cannot reach" in completion.method


@pytest.mark.parametrize(
    ("reply", "question"),
    [
        ("What TPM version?", "What TPM version?"),
        ("Completed question: What TPM version?", "What TPM version?"),
        ("“Welche TPM-Version?”\n\nI replaced 'it'.", "Welche TPM-Version?"),
        ("\n  Frage: Welche TPM-Version?  ", "Welche TPM-Version?"),
        ("", ""),
    ],
)
def test_clean_completion(reply: str, question: str) -> None:
    assert clean_completion(reply) == question


def test_empty_reply_keeps_the_question(server: FakeOpenAI) -> None:
    server.push('""')
    assert (
        LLMCompleter(chat=chat_for(server, max_retries=0)).complete("And TPM?", [FIRST]).question
        == "And TPM?"
    )


def test_the_prompt_says_a_question_of_its_own_starts_a_new_topic(server: FakeOpenAI) -> None:
    server.push("What is the capital of France?")
    history = [FIRST, PastTurn(question="And TPM?", completed_question="What TPM did it use?", answer="2.0")]
    completion = LLMCompleter(chat=chat_for(server, max_retries=0)).complete(
        "What is the capital of France?", history
    )
    assert completion.question == "What is the capital of France?"
    assert completion.method.startswith("llm (unchanged")  # not shown as "understood as"
    system = " ".join(server.requests[0].body["messages"][0]["content"].split())
    assert "starts a new topic" in system and "since the latest topic began" in system


def test_the_offline_fallback_keeps_a_possible_new_topic_for_the_pipeline(server: FakeOpenAI) -> None:
    from threadwise.core.complete.history import HistoryCompleter

    server.fail(503, times=None)
    completer = LLMCompleter(chat=chat_for(server, max_retries=0), fallback=HistoryCompleter())
    completion = completer.complete("What is the capital of France?", [FIRST])
    assert completion.alone == "What is the capital of France?" and completion.topic_pages == ("p1",)
    assert "LLM unavailable" in completion.method
