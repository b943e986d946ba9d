"""How sure an answer is (issue 28): the number, level and reason, stored with the turn and shown everywhere."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.support.views import source_view, turn_citing
from tests.test_attribution import evidence
from threadwise.chat.trace_render import render_trace
from threadwise.cli.qa_cmds import render_turn
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.answer.confidence import Signals, assess, confidence_of, signals
from threadwise.core.retrieve.retriever import Retrieval
from threadwise.core.types import Answer, Hit
from threadwise.db.conversations import ThreadKey
from threadwise.evaluation.run import by_confidence
from threadwise.index.indexer import index_pages
from threadwise.settings import load_settings
from threadwise.slack.blocks import answer_message
from threadwise.teams.cards import answer_card
from threadwise.wiring import Threadwise

SURE = Signals(
    lexical_agrees=True,
    dense_agrees=True,
    pages_agree=True,
    margin=0.5,
    cites_top_page=True,
    key_terms_missing=False,
    coverage=1.0,
    disagreement=False,
    follow_up=False,
)


def hits(*ids: str, scores: tuple[float, ...] = ()) -> list[Hit]:
    return [Hit(i, scores[k] if scores else 1.0 / (k + 1), k + 1) for k, i in enumerate(ids)]


def test_one_page_that_every_ranking_agrees_on_and_that_holds_the_question_is_high() -> None:
    c = assess(SURE)
    assert (c.level, c.reason, c.score) == ("high", "one page, exact match", 1.0)
    assert c.label == "high — one page, exact match"


def test_a_disagreement_or_a_missing_key_term_lowers_the_level_and_names_the_reason() -> None:
    disputed = assess(replace(SURE, disagreement=True))
    assert disputed.level != "high" and disputed.reason == "two pages disagree"
    worst = assess(replace(SURE, disagreement=True, key_terms_missing=True, lexical_agrees=False))
    assert worst.level == "low" and worst.reason == "two pages disagree"  # the largest share names it
    assert worst.score < disputed.score < 1.0
    follow_up = assess(replace(SURE, follow_up=True, coverage=0.8))
    assert follow_up.reason == "follow-up, read with the thread"
    unknown = assess(replace(SURE, lexical_agrees=None, dense_agrees=None, pages_agree=None, margin=None))
    assert unknown.level == "high"  # a ranking that did not run does not count against the answer


def test_signals_are_read_from_the_rankings_and_the_quoted_page() -> None:
    evidences = [
        evidence(0, "Alice owns the OpenXT 9.0 release checklist.", page="a"),
        evidence(0, "Bob owns the build farm.", page="b"),
    ]
    answer = Answer(text="Alice owns it. [Source 1]", cited=(1,))
    retrieval = Retrieval(
        query="",
        evidences=evidences,
        lexical=hits("a:0", "b:0"),
        dense=hits("b:0", "a:0"),
        pages=hits("a", "b"),
        fused=hits("a:0", "b:0", scores=(0.5, 0.48)),
    )
    s = signals("Who owns the OpenXT 9.0 release checklist?", retrieval, answer)
    assert s.lexical_agrees and not s.dense_agrees and s.pages_agree
    assert s.margin is not None and abs(s.margin - 0.04) < 1e-9
    assert s.cites_top_page and not s.key_terms_missing and s.coverage == 1.0
    c = assess(s)
    assert c.level == "medium" and c.reason in {
        "meaning points to another page",
        "a second page is almost as likely",
    }

    quoting_b = Answer(text="Bob owns the build farm. [Source 2]", cited=(2,))
    s = signals("Who owns the OpenXT 9.0 release checklist?", Retrieval("", evidences), quoting_b)
    assert not s.cites_top_page and s.key_terms_missing and s.coverage is not None and s.coverage < 0.5
    assert assess(s).level == "low"


def test_a_not_found_answer_has_no_confidence() -> None:
    nothing = Answer(text="I couldn't find this in the synced pages.", not_found=True)
    assert confidence_of("Who?", Retrieval("", [evidence(0, "x")]), nothing) is None
    assert confidence_of("Who?", Retrieval("", []), Answer(text="x")) is None


def test_each_front_end_shows_the_level_and_its_reason() -> None:
    confidence = {"score": 0.55, "level": "medium", "reason": "two pages disagree"}
    view = replace(turn_citing(source_view(1, "a")), confidence=confidence)
    line = "Confidence: medium — two pages disagree"
    assert view.confidence_line == line
    slack = answer_message(view)
    assert any(b["type"] == "context" and line in b["elements"][0]["text"] for b in slack["blocks"])
    teams = answer_card(view)
    assert any(line in b.get("text", "") for b in teams["body"])
    assert line in render_turn(view, hint="h").splitlines()
    # nothing to be sure of in a not-found answer, nor in one stored before confidence was
    for plain in (replace(view, not_found=True), replace(view, confidence=None)):
        assert plain.confidence_line == ""
        assert "Confidence" not in render_turn(plain, hint="h")
        assert not any("Confidence" in str(b) for b in answer_message(plain)["blocks"])


def test_the_service_stores_the_confidence_with_the_turn_and_in_its_trace(tmp_path: Path) -> None:
    app = Threadwise(settings=load_settings(env={"THREADWISE_EMBEDDER": "hashing"}, data_dir=tmp_path))
    pages, _ = load_pages(SAMPLE_WIKI_DIR)
    index_pages(app.index, pages)
    service = app.conversations
    view = service.ask(ThreadKey("cli", "l", "c", "t"), "Who is on call for a severity 1 incident?")
    assert not view.not_found and view.confidence is not None
    assert view.confidence["level"] in {"high", "medium", "low"} and 0.0 <= view.confidence["score"] <= 1.0
    again = service.get_turn(view.turn_id)
    assert again is not None and again.confidence == view.confidence
    assert f"confidence: {view.confidence['score']:.2f}" in render_trace(service.trace(view.turn_id))
    lost = service.ask(ThreadKey("cli", "l", "c", "u"), "What is the capital of France?")
    assert lost.not_found and lost.confidence is None


def test_by_confidence_counts_questions_and_their_p_at_1_per_level() -> None:
    levels = [("high", 1), ("high", 1), ("high", 2), ("low", None), ("low", 1), ("not found", 3)]
    assert by_confidence(levels) == {
        "high": {"questions": 3, "p_at_1": round(2 / 3, 4)},
        "low": {"questions": 2, "p_at_1": 0.5},
        "not found": {"questions": 1, "p_at_1": 0.0},
    }
