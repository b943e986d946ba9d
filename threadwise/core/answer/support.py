"""Whether the evidence can answer the question at all, judged from what it actually says.

A question names what it is about: a version, a model number, a product, a person, a place. When the retrieved
evidences never mention it ("the TPM version of the ThinkPad X1 Carbon" over a wiki that tested other
machines), the closest passage answers another question, however similar it reads. So before quoting, the
question's *key terms* (words with digits, acronyms and CamelCase names in any language; in an English question
also its capitalized words past the first), its numbered names ("Windows 11") and a German question's names
told by where they stand ("in Tokio", "Discord-Server"; `names.py`) are looked up in the evidences: one that
none of them holds means the pages do not hold the answer. An English question is also checked for its content words on the pages that
would be quoted: when they hold few of them ("What is the parental leave policy?" over an on-call policy),
they answer something else. Words cannot match across languages, so a German question over English pages is
judged by its key terms alone; the extractive answerer adds its cosine, and whether retrieval's lexical and
dense rankings found the same page (`rankings_agree`: a question the wiki does not cover finds words in one
place and meaning in another).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from typing import Protocol, runtime_checkable

from threadwise.core.answer.names import german_names, numbered_names
from threadwise.core.language import evidence_is_german, is_german
from threadwise.core.retrieve.tokenize import STOPWORDS, tokenize
from threadwise.core.types import NOT_FOUND_PLAIN, NOT_FOUND_PLAIN_DE, Answer, Evidence, Hit

MAX_CLOSEST_PAGES = 3

# a word with a digit (9.0.2, X1, PCR23, 2016, Stable-11), an acronym (TPM, FOSDEM), CamelCase (OpenXT, GitLab)
_KEY = re.compile(r"\b(?:[\w.\-]*\d[\w.\-]*|[A-Z][A-Z0-9]+|\w*[a-z][A-Z]\w*)\b", re.UNICODE)
_ISSUE_KEY = re.compile(r"[A-Za-z][A-Za-z0-9]*-\d+")  # kept whole, as BM25 keeps it
_WORD = re.compile(r"\b[^\W\d_][\w\-']*", re.UNICODE)
_RAW = re.compile(r"\w+", re.UNICODE)
_LINK = re.compile(r"https?://\S+")
# 2016-08-18, 8/18/16: written in as many ways as there are people (with dots, "1.9.12" is a version)
_DATE = re.compile(r"\d{1,4}[/-]\d{1,2}[/-]\d{1,4}")
# words that ask rather than say what about: they never need to be found in the answer
# on a page, what may stand for a numbered name's name: "Version 6" names "OpenXT 6" on an OpenXT wiki
_RELEASE = frozenset("version versions release releases stable".split())
_ASKING = frozenset(
    """what which who whom whose when where why how many much long often does did do is are was were can could
    should would will may might must shall please tell me know anyone any there here get got give given use used
    using need needed make made mean meant say said go going""".split()
)


def not_found_answer(
    question: str, evidences: Sequence[Evidence] = (), *, answerer: str = "extractive"
) -> Answer:
    """The plain "not in the synced pages" answer, in the question's language, naming the closest pages."""
    german = is_german(question)
    text = NOT_FOUND_PLAIN_DE if german else NOT_FOUND_PLAIN
    titles = list(dict.fromkeys(e.page_title for e in evidences if e.page_title))[:MAX_CLOSEST_PAGES]
    if titles:
        text += (" Am nächsten kamen: " if german else " The closest pages: ") + "; ".join(titles) + "."
    return Answer(text=text, not_found=True, answerer=answerer)


def key_terms(question: str) -> list[str]:
    """What the question is about that the answer must mention: words with digits, acronyms, CamelCase, and
    in an English question its capitalized words past the first (names: "Tokyo", "Kroah-Hartman"). A word
    joined to others by hyphens counts by its key parts ("7.0-Hardwaretests": 7.0), an issue key whole; a
    date does not count (the pages write "2016-08-18" as "August 18, 2016")."""
    terms: list[str] = []
    for match in _KEY.finditer(question):
        word = match.group(0).strip(".-")
        if "-" in word and not _ISSUE_KEY.fullmatch(word):
            terms += [p for p in word.split("-") if _KEY.fullmatch(p)]
        else:
            terms.append(word)
    terms = [t for t in terms if t not in ("I", "AM", "PM") and not _DATE.fullmatch(t)]
    if not is_german(question):  # German capitalizes every noun
        terms += [w for w in _WORD.findall(question)[1:] if w[:1].isupper() and w.lower() not in _ASKING]
    return list(dict.fromkeys(t for t in terms if t and any(c.isalnum() for c in t)))


def required_terms(question: str) -> list[str]:
    """What the evidences must mention for the question to be answerable: its key terms, its numbered names
    ("Windows 11": the name just before the number), and in a German question the names that its capitals
    alone do not tell ("in Tokio", "Discord-Server"; `names.py`)."""
    terms = key_terms(question) + numbered_names(question)
    if is_german(question):
        terms += german_names(question)
    return list(dict.fromkeys(terms))


def content_terms(question: str) -> list[str]:
    """The question's words that say what it is about (stemmed, no stop or asking words)."""
    words = [w for w in _WORD.findall(question) if w.lower() not in _ASKING]
    return list(dict.fromkeys(t for t in tokenize(" ".join(words)) if t not in STOPWORDS))


def missing_terms(terms: Iterable[str], texts: Iterable[str]) -> list[str]:
    """The terms the texts do not mention. A term with a digit must appear as written ("12.x", "9.0" also
    in "9.0.2"), a numbered name with its name just before the number ("Windows 11"); several words when half
    of them are; a word when its tokens (as BM25 has them) occur, it is part of a longer word ("XT" of
    "OpenXT"), abbreviates one ("OXT"), or is one typo away
    ("Measuremnt", "Dunlop"); an acronym that is a stop word in lower case ("IT") only as written. Nothing in
    a link's address counts ("…maps?q=…+Australia" does not mention Australia)."""
    tokens: set[str] = set()
    cased: set[str] = set()
    flat: list[str] = []
    for text in texts:
        text = _LINK.sub(" ", text)
        tokens.update(tokenize(text))
        cased.update(_RAW.findall(text))
        flat.append(_flat(text))
    words = {w.lower() for w in cased}
    joined = " ".join(flat)
    return [
        t for t in terms if not (t in cased if _stop_acronym(t) else _mentioned(t, tokens, words, joined))
    ]


def _stop_acronym(term: str) -> bool:
    """An acronym that is a stop word in lower case ("IT", "US"): only the acronym itself, as written, is it."""
    return term.isalpha() and term.isupper() and len(term) >= 2 and not tokenize(term)


def _flat(text: str) -> str:
    """Lower case, every run of other characters than letters, digits and dots one space."""
    return " " + " ".join(re.sub(r"[^\w.]+", " ", text.lower()).split()) + " "


def _mentioned(term: str, tokens: set[str], words: set[str], joined: str) -> bool:
    name, _, number = term.rpartition(" ")
    if name.isalpha() and number[:1].isdigit():
        return _number_named(name, number, joined)
    if any(c.isdigit() for c in term):
        return re.search(" " + re.escape(_flat(term).strip()) + "(?![0-9])", joined) is not None
    parts = term.replace("-", " ").split() if " " in term else [term]
    if len(parts) > 1:  # a run of names: most of its words
        return 2 * sum(_mentioned(p, tokens, words, joined) for p in parts) >= len(parts)
    if set(tokenize(term)) <= tokens:
        return True
    low = term.lower()
    if not low.isalpha():
        return False
    if term.isupper() and len(term) >= 3 and any(w.startswith(low[0]) and w.endswith(low[1:]) for w in words):
        return True  # an abbreviation: OXT for OpenXT
    if len(term) >= 3 and term[:-1].isupper() and term.endswith("s"):
        return _mentioned(term[:-1], tokens, words, joined)  # a plural: RCs
    if len(low) >= 2 and any(low in w for w in words if len(w) > len(low)):
        return True
    allowed = (len(low) >= 5) + (len(low) >= 9)
    return allowed > 0 and any(
        abs(len(w) - len(low)) <= allowed and w[0] == low[0] and _within(low, w, allowed) for w in words
    )


def _number_named(name: str, number: str, joined: str) -> bool:
    """Whether the number stands somewhere with the name among the three words before it and no other number
    between them ("Dell OptiPlex 7040" names "Optiplex 7040", "OpenXT 9.0.2" names "OXT 9.0.2"), or right
    after a release word ("Version 6" in a page's title names "OpenXT 6" on an OpenXT wiki)."""
    for match in re.finditer(" " + re.escape(number.lower()) + "(?![0-9])", joined):
        before = joined[: match.start()].split()[-3:]
        while any(c.isdigit() for c in " ".join(before)):  # "Windows 10 with 11" does not name Windows 11
            before = before[1:]
        if before and before[-1] in _RELEASE:
            return True
        if before and _mentioned(
            name, set(tokenize(" ".join(before))), set(before), " " + " ".join(before) + " "
        ):
            return True
    return False


def _within(a: str, b: str, limit: int) -> bool:
    """Whether the edit distance of two words is at most `limit`."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > limit:
            return False
        previous = current
    return previous[-1] <= limit


def page_texts(evidences: Sequence[Evidence], source: int) -> list[str]:
    """What the given evidences say of the page of `evidences[source]`: its contextualized texts."""
    page = evidences[source].page_id
    return [e.context_text for e in evidences if e.page_id == page]


def rankings_agree(lexical: Sequence[Hit], dense: Sequence[Hit], *, depth: int = 3) -> bool:
    """Whether the lexical and the dense ranking of a hybrid retrieval find one page among their first
    `depth` hits. A question the wiki does not cover finds words in one place and meaning in another (or no
    word at all); one it covers, the same page."""
    pages = {h.evidence_id.rpartition(":")[0] for h in lexical[:depth]}
    return any(h.evidence_id.rpartition(":")[0] in pages for h in dense[:depth])


@runtime_checkable
class ReadsRankings(Protocol):
    """An answerer that also weighs whether retrieval's rankings agree (`rankings_agree`); the pipeline
    tells it. Any other answerer is asked as usual."""

    reads_rankings: bool

    def answer(
        self, question: str, evidences: Sequence[Evidence], *, rankings_agree: bool = True
    ) -> Answer: ...


def coverage(question: str, texts: Sequence[str], *, evidence_german: bool | None = None) -> float | None:
    """The share of the question's content words that the texts hold; None when words cannot match: the
    question and the texts (`evidence_german`, None when mixed) in different languages, or no such words."""
    words = content_terms(question)
    if not words or evidence_german is None or evidence_german != is_german(question):
        return None
    return 1 - len(missing_terms(words, texts)) / len(words)


# A question for a price or a pay is answered by an amount of money: pages without one answer something else
# ("How much does the Atlas team earn?" over a wiki whose every page names the team).
_MONEY_QUESTION = re.compile(
    r"\bhow much\b.*\b(?:earn|earns|make|makes|cost|costs|pay|pays|paid|charge|charges)\b"
    r"|\b(?:price|prices|pricing|salary|salaries|wage|wages|fee|fees|budget|budgets)\b"
    r"|\b(?:verdien\w*|kostet|kosten|gehalt|gehälter|lohn|löhne|preis\w*|gebühr\w*|bezahl\w*)\b",
    re.IGNORECASE,
)
_MONEY = re.compile(r"[€$£¥]|\b(?:EUR|USD|GBP|CHF|JPY)\b|\b(?:[Ee]uros?|[Dd]ollars?|[Ff]ranken|[Cc]ents?)\b")


def lacks_money(question: str, texts: Iterable[str]) -> bool:
    """Whether the question asks for a price or a pay and none of the texts names an amount of money."""
    return _MONEY_QUESTION.search(question) is not None and not any(_MONEY.search(t) for t in texts)


def supported(
    question: str, evidences: Sequence[Evidence], quoted: Collection[int], *, min_coverage: float
) -> bool:
    """Whether every key term of the question is in some evidence, and (same language) the pages of the
    `quoted` evidences hold `min_coverage` of its content words. Key terms are looked up in all evidences:
    in the quoted pages alone, 7-8 % of the dev split's answerable questions missed one (README). A question
    for a price or a pay also needs an amount of money in some evidence (`lacks_money`)."""
    everything = [e.context_text for e in evidences]
    if missing_terms(required_terms(question), everything) or lacks_money(question, everything):
        return False
    texts = [t for k in sorted(quoted) for t in page_texts(evidences, k)]
    german = {evidence_is_german(evidences[k]) for k in quoted}
    share = coverage(question, texts, evidence_german=german.pop() if len(german) == 1 else None)
    return share is None or share >= min_coverage


def clearly_unsupported(question: str, evidences: Sequence[Evidence], *, min_coverage: float) -> bool:
    """Whether no answer can come from these evidences: one of the question's key terms is in none of them,
    it asks for a price or a pay and none names an amount of money, or (words matching, same language) they
    hold less than `min_coverage` of its content words."""
    texts = [e.context_text for e in evidences]
    if not texts or missing_terms(required_terms(question), texts) or lacks_money(question, texts):
        return True
    german = {evidence_is_german(e) for e in evidences}
    language = german.pop() if len(german) == 1 else None
    share = coverage(question, texts, evidence_german=language)
    return share is not None and share < min_coverage


__all__ = [
    "ReadsRankings",
    "clearly_unsupported",
    "content_terms",
    "coverage",
    "key_terms",
    "lacks_money",
    "missing_terms",
    "not_found_answer",
    "page_texts",
    "rankings_agree",
    "required_terms",
    "supported",
]
