"""The eval metrics on a tiny hand-made set, and `threadwise eval` end to end over the sample wiki."""

import json
from pathlib import Path

import pytest

from threadwise.cli import main
from threadwise.connectors.files import SAMPLE_WIKI_DIR
from threadwise.evaluation.dataset import page_id_of, rank_of_gold, retrieval_scores


def test_gold_pages_match_by_id_not_by_url_string() -> None:
    gold = "https://openxt.atlassian.net/wiki/spaces/TEST/pages/761823271/OpenXT+9.0+Measurement+Test"
    page = "https://openxt.atlassian.net/wiki/spaces/TEST/pages/761823271/OpenXT+9.0%3A+Measurement+Test"
    assert page_id_of(gold) == page_id_of(page) == "761823271"


def test_metrics() -> None:
    gold = frozenset({"A"})
    ranks = [rank_of_gold(["A", "B"], gold), rank_of_gold(["B", "A"], gold), rank_of_gold(["B", "C"], gold)]
    assert ranks == [1, 2, None]
    s = retrieval_scores(ranks)
    assert (s.questions, s.p_at_1, s.hit_at_10) == (3, 1 / 3, 2 / 3)
    assert abs(s.mrr_at_10 - (1 + 0.5) / 3) < 1e-12


QUESTION = "Who owns the release notes action item from the October 14 weekly sync?"


def qa_turn(turn_id: str, question: str, completed: str) -> dict[str, object]:
    return {
        "turn_id": turn_id,
        "q_type": "simple",
        "a_source": "table",
        "a": "Alice",
        "q_en": question,
        "completed_q_en": completed,
        "q_de": "x",
        "completed_q_de": "x",
        "a_url": ["https://wiki.example.com/spaces/ATLAS/pages/163840114/Weekly+sync"],
    }


def eval_args(tmp_path: Path, *flags: str, turns: list[dict[str, object]] | None = None) -> list[str]:
    """Write a ConfQuestions-style file about the sample wiki (one question unless `turns`); the
    `threadwise eval` arguments that run it and write the report to tmp_path/report.json."""
    turns = turns or [qa_turn("1", QUESTION, QUESTION)]
    (tmp_path / "qa.json").write_text(json.dumps([{"conv_id": "1", "turns": turns}]))
    return [
        "--data-dir",
        str(tmp_path / "data"),
        "eval",
        "--docs",
        str(SAMPLE_WIKI_DIR),
        "--qa",
        str(tmp_path / "qa.json"),
        *flags,
        "--out",
        str(tmp_path / "report.json"),
    ]


def test_eval_command_on_the_sample_wiki(tmp_path: Path, hashing_embedder: None) -> None:
    args = eval_args(tmp_path, "--answers", "--explain")
    out = tmp_path / "report.json"
    assert main(args) == 0
    report = json.loads(out.read_text())
    assert report["questions"] == 1 and report["hit_at_10"] == 1.0
    for key in (
        "p_at_1",
        "mrr_at_10",
        "by_source",
        "by_type",
        "index_seconds",
        "query_ms_p50",
        "query_ms_p95",
        "token_recall",
        "token_f1",
        "median_words",
        "not_found_rate",
        "by_confidence",
        "attribution_accuracy",
        "naive_accuracy",
        "attribution_n",
        "explain_ms_p50",
        "explain_ms_p95",
    ):
        assert key in report
    # each answerable question under its answer's level (or "not found"), with that level's P@1
    levels = report["by_confidence"]
    assert set(levels) <= {"high", "medium", "low", "not found"}
    assert sum(v["questions"] for v in levels.values()) == report["answerable_questions"]
    assert all(0.0 <= v["p_at_1"] <= 1.0 for v in levels.values())
    assert main(args) == 0  # second run: cached index, nothing embedded
    assert json.loads(out.read_text())["pages_embedded"] == 0


def test_eval_with_an_llm_runs_the_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hashing_embedder: None
) -> None:
    """With an OpenAI-compatible endpoint configured, answers come from the LLM and the paper's judge scores them."""
    from tests.support.fake_openai import FakeOpenAI, echo_first_source

    def respond(body: dict) -> str:
        system = body["messages"][0]["content"]
        return "0.5" if "reference (gold) answer" in system else echo_first_source(body)

    with FakeOpenAI(respond=respond, api_key="") as server:
        monkeypatch.setenv("THREADWISE_LLM_BASE_URL", server.url)
        out = tmp_path / "report.json"
        args = eval_args(tmp_path, "--answers")
        assert main(args) == 0
        systems = [r.body["messages"][0]["content"] for r in server.requests]
    report = json.loads(out.read_text())
    assert report["answer_relevance"] == 0.5 and report["judge_unparsed"] == 0
    assert report["config"]["answerer"].startswith("llm:")
    assert sum("reference (gold) answer" in s for s in systems) == 1  # one judged answer


def test_conversational_eval_completes_follow_ups_with_the_conversation(
    tmp_path: Path, hashing_embedder: None
) -> None:
    """Asked alone, the follow-up misses the meeting notes; asked through the pipeline with the history the
    bots build, the completer adds the opening question and retrieval finds them first."""
    follow_up = "and when is it due?"
    out = tmp_path / "report.json"
    alone = [qa_turn("1", QUESTION, QUESTION), qa_turn("2", follow_up, follow_up)]
    assert main(eval_args(tmp_path, "--questions", "completed", turns=alone)) == 0
    assert json.loads(out.read_text())["by_turn"]["2"] == 0.0
    in_conversation = [qa_turn("1", QUESTION, QUESTION), qa_turn("2", follow_up, QUESTION)]
    assert main(eval_args(tmp_path, "--questions", "conversational", turns=in_conversation)) == 0
    report = json.loads(out.read_text())
    assert report["questions"] == 2 and report["by_turn"]["2"] == 1.0
    assert report["config"]["completer"] == "history" and report["config"]["answerer"] is None
    assert "token_f1" not in report  # retrieval only: nothing answered


def test_not_found_rate_is_split_by_answerability_and_kind() -> None:
    """For answerable questions "not found" is wrong, for questions without gold pages right: a set holding
    both reports each, and the unanswerable ones by kind; recall counts the answerable ones only."""
    from threadwise.core.types import NOT_FOUND_PLAIN
    from threadwise.evaluation.dataset import QATurn
    from threadwise.evaluation.run import _answer_report

    def turn(gold: frozenset[str], kind: str = "") -> QATurn:
        return QATurn("1", 1, "q", "q", gold, "passage", "simple", "Alice" if gold else "", kind)

    answered = "Alice owns it. [Source 1]"
    predictions = [
        (turn(frozenset({"p"})), answered),
        (turn(frozenset({"p"})), answered),
        (turn(frozenset(), "near-miss"), NOT_FOUND_PLAIN),
        (turn(frozenset(), "near-miss"), answered),
        (turn(frozenset(), "out-of-domain"), NOT_FOUND_PLAIN),
    ]
    report = _answer_report(predictions, [1.0] * 5)
    assert report["not_found_rate"] == 0.4
    assert report["not_found_rate_answerable"] == 0.0
    assert report["not_found_rate_unanswerable"] == round(2 / 3, 4)
    assert report["not_found_by_kind"] == {"near-miss": 0.5, "out-of-domain": 1.0}
    assert report["token_recall"] == 1.0  # the unanswerable ones' empty gold is not scored


def test_eval_of_unanswerable_questions_scores_retrieval_on_the_answerable_ones(
    tmp_path: Path, hashing_embedder: None
) -> None:
    unanswerable = {**qa_turn("2", "What is 17 times 23?", "What is 17 times 23?"), "a_url": [], "a": ""}
    turns = [qa_turn("1", QUESTION, QUESTION), {**unanswerable, "kind": "out-of-domain"}]
    assert main(eval_args(tmp_path, "--answers", turns=turns)) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["questions"] == 2 and report["answerable_questions"] == 1 and report["hit_at_10"] == 1.0
    assert set(report["not_found_by_kind"]) == {"out-of-domain"}
    assert (
        report["not_found_rate"]
        == (report["not_found_rate_answerable"] + report["not_found_rate_unanswerable"]) / 2
    )
