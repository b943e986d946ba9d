"""A cheap guess of a text's language (English or German), for the answerer: words cannot match across
languages (the cosine stands in for the word overlap), and it says when it quotes a page in another language."""

from __future__ import annotations

import re

from threadwise.core.types import Evidence

# Frequent function words that exist in one language only ("was", "in", "an", "so" are in both and left out).
_EN_WORDS = frozenset(
    "the a of is are what which who how does did do to for with and were has have this that when where why "
    "there their be been any used can should".split()
)
_DE_WORDS = frozenset(
    "der die das den dem des ein eine einer einem einen und ist sind wurde wurden welche welcher welches "
    "welchen wer wie wo wann warum mit von für zu zum zur im auf bei nach über gibt es hat haben nicht auch "
    "noch nur dass oder werden wird kann können sich diese dieser dieses ich wir ihr".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def is_german(text: str) -> bool:
    """Cheap language guess from function words (umlauts, ß and German opening quotes „ break a tie)."""
    words = [w.lower() for w in _WORD.findall(text)]
    de = sum(w in _DE_WORDS for w in words)
    en = sum(w in _EN_WORDS for w in words)
    if de != en:
        return de > en
    return bool(re.search(r"[äöüß„]", text.lower()))


_VERBALIZED = re.compile(r"Row \d+ in Table \d+:|, and\b|\bis\b")


def evidence_is_german(evidence: Evidence) -> bool:
    """The language of an evidence's own words: a verbalized table row says "is" and "and" in any language."""
    if evidence.cells:
        return is_german(" ".join(value for _, value in evidence.cells))
    return is_german(_VERBALIZED.sub(" ", evidence.text) if evidence.kind == "table" else evidence.text)
