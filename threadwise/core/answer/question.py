"""What a question asks, as far as an offline answerer can tell: its language, what kind of thing it wants
(a date, a number, a person), and whether it asks several things at once ("who, and how fast?")."""

from __future__ import annotations

import re
from typing import Literal

from threadwise.core.complete.history import SEPARATOR
from threadwise.core.language import is_german

# --- expected answer type: "when" wants a date, "how many" a number, "who" a name ----------------------------

AnswerType = Literal["date", "number", "person"]
_TYPE_CUES: tuple[tuple[re.Pattern[str], AnswerType], ...] = (
    (
        re.compile(
            r"^\s*(?:when|since when|wann|seit wann)\b|\b(?:what|which) (?:date|day|year|month)\b", re.I
        ),
        "date",
    ),
    (re.compile(r"\b(?:how (?:many|much|long|often)|wie (?:viele?|lange|oft))\b", re.I), "number"),
    (re.compile(r"^\s*(?:who|whom|whose|wer|wem|wen|wessen)\b|\bby whom\b|\bvon wem\b", re.I), "person"),
)
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|januar|februar|märz|mai|juni|juli|oktober|dezember"
_DATE = re.compile(
    rf"\b(?:{_MONTHS})[a-z]*\.?\s+\d{{1,2}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\.?\s+(?:of\s+)?(?:{_MONTHS})[a-z]*\b"
    r"|\b(?:19|20)\d\d\b|\b\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}\b",
    re.I,
)
_NUMBER = re.compile(
    r"\b\d+\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|once|twice)\b", re.I
)
_NAME = re.compile(
    r"\b(?!(?:The|This|That|These|Those|A|An|In|On|At|For|If|It|All|Each|Der|Die|Das|Ein|Eine)\b)"
    r"[A-Z][a-z]+ [A-Z][a-z]+\b"
)


def expected_answer_type(question: str) -> AnswerType | None:
    """What kind of thing the question asks for, from its wh-word (English or German); None when unclear."""
    return next((kind for cue, kind in _TYPE_CUES if cue.search(question)), None)


def has_answer_type(kind: AnswerType, text: str) -> bool:
    """Whether `text` holds something of that kind (a date, a number, a First Last name)."""
    pattern = {"date": _DATE, "number": _NUMBER, "person": _NAME}[kind]
    return bool(pattern.search(text))


# --- several things asked at once ------------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)
_WH = (
    r"who|whom|whose|what|which|when|where|why|how|wer|wem|wen|was|welche[rsmn]?|wann|wo|warum|wie|"
    r"is|are|does|do|did|can|should|ist|sind|kann|muss|darf|gibt"
)
# ", and how quickly ...", " and who ...", "; wann ...": a conjunction followed by a new question word
_SECOND_PART = re.compile(rf"(?:,\s*|\s)(?:and|und|or|oder|as well as|sowie)\s+(?=(?:{_WH})\b)", re.I)


def own_and_history(question: str) -> tuple[str, str]:
    """A question completed offline is the question itself, then earlier questions of the conversation after
    `SEPARATOR` (core/complete/history.py): (the question itself, what came before; "" when none)."""
    own, _, history = question.partition(SEPARATOR)
    return own, history.replace(SEPARATOR, " ")


def question_parts(question: str) -> list[str]:
    """The sub-questions of a question that asks several things ("Who is paged, and how fast?" gives two);
    a question that asks one thing is its own only part."""
    parts = [p.strip(" ,;?") for p in _SECOND_PART.split(question)]
    parts = [p for p in parts if len(_WORD.findall(p)) >= 2]
    return parts if len(parts) > 1 else [question]


__all__ = ["expected_answer_type", "has_answer_type", "is_german", "own_and_history", "question_parts"]
