"""Citations in answers: "[Source 2]", "[Source 1, 3]", "[Sources 2-3]", "[Quelle 1]", "[1]".

Sources are numbered from 1 in the order the evidences were put into the prompt. A model sometimes cites a
number that was never given; such numbers are dropped, never shown as a broken link.
Also here: recognising the out-of-scope sentence, in English or German, tolerating small wording drift: the
paper's sentence (what the LLM prompt asks for) and the plain one the extractive answerer says.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from threadwise.core.types import NOT_FOUND, NOT_FOUND_DE, NOT_FOUND_PLAIN, NOT_FOUND_PLAIN_DE

_WORD = r"(?:sources?|quellen?|src)\s*[:#]?\s*"
_JOIN = r"\s*(?:[-–—]|,|;|&|\band\b|\bund\b)\s*"
# One bracketed citation group: "[Source 1]", "[Sources 1, 3 and 5]", "[Source 1; Source 2]", "[2-4]", "[1]".
CITATION = re.compile(rf"\[\s*(?:{_WORD})?(\d{{1,3}}(?:{_JOIN}(?:{_WORD})?\d{{1,3}})*)\s*\]", re.IGNORECASE)
_NUMBER_OR_DASH = re.compile(r"\d+|[-–—]")
_MAX_RANGE = 30  # "[1-300]" is not a range anyone means


def group_numbers(group: str) -> list[int]:
    """The numbers of one citation group's inner text, ranges expanded: "2-4, 7" -> [2, 3, 4, 7]."""
    numbers: list[int] = []
    tokens = _NUMBER_OR_DASH.findall(group)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.isdigit():
            if i + 2 < len(tokens) and not tokens[i + 1].isdigit() and tokens[i + 2].isdigit():
                start, end = int(token), int(tokens[i + 2])
                if start <= end <= start + _MAX_RANGE:
                    numbers.extend(range(start, end + 1))
                else:
                    numbers.extend((start, end))
                i += 3
                continue
            numbers.append(int(token))
        i += 1
    return numbers


def cited_sources(text: str, n_sources: int) -> tuple[int, ...]:
    """Source numbers cited in `text`, in order of first mention, only those in 1..n_sources."""
    seen: dict[int, None] = {}
    for match in CITATION.finditer(text):
        for number in group_numbers(match.group(1)):
            if 1 <= number <= n_sources:
                seen.setdefault(number)
    return tuple(seen)


def rewrite_citations(
    text: str, render: Callable[[int], str | None], *, n_sources: int, separator: str = ""
) -> str:
    """Replace each citation group by `render(n)` of its valid numbers joined with `separator`.

    `render` returning None drops that number; a group left with no valid number disappears, along with the
    space before it. The Slack bot uses it to turn "[Source 2]" into a link to source 2.
    """

    def replace(match: re.Match[str]) -> str:
        numbers = dict.fromkeys(n for n in group_numbers(match.group(2)) if 1 <= n <= n_sources)
        parts = [part for part in (render(n) for n in numbers) if part is not None]
        return match.group(1) + separator.join(parts) if parts else ""

    with_space = re.compile(r"(\s*)" + CITATION.pattern, re.IGNORECASE)
    return with_space.sub(replace, text)


def strip_citations(text: str) -> str:
    """The answer without its citations, for comparing answers by meaning (Explain)."""
    return rewrite_citations(text, lambda n: None, n_sources=10**6).strip()


# -- the out-of-scope sentence ------------------------------------------------------------------------------

_NEGATION = r"\b(cannot|can ?not|can't|could not|couldn't|is not|isn't|are not|aren't|was not|were not|not|no|nicht|keine?n?)\b"
_FOUND = (
    r"\b(found|find|contained|contain|contains|available|present|included|provided|mentioned|given|"
    r"enthalten|gefunden|finden|vorhanden|verfügbar|angegeben|erwähnt)\b"
)
_SUBJECT = r"\b(information|informationen|info|answer|antwort|angaben?|details?)\b"
_WHERE = r"\b(evidence|evidences|sources?|pool|context|documents?|passages?|quellen|belegen?|evidenzen|kontext|dokumenten?)\b"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


_KNOWN_NOT_FOUND = (NOT_FOUND, NOT_FOUND_DE, NOT_FOUND_PLAIN, NOT_FOUND_PLAIN_DE)


def _normalized(text: str) -> str:
    return " ".join(text.lower().replace("’", "'").split())


def is_not_found_sentence(sentence: str) -> bool:
    """Whether one sentence says that the sources do not hold the answer (English or German, wording may drift)."""
    s = _normalized(sentence)
    if any(_normalized(known).rstrip(".") in s for known in _KNOWN_NOT_FOUND):
        return True
    if len(s.split()) > 30:
        return False
    return all(re.search(pattern, s) for pattern in (_NEGATION, _FOUND, _SUBJECT, _WHERE))


def is_not_found(answer: str) -> bool:
    """True when the answer is the out-of-scope reply: it says the sources lack the answer and cites nothing."""
    if CITATION.search(answer):
        return False
    return any(is_not_found_sentence(sentence) for sentence in _SENTENCE_END.split(answer.strip()))
