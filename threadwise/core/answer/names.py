"""What a question names beyond its key terms, found by the shape of the question (issue 28).

`support.key_terms` takes words with digits, acronyms and CamelCase in any language, and an English question's
capitalized words; two kinds of names slip through it:

- *Numbered names*: "Windows 11", "Debian 12", "QEMU 7.2". The number alone ("11") is on many pages; the name
  must stand just before it ("Windows 10 … 11 builds" does not mention Windows 11). Words that count things
  rather than name them ("version 9.0", "Seite 3") and months ("March 14") are left out, and so are years
  ("Xen Summit 2013": dates and events are written in too many ways).
- *Names in a German question*: German capitalizes every noun, so a capitalized word is no name by itself, and
  its nouns are translated on English pages. Some places still mark a name: right after a preposition with no
  article ("aus Singapur", "nach Scarthgap": a common noun there takes one, "in der Stadt"); before the hyphen
  of a compound ("Discord-Server", "Kubernetes-Konfiguration": German hyphenates where the first part is a
  name or a foreign word); two or more capitalized words in a row ("Dell Optiplex": German puts articles and
  adjectives before a noun), checked as a run of names (most of its words); a capital letter standing alone
  ("Model Z"), as in English; and a lower-case word in parentheses, the page's own word the asker glosses
  ("Satzung (bylaws)"). Even there, a word that looks German (an umlaut, "sch", "cht", "ie", a noun ending such
  as -ung, or in all but a run an inflected ending such as -en) is taken for a noun ("in Bezug",
  "Gast-Ruhezustand"; but "Dell Alder Lake").
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"\d+(?:\.[0-9x]+)*")
_YEAR = re.compile(r"(?:19|20)\d\d")
_MONTHS = frozenset(
    """january february march april may june july august september october november december jan feb mar apr
    jun jul aug sep sept oct nov dec januar februar märz juni juli oktober dezember""".split()
)
# words that number things rather than name them
_COUNTING = frozenset(
    """version versions release releases build builds stable rc step steps page pages chapter section table row
    rows option item items number no part phase level week weeks day days year years gen generation revision
    rev sprint round line lines figure fig appendix slide seite seiten schritt schritte kapitel
    abschnitt tabelle zeile zeilen teil teile stufe woche wochen tag tage jahr jahre nummer nr punkt runde
    folie anhang""".split()
)
_PREPOSITIONS = frozenset(
    "in aus nach von bei mit für über unter auf an zu vor seit durch gegen ohne um zwischen gemäß laut".split()
)
_GERMAN_PARTS = ("sch", "cht", "tz", "pf", "ei", "ie", "eu", "z")
# German noun endings, with the linking s of a compound's first part too ("Abstimmungs-", "Versions-")
_GERMAN_ENDINGS = tuple(
    """ung ungen heit heiten keit keiten schaft schaften tät täten ion ionen nis nisse chen lein ling linge tum
    ismus ik iken ungs heits keits schafts täts ions lings tums""".split()
)
_INFLECTED = tuple("e en er ern el eln te ten".split())  # German inflection, but names end so too ("Lake")
_STRIP = ",.;:!?()[]\"'“”„«»"


def _words(question: str) -> list[str]:
    return [w.strip(_STRIP) for w in question.split()]


def _names_a_thing(word: str) -> bool:
    """A capitalized word, acronym or CamelCase name that is not a month or a counting word."""
    low = word.lower()
    return (
        (word[:1].isupper() or any(c.isupper() for c in word[1:]))
        and word.isalpha()
        and low not in _MONTHS
        and low not in _COUNTING
    )


def numbered_names(question: str) -> list[str]:
    """Names with a number just after them, past the question's first word: "Windows 11", "QEMU 7.2" (see the
    module docstring)."""
    words = _words(question)
    found = []
    for name, word in zip(words[1:], words[2:], strict=False):
        number = _NUMBER.match(word)
        if number is None or not _names_a_thing(name) or _YEAR.fullmatch(number.group(0)):
            continue
        rest = word[number.end() :]
        if rest and not rest.startswith("-"):  # "5x", "8G", "64-Bit" are not a numbered name's number
            continue
        found.append(f"{name} {number.group(0)}")
    return found


def looks_german(word: str, *, inflected: bool = True) -> bool:
    """Whether a capitalized word looks like a German noun rather than a name: an umlaut or ß, a German letter
    group, a German noun ending, or (`inflected`) an ending of German inflection, which names have as well
    ("Lake", "League")."""
    low = word.lower()
    return (
        bool(re.search("[äöüß]", low))
        or any(p in low for p in _GERMAN_PARTS)
        or low.endswith(_GERMAN_ENDINGS)
        or (inflected and low.endswith(_INFLECTED))
    )


def german_names(question: str) -> list[str]:
    """The names of a German question that its capitals alone do not tell (see the module docstring)."""
    words = _words(question)
    found = [w for w in re.findall(r"\(([a-z][a-z\-]+)\)", question) if not looks_german(w)]  # "(bylaws)"
    found += _runs(words[1:])
    found += [w for w in words[1:] if len(w) == 1 and w.isupper()]  # a model letter: "Model Z"
    for before, word in zip(words, words[1:], strict=False):
        head, _, rest = word.partition("-")
        if rest and len(head) >= 5 and head[:1].isupper() and head.isalpha() and not head.isupper():
            candidate = head  # "Discord-Server"
        elif before.lower() in _PREPOSITIONS and not rest and word[:1].isupper() and word.isalpha():
            candidate = word  # "in Tokio"
        else:
            continue
        if not word.isupper() and candidate.lower() not in _MONTHS and not looks_german(candidate):
            found.append(candidate)
    return list(dict.fromkeys(found))


def _runs(words: list[str]) -> list[str]:
    """Two or more capitalized words in a row, none of them German-looking but for an inflected ending ("Dell
    Alder Lake", "Gast VM OS"), as one term: German puts articles and adjectives before a noun, so such a run
    is a name or a title."""
    runs: list[list[str]] = [[]]
    for word in words:
        if (
            word.isalpha()
            and word[:1].isupper()
            and word.lower() not in _MONTHS
            and not looks_german(word, inflected=False)
        ):
            runs[-1].append(word)
        elif runs[-1]:
            runs.append([])
    return [" ".join(run) for run in runs if len(run) >= 2]


__all__ = ["german_names", "looks_german", "numbered_names"]
