"""Explain over a real LLM client: LLMAnswerer and OpenAIChat against the local OpenAI-compatible server."""

from __future__ import annotations

import re
from typing import Any

from tests.support.fake_openai import FakeOpenAI
from tests.support.llm import chat_for
from threadwise.core.answer.citations import is_not_found
from threadwise.core.answer.llm import LLMAnswerer
from threadwise.core.attribute.attribution import explain
from threadwise.core.types import NOT_FOUND, Evidence
from threadwise.evaluation.attribution_metrics import explanation_accuracy
from threadwise.models.embedders import HashingEmbedder

QUESTION = "Which TPM version did the Dell Optiplex 7040 use in the OpenXT 9.0 measurement tests?"
REPORT = "OpenXT 9.0 measurement tests"
ANSWER_ROW = "Row 4 in Table 1: Platform is Dell OptiPlex 7040, and BIOS is 1.14.0, and TPM is 2.0"
TOPICS = ["build server", "mailing list", "license agreement", "Intel TXT", "installer", "upgrade"]
TOPICS += ["governance board", "release manager", "xenvm"]


def evidence(n: int, text: str, title: str = "") -> Evidence:
    title = title or f"Page {n}"
    return Evidence(
        id=f"p{n}:0",
        page_id=f"p{n}",
        space="TEST",
        page_title=title,
        url=f"https://wiki.example/p{n}",
        page_version=1,
        kind="passage",
        position=0,
        text=text,
        context_text=f"{title}\n{text}",
    )


def ten_evidences() -> list[Evidence]:
    """Nine distinct fillers and, as source 5, the one row holding the answer, on the page the question names
    (an answer from evidence that holds none of the question's key terms is "not found" without the LLM)."""
    fillers = [f"The {topic} is documented on this page, item {n}." for n, topic in enumerate(TOPICS)]
    texts = fillers[:4] + [ANSWER_ROW] + fillers[4:]
    return [evidence(n, text, REPORT if n == 5 else "") for n, text in enumerate(texts, start=1)]


def answer_from_the_tpm_row(request: dict[str, Any]) -> str:
    """The model: cites whichever source holds the TPM row, else the out-of-scope sentence."""
    user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
    for number, body in re.findall(r'<source id="(\d+)">(.*?)</source>', user, re.DOTALL):
        if "TPM is 2.0" in body:
            return f"The Dell OptiPlex 7040 used TPM 2.0 [Source {number}]."
    return NOT_FOUND


def test_counterfactual_calls_go_out_concurrently_and_find_the_cause() -> None:
    evidences = ten_evidences()
    with FakeOpenAI(respond=answer_from_the_tpm_row, delay=0.2) as server:
        answerer = LLMAnswerer(chat=chat_for(server), role="counterfactual", follow_ups=0)
        answer = answerer.answer(QUESTION, evidences)
        server.requests.clear()
        expl = explain(QUESTION, answer, evidences, answerer=answerer, embedder=HashingEmbedder(), repeats=3)

        assert len(expl.clusters) == 10 and all(c.scored for c in expl.clusters)
        # removing the answer row leaves no evidence with the question's key terms: those 3 answers are "not
        # found" without a call to the model (support.clearly_unsupported)
        assert expl.answer_calls == 10 * 3 and len(server.requests) == 9 * 3
        assert 1 < server.max_overlap() <= 30  # together (pool of 30 by default), not one after another
    top = max(expl.clusters, key=lambda c: c.share)
    assert top.positions == (5,) and top.share > 0.9
    assert all(is_not_found(a) for a in top.counterfactual_answers)
    assert explanation_accuracy(expl, {"p5"})


def test_a_failing_cluster_is_retried_then_reported_unscored() -> None:
    evidences = ten_evidences()[3:6]  # filler, the answer row, filler
    with FakeOpenAI(respond=answer_from_the_tpm_row) as server:
        answerer = LLMAnswerer(chat=chat_for(server, max_retries=1), role="counterfactual", follow_ups=0)
        answer = answerer.answer(QUESTION, evidences)
        server.requests.clear()
        # One worker, so cluster 1 goes first: its call and our retry each take 2 HTTP requests (the client
        # retries once itself), all four answered with a 500.
        server.fail(500, times=4)
        expl = explain(
            QUESTION,
            answer,
            evidences,
            answerer=answerer,
            embedder=HashingEmbedder(),
            repeats=1,
            max_workers=1,
        )

        assert [c.scored for c in expl.clusters] == [False, True, True]
        assert "server" in expl.clusters[0].error.lower() and expl.clusters[0].share == 0.0
        assert expl.answer_calls == 2 + 1 + 1
        # cluster 2 (the answer row) removed: not found without asking the model; cluster 3: one call
        assert [r.status for r in server.requests] == [500, 500, 500, 500, 200]
    assert "Cluster 1 could not be scored" in expl.note
    assert max(expl.clusters, key=lambda c: c.share).positions == (2,)
