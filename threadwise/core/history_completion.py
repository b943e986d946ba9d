"""Offline question completion: a history-aware rewrite without an LLM (English and German).

Follow-ups mostly stay on the page the conversation is about ("And what about TPM?"), but topics do shift.
So a follow-up that leans on its history (a short question, a pronoun, "and/what about/und/was ist mit") is
completed with the content words of the previous completed question that it does not already contain, while a
question that stands on its own passes through unchanged. Because each completed question carries its own
context forward, a conversation's topic is kept across several turns without piling up every earlier question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from threadwise.core.completion import Completion, PastTurn
from threadwise.core.tokenize import STOPWORDS

_WORD = re.compile(r"[\w.\-/]+", re.UNICODE)

# Words that make a question lean on what was said before.
_ANAPHORA = frozenset(
    """it its it's this that these those they them their there he she his her him such same former latter
    also too then else another other previous above
    es das dies diese dieser dieses diesen dem den sie ihr ihre ihren dort dabei dazu davon damit darin darauf
    dafür dafuer hierzu hier er ihm ihn derselbe dieselbe dasselbe auch sonst andere anderen vorherige oben""".split()
)
_FOLLOW_UP_START = re.compile(
    r"^\s*(and|also|what about|how about|and what|and how|and which|and who|what else|same for|"
    r"und|auch|was ist mit|wie ist es mit|wie sieht es|und was|und wie|und welche|und wer|was noch)\b",
    re.IGNORECASE,
)


def content_words(text: str) -> list[str]:
    """Words that carry meaning, in order, without duplicates (case-insensitive)."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in _WORD.findall(text):
        word = raw.strip(".-/")
        key = word.lower()
        if len(key) < 2 or key in STOPWORDS or key in _ANAPHORA or key in seen:
            continue
        seen.add(key)
        out.append(word)
    return out


def leans_on_history(question: str, *, min_words: int = 5) -> bool:
    """True when the question is unlikely to be understood alone."""
    if _FOLLOW_UP_START.search(question):
        return True
    words = [w.lower() for w in _WORD.findall(question)]
    if any(w in _ANAPHORA for w in words):
        return True
    return len(content_words(question)) < min_words


class HistoryCompleter:
    """Completes follow-ups with the previous turn's context words; stand-alone questions pass through."""

    name = "history"

    def __init__(self, *, min_words: int = 5, max_context_words: int = 14) -> None:
        self.min_words = min_words
        self.max_context_words = max_context_words

    def complete(self, question: str, history: Sequence[PastTurn]) -> Completion:
        if not history:
            return Completion(question=question, method="first turn")
        if not leans_on_history(question, min_words=self.min_words):
            return Completion(question=question, method="self-contained")
        previous = history[-1].completed_question or history[-1].question
        have = {w.lower() for w in content_words(question)}
        context = [w for w in content_words(previous) if w.lower() not in have][: self.max_context_words]
        if not context:
            return Completion(question=question, method="self-contained")
        return Completion(question=f"{question.strip()} ({' '.join(context)})", method="history")
