"""Answer metrics for `eval --answers` when no LLM judge runs: token overlap with the gold answer (SQuAD-style).

Both texts are normalised the way the SQuAD evaluation script does it (lower case, punctuation removed, articles
dropped, whitespace collapsed), with German articles dropped too, and "[Source N]" citations are stripped first
so that citing is neither rewarded nor punished. A not-found answer scores 0.
"""

from __future__ import annotations

import re
import statistics
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from threadwise.core.answer.citations import is_not_found, strip_citations

_ARTICLES = re.compile(
    r"\b(?:a|an|the|der|die|das|den|dem|des|ein|eine|einer|einem|einen|eines)\b", re.UNICODE
)
_PUNCTUATION = str.maketrans("", "", string.punctuation + "…–—‘’“”„«»")


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no English or German articles, single spaces."""
    text = strip_citations(text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def _common(prediction: str, gold: str) -> tuple[int, int, int]:
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    return sum((Counter(pred) & Counter(ref)).values()), len(pred), len(ref)


def token_recall(prediction: str, gold: str) -> float:
    """Share of the gold answer's tokens that the prediction contains (0 for a not-found answer)."""
    if is_not_found(prediction):
        return 0.0
    common, _, n_gold = _common(prediction, gold)
    return common / n_gold if n_gold else 0.0


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1 between prediction and gold answer (0 for a not-found answer)."""
    if is_not_found(prediction):
        return 0.0
    common, n_pred, n_gold = _common(prediction, gold)
    if common == 0:
        return 0.0
    precision, recall = common / n_pred, common / n_gold
    return 2 * precision * recall / (precision + recall)


def answer_words(text: str) -> int:
    """Length of an answer in words, citations not counted."""
    return len(strip_citations(text).split())


@dataclass(frozen=True)
class AnswerScores:
    """Means over all questions; `median_words` is over the answers that were not "not found"."""

    token_recall: float
    token_f1: float
    median_words: float
    not_found_rate: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def score_answers(predictions: Sequence[str], golds: Sequence[str]) -> AnswerScores:
    """Score predicted answers against gold answers, pairwise."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold answers")
    n = len(predictions)
    if n == 0:
        return AnswerScores(0.0, 0.0, 0.0, 0.0, 0)
    found = [p for p in predictions if not is_not_found(p)]
    return AnswerScores(
        token_recall=sum(map(token_recall, predictions, golds)) / n,
        token_f1=sum(map(token_f1, predictions, golds)) / n,
        median_words=float(statistics.median(answer_words(p) for p in found)) if found else 0.0,
        not_found_rate=(n - len(found)) / n,
        n=n,
    )
