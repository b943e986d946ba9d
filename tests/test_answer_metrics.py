"""Token-overlap answer metrics (SQuAD-style) used by `eval --answers`."""

from __future__ import annotations

import pytest

from threadwise.core.types import NOT_FOUND, NOT_FOUND_DE
from threadwise.evaluation.answer_metrics import (
    answer_words,
    is_not_found,
    normalize_answer,
    score_answers,
    strip_citations,
    token_f1,
    token_recall,
)


def test_citations_are_stripped_before_anything_else() -> None:
    assert (
        strip_citations("Debian Squeeze [Source 1] and Jessie [Source 2, 3].") == "Debian Squeeze and Jessie."
    )
    assert strip_citations("Ja [Quelle 4]") == "Ja"


def test_normalisation_drops_case_punctuation_and_english_and_german_articles() -> None:
    assert normalize_answer("The  legacy COM1 port!") == "legacy com1 port"
    assert normalize_answer("Der Port und die Schnittstelle, ein Kabel.") == "port und schnittstelle kabel"
    assert normalize_answer("An (1) issue [Source 3]") == "1 issue"


def test_recall_and_f1_against_the_gold_answer() -> None:
    gold = "The legacy COM1 port."
    assert token_recall("The default is to use the legacy COM1 port. [Source 1]", gold) == 1.0
    # prediction tokens: default is to use legacy com1 port (7); common 3 -> P 3/7, R 1
    assert token_f1("The default is to use the legacy COM1 port. [Source 1]", gold) == pytest.approx(0.6)
    assert token_f1("legacy COM1 port [Source 2]", gold) == 1.0
    assert token_recall("COM1", gold) == pytest.approx(1 / 3)
    assert token_f1("nothing in common", gold) == 0.0


def test_repeated_tokens_count_once_per_occurrence() -> None:
    assert token_recall("pass", "pass pass fail") == pytest.approx(1 / 3)
    assert token_recall("pass pass", "pass pass fail") == pytest.approx(2 / 3)


def test_not_found_scores_zero_and_is_counted() -> None:
    assert is_not_found(NOT_FOUND) and is_not_found(NOT_FOUND_DE)
    # the out-of-scope sentence shares words with some gold answers; it must still score 0
    assert token_recall(NOT_FOUND, "The information") == 0.0
    assert token_f1(NOT_FOUND_DE, "Information") == 0.0


def test_answer_length_ignores_citations() -> None:
    assert answer_words("Dell OptiPlex 7040 [Source 1]") == 3


def test_score_answers_aggregates() -> None:
    scores = score_answers(
        ["legacy COM1 port [Source 1]", NOT_FOUND, "Platform: Dell OptiPlex 7040; BIOS: 1.14.0 [Source 2]"],
        ["The legacy COM1 port.", "Dickon Reed", "BIOS version: 1.14.0"],
    )
    assert scores.n == 3
    assert scores.not_found_rate == pytest.approx(1 / 3)
    assert scores.median_words == 4.5  # over the two answers: 3 and 6 words, not-found left out
    # third: prediction tokens platform dell optiplex 7040 bios 1140 (6), gold bios version 1140 (3), common 2
    third_f1 = 2 * (2 / 6) * (2 / 3) / (2 / 6 + 2 / 3)
    assert scores.token_f1 == pytest.approx((1.0 + 0.0 + third_f1) / 3)
    assert scores.token_recall == pytest.approx((1.0 + 0.0 + 2 / 3) / 3)
    assert set(scores.as_dict()) == {"token_recall", "token_f1", "median_words", "not_found_rate", "n"}


def test_score_answers_edge_cases() -> None:
    assert score_answers([], []).n == 0
    assert score_answers([NOT_FOUND], ["x"]).median_words == 0.0
    with pytest.raises(ValueError):
        score_answers(["a"], [])
