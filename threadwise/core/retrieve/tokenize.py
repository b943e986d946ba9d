"""The lexical tokenizer for BM25: keeps version strings (9.0.2) and issue keys (OXT-239) whole, stems words.

Words are lower-cased and stemmed with the English Snowball stemmer, and German umlauts/ß are folded so that
"Größe" and "groesse" meet. Compound tokens are emitted whole *and* as their parts, so "OXT-239" matches a
question that says "OXT 239", and "9.0.2" also yields "9.0" so it matches a question about "9.0".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import Stemmer

_TOKEN = re.compile(
    r"[A-Za-z][A-Za-z0-9]*-\d+"  # issue keys: OXT-239, ABC2-12
    r"|\d+(?:[.,]\d+)+[A-Za-z]*"  # versions and decimals: 9.0.2, 1.14.0, 3,5
    r"|\w+",
    re.UNICODE,
)
_FOLD = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})
# English possessives lose their 's, as in Lucene's EnglishPossessiveFilter: otherwise "Alice's" brings a term "s"
# that matches every "quarter's" and "team's" in the wiki.
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b")
# Part of the saved BM25 indexes: a change of tokenization makes them rebuild from the stored texts.
TOKENIZER_VERSION = 2

STOPWORDS = frozenset(
    """a an and are as at be by do does did for from has have how i in is it its of on or that the this to
    was were what when where which who whom why will with you your we our can could should would there their
    they them these those than then so if not no into about also any all been being but each other such
    der die das den dem des ein eine einer einem einen eines und oder ist sind war waren wird werden wurde
    wurden wie was wer wo wann warum welche welcher welches welchen mit von zu zum zur im in am an auf aus
    für fuer bei nach über ueber unter vor es sie er ich wir ihr man nicht kein keine auch noch nur so dass
    hat haben hatte gibt gab um als durch bis""".split()
)

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def tokenize(text: str, *, known: Callable[[str], bool] | None = None) -> list[str]:
    """Split `text` into BM25 terms.

    With `known` (is this term in the index?), a word the index lacks is also split as a compound into the
    parts it has: see `compound_parts`. That is for queries; documents are tokenized without it.
    """
    terms: list[str] = []
    for match in _TOKEN.finditer(_POSSESSIVE.sub("", text.lower())):
        token = match.group(0).translate(_FOLD)
        if "-" in token:  # issue key: whole and its parts
            terms.append(token)
            terms.extend(p for p in token.split("-") if p)
            continue
        if "." in token or "," in token:  # version: whole and its shorter prefixes (9.0.2 -> 9.0)
            parts = re.split(r"[.,]", token)
            terms.extend(".".join(parts[:n]) for n in range(len(parts), 1, -1))
            continue
        if token in STOPWORDS or token == "_":
            continue
        if not token.isalpha():
            terms.append(token)
            continue
        term = _stem(token)
        terms.append(term)
        if known is not None and not known(term):
            terms.extend(compound_parts(token, known))
    return terms


MIN_COMPOUND_PART = 4
_LINKING = ("s", "es", "n", "en")  # German linking elements: Entwicklung-s-zertifikat, Stern-en-himmel
_ENDINGS = ("en", "n", "e", "s")  # German inflection the English stemmer leaves on: Version-en, Test-s


def compound_parts(word: str, known: Callable[[str], bool]) -> list[str]:
    """The known terms inside a compound word: its longest known tail and its longest known head.

    German questions about English pages glue English words into German compounds ("Hardwaretests",
    "Standardport", "Freigabecheckliste"); the index knows "hardware", "test", "port", "checklist". This is
    corpus-driven decompounding (Koehn & Knight 2003) reduced to one split each way: no dictionary, only the
    index's own vocabulary, so it never invents a term the pages do not contain.
    """
    parts: list[str] = []
    n = len(word)
    for i in range(MIN_COMPOUND_PART, n - MIN_COMPOUND_PART + 1):  # tail: the compound's head noun comes last
        found = _known_stem(word[i:], _ENDINGS, known)
        if found is not None:
            parts.append(found)
            break
    for i in range(n - MIN_COMPOUND_PART, MIN_COMPOUND_PART - 1, -1):  # head: the modifier in front
        found = _known_stem(word[:i], _LINKING, known)
        if found is not None:
            parts.append(found)
            break
    return [p for i, p in enumerate(parts) if p not in parts[:i]]


def _known_stem(part: str, endings: tuple[str, ...], known: Callable[[str], bool]) -> str | None:
    """The stem of `part`, or of `part` without one of `endings`, that the index knows."""
    candidates = [part] + [part[: -len(e)] for e in endings if part.endswith(e)]
    return next((_stem(c) for c in candidates if len(c) >= MIN_COMPOUND_PART and known(_stem(c))), None)
