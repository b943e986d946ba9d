"""Topic switches inside a thread: does a question start a new topic, or follow the one before it?

Two tests, both needed. By its words (pure): the question stands on its own — it opens with a question word,
names something (two content words, or one that is a name: "What is VirtIO?", "Wer ist im Urlaub?"; without a
question word, five and a question mark: "Verwenden sowohl manuelle Builds … in Windows?") and carries no
follow-up cue: no opening "and …", "what about …", "und …", "was ist mit …", no word that points
back ("it", "these", "he", "es", "diese", "dafür") — and it shares no content word with the current topic's
questions (two, for a long question: the product's name alone does not hold it there), or it names a thing the
topic did not. A new version or number leaves it to its retrieval whatever it shares ("… OpenXT 7.x?" after
9.0.2); a new name is held by a shared word few of the wiki's pages have ("OEM", `hold`), while words on many
pages ("used", "tests") let it leave only when none of the topic's pages comes near it. By where it leads
(`settle`, run by the pipeline on the question's own retrieval): it is sure where it leads, and that is not to
the pages the topic was answered from — they neither hold its words nor come near it in meaning; or, unsure
(a German question over English pages is often scattered), it names a thing and none of the topic's pages is
among the first of its candidates (`MEET_DEPTH` of each ranking: deeper, a scattered ranking meets every page).
The topic's pages are those its turns were answered from first: a page merely shown beside them (a second or
third source) would hold a new question on a topic the thread was never about. A
follow-up that merely sounds self-contained ("What is the recommended configuration?" about BuildBot) still
leads to its page, or nowhere in particular, and stays on the topic.

A question that passes both is asked as it is, and starts the topic that later follow-ups are completed from.
English and German; words are compared by their first letters, so "tests" meets "tested" and "Tests".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace

from threadwise.core.answer.support import key_terms, missing_terms
from threadwise.core.language import is_german
from threadwise.core.retrieve.retriever import Retrieval
from threadwise.core.retrieve.tokenize import STOPWORDS
from threadwise.core.types import Completion, Hit, PastTurn

_WORD = re.compile(r"[^\W_]+(?:[.\-/][^\W_]+)*", re.UNICODE)
_FOLD = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})

# A question that opens with one of these continues what came before.
_OPENERS = re.compile(
    r"^\s*(?:and|but|or|so|also|then|plus|what about|how about|and what|same for|coming back|back to|"
    r"und|aber|oder|also|dann|sowie|was ist mit|wie ist es mit|wie sieht es mit|und was|zurück zu|"
    r"gleiches gilt|dasselbe)\b",
    re.IGNORECASE,
)
# Words that point back to something said before (lower case: a capitalised "Sie" is the polite "you").
_POINTING = frozenset(
    """it its itself this these those they them their theirs he him his she her hers such same above
    aforementioned former latter previous mentioned one ones
    es dies diese dieser diesem diesen dieses dort dabei dafür dafuer damit davon dazu darauf darin daran darüber
    darueber dasselbe derselbe dieselbe denselben er ihm ihn ihnen sein seine seinen seiner seinem ihre ihren
    ihrer ihrem jene jener jenes sie""".split()
)
# Openings that ask a question in their own right; a fragment without one is elliptical unless it is long.
_ASKING = frozenset(
    """what which who whom whose when where why how is are was were do does did can could should would will
    shall has have had may might must tell list name explain describe give
    was welche welcher welches welchen welchem wer wen wem wessen wann wo woher wohin warum weshalb wieso wie
    wozu wofür wofuer womit woran worauf wonach wovon worüber worueber ist sind war waren hat haben hatte hatten kann können koennen könnte
    koennte soll sollte sollten muss müssen muessen gibt gab wird werden wurde wurden nenne nennen erkläre
    erklaere beschreibe""".split()
)
# A question word may follow a preposition: "For which values …?", "Bei welchen Maschinen …?".
_PREPOSITIONS = frozenset(
    "for in on at by with from to of during about bei für fuer in mit von nach an auf zu aus über ueber während".split()
)
# Lead-ins that say nothing about the topic ("by the way, what is TBOOT?").
_LEAD_IN = re.compile(
    r"^\s*(?:by the way|btw|finally|also|ok(?:ay)?|now|übrigens|uebrigens|abschließend|abschliessend|"
    r"noch eine frage|one more question|another question)\s*[,:;-]?\s*",
    re.IGNORECASE,
)
# Words of a question that name no topic.
_EMPTY = (
    STOPWORDS
    | _POINTING
    | _ASKING
    | frozenset(
        """please tell me know i'd like want need mean means meaning thing things anything something anyone
    someone more else exactly actually really again still just about kind sort way much many
    bitte mir mich sagen wissen möchte moechte gern gerne eigentlich genau noch mal etwas jemand irgendein
    irgendeine viel viele mehr""".split()
    )
)
STEM = 5  # letters a word is compared by
LONG = 5  # content words of a question that needs two in common with its topic to stay on it


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _stem(word: str) -> str:
    word = word.translate(_FOLD)
    return word if any(c.isdigit() for c in word) else word[:STEM]


def content_words(text: str) -> list[str]:
    """The words of `text` that name what it is about (not question words, pronouns or stop words)."""
    return [w for w in _words(text) if w not in _EMPTY and w.translate(_FOLD) not in _EMPTY and len(w) > 1]


def _points_back(text: str) -> bool:
    tokens = _WORD.findall(text)
    for i, token in enumerate(tokens):
        word = token.lower()
        if word == "sie" and token != "sie":
            continue  # "Sie": the polite "you"
        if word == "es" and i > 0 and tokens[i - 1].lower() in ("gibt", "gab", "geht", "ging"):
            continue  # "gibt es …": there is
        if word in _POINTING:
            return True
        if word == "das" and (i == len(tokens) - 1 or tokens[i + 1][:1].islower()):
            return True  # "das" before no noun (German nouns are capitalised): "Warum führt das zu …?"
    return False


def _names_something(word: str, position: int) -> bool:
    """A word that names a thing by itself: a version, a number, or a capitalised word inside the sentence."""
    return (
        any(c.isdigit() for c in word)
        or (position > 0 and word[:1].isupper())
        or word[1:] != word[1:].lower()
    )


def _asks(tokens: Sequence[str], text: str) -> bool:
    """Whether the question opens with a question word, after a preposition, or after a leading phrase and a
    comma ("in qemu 2.6.2 uprev testing, was the installation … successful?")."""
    words = [t.lower() for t in tokens]
    if words[:1] and words[0] in _ASKING:
        return True
    if len(words) > 1 and words[0] in _PREPOSITIONS and words[1] in _ASKING:
        return True
    after_comma = _WORD.findall(text.partition(",")[2])
    return bool(after_comma) and after_comma[0].lower() in _ASKING


def stands_alone(question: str) -> bool:
    """Whether `question` can be understood without the thread: it asks, with its own words, no follow-up cue."""
    text = _LEAD_IN.sub("", question.strip())
    if _OPENERS.match(text) or _points_back(text):
        return False
    own = content_words(text)
    tokens = _WORD.findall(text)
    long = len(set(own)) >= LONG and text.rstrip().endswith(
        "?"
    )  # a German yes/no question opens with its verb
    if not own or not (_asks(tokens, text) or long):
        return (
            False  # a fragment ("Decision?", "Isolation of display outputs?") goes on from what came before
        )
    if len(own) == 1:  # "What is VirtIO?", "Wer ist im Urlaub?" stand alone; "What was the reason?" does not
        return any(_names_something(t, i) for i, t in enumerate(tokens) if t.lower() == own[0])
    return True


def shared_pairs(question: str, topic: Iterable[str]) -> list[tuple[str, str]]:
    """Each content word of `question` the texts `topic` used, with the topic's word it met (by their first
    letters, or as a part of a German compound: "Schutz" in "Eingabeschutz"; "BuildBot" meets "Build")."""
    seen = [w.translate(_FOLD) for text in topic for w in content_words(text)]
    pairs = []
    for word in dict.fromkeys(w.translate(_FOLD) for w in content_words(question)):
        met = next(
            (
                w
                for w in seen
                if _stem(w) == _stem(word) or (min(len(word), len(w)) >= STEM and (word in w or w in word))
            ),
            None,
        )
        if met is not None:
            pairs.append((word, met))
    return pairs


def shared_words(question: str, topic: Iterable[str]) -> int:
    """How many of `question`'s content words the texts `topic` used (`shared_pairs`)."""
    return len(shared_pairs(question, topic))


def shares_topic(question: str, topic: Iterable[str]) -> bool:
    """Whether `question` stays on the topic of the texts `topic`: a word of it, or two of a long question."""
    return _enough_shared(question, shared_words(question, topic))


def _enough_shared(question: str, shared: int) -> bool:
    """Whether `shared` words in common hold `question` on a topic: one, or two for a long question."""
    own = len(
        {part for word in content_words(question) for part in word.split("-")}
    )  # "Build-Standorte": two
    return shared >= (2 if own >= LONG else 1)


def numbers(text: str) -> set[str]:
    """The versions, numbers and dates `text` names ("7.0", "7.x", "9010", "2014", "18.8.16")."""
    return {w.lower() for w in _WORD.findall(text) if any(c.isdigit() for c in w)}


def named_things(text: str) -> set[str]:
    """The words of `text` that name a thing by themselves (lower case): a version or a number, a name written
    with an inner capital or a dot ("OpenXT", "BuildBot", "./build.sh"), and in English a capitalised word
    inside the sentence (in German every noun is one)."""
    tokens = _WORD.findall(_LEAD_IN.sub("", text.strip()))
    german = is_german(text)
    return {
        token.lower()
        for i, token in enumerate(tokens)
        if any(c.isdigit() for c in token)
        or token[1:] != token[1:].lower()
        or "." in token
        or "/" in token
        or (not german and i > 0 and token[:1].isupper())
    }


def names_new_thing(question: str, topic: Iterable[str]) -> bool:
    """Whether `question` names a thing (`named_things`) that none of the texts `topic` mentioned."""
    seen = {w.lower() for text in topic for w in _WORD.findall(text)}
    return bool(named_things(question) - seen)


def may_start_topic(question: str, topic: Sequence[str]) -> bool:
    """Whether `question`, asked after the questions `topic` (the current topic's, oldest first), may start a
    new topic by its words: it stands alone, and it shares none of the topic's words or names a thing the topic
    did not ("What is BuildBot used for?" after questions on the Dell Optiplex's BIOS and build versions shares
    their "used" and "build"). `hold` and `settle` decide."""
    return (
        bool(topic)
        and stands_alone(question)
        and (not shares_topic(question, topic) or names_new_thing(question, topic))
    )


def holding_words(question: str, topic: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The words `question` shares with the topic `topic` (pairs: its own, the topic's) that may hold it there
    though it names a new thing (`hold` reads how common they are). None when it names a version or number the
    topic did not: "How many build locations were used for OpenXT 7.x?" after questions on 9.0.2 tests asks about
    another release, whatever words it shares."""
    pairs = shared_pairs(question, topic)
    seen = {n for text in topic for n in numbers(text)}
    if not _enough_shared(question, len(pairs)) or numbers(question) - seen:
        return ()
    return tuple(pairs)


def topic_start(history: Sequence[PastTurn]) -> int:
    """Where the thread's current topic begins: the last answered turn that was asked as it stood (a first
    question, or one that started a new topic); what people said without asking (no pages) starts none."""
    for i in range(len(history) - 1, 0, -1):
        turn = history[i]
        if turn.page_ids and turn.completed_question.split() == turn.question.split():
            return i
    return 0


NEW_TOPIC = "new topic (stands alone, and retrieved alone it does not lead to the topic's pages)"
# Measured on the dev split and the topic-switch set (bench/topic_switch.py); the README has the numbers.
LEXICAL_SHARE = 0.6  # a topic page with this share of the best page's BM25 score holds the question's words
SURE_DEPTH = 2  # the best page by words among this many best by meaning (or the other way round): sure
AGREED_SHARE = (
    0.8  # the share a topic page needs when words, meaning and page ranking agree on a page elsewhere
)
CLEAR_LEAD = 0.75  # an English question's best page by words leads clearly when the next has under this share
COMMON_SHARE = 0.25  # a word on this share of the wiki's pages or more holds no question on a topic
MEET_DEPTH = 10  # a topic page among this many first of a ranking meets the question (= evidences shown)
DENSE_GAP = 0.02  # a topic page's best evidence this close to the best evidence's cosine is where it leads …
DENSE_DEPTH = 3  # … when it is among this many first by meaning (five hits of another page first: elsewhere)


def leads_to(alone: Retrieval, pages: Collection[str]) -> bool:
    """Whether the question retrieved alone leads to one of `pages`: by its words (the page ranking's BM25 score
    of a topic page against the best page's), or by meaning (the dense score of a topic page's best evidence
    against the best one's, among the first `DENSE_DEPTH`; what counts for a question in another language than
    the pages)."""
    if holds_words(alone, pages):
        return True
    if not alone.dense:
        return False
    near = [h.score for h in alone.dense[:DENSE_DEPTH] if _page(h) in pages]
    return bool(near) and alone.dense[0].score - max(near) <= DENSE_GAP


def holds_words(alone: Retrieval, pages: Collection[str], share: float = LEXICAL_SHARE) -> bool:
    """Whether one of `pages` holds the words of the question retrieved alone: its page score by BM25 is at
    least `share` of the best page's."""
    best_page = alone.pages[0].score if alone.pages else 0.0
    on_topic = [h.score for h in alone.pages if h.evidence_id in pages]
    return best_page > 0 and bool(on_topic) and max(on_topic) >= share * best_page


def _page(hit: Hit) -> str:
    return hit.evidence_id.partition(":")[0]


def meets_topic(alone: Retrieval, pages: Collection[str]) -> bool:
    """Whether any of `pages` is among the first candidates (`MEET_DEPTH`) of the question's own retrieval: by its
    words, by meaning, in the page ranking or in the evidences. Deeper down a page met says little (the 50 dense
    hits of a question lie within about 0.03 of each other): a topic page found only there (32nd by meaning for
    the German "Welche Anwendungsfälle der OpenXT-Plattformarchitektur …?" after BuildBot) holds nothing."""
    d = MEET_DEPTH
    return (
        any(_page(h) in pages for h in (*alone.lexical[:d], *alone.dense[:d]))
        or any(h.evidence_id in pages for h in alone.pages[:d])
        or any(e.page_id in pages for e in alone.evidences[:d])
    )


def names_a_thing(question: str) -> bool:
    """Whether `question` is specific enough to be a topic of its own: it names a thing (`named_things`), or has
    `LONG` content words."""
    return bool(named_things(question)) or len(set(content_words(question))) >= LONG


def starts_anew(alone: Retrieval, question: str, pages: Collection[str]) -> bool:
    """Whether `question`, retrieved alone (`alone`), starts a new topic rather than going on with `pages`.

    None of its words in the wiki: it is about none of the pages, so it starts anew — when it is English (a
    German question over English pages cannot match by its words, and stays). Otherwise it must be sure where it
    leads — the best page by words among the first by meaning or the other way round, or its first two evidences
    on one page — and lead there, not to the topic's pages. Unsure, it starts anew when it names a thing
    (`names_a_thing`) and none of the topic's pages is among its first candidates (`meets_topic`), or those
    that are leave out a version or name it asks about (`lacks_its_names`). A follow-up that
    sounds self-contained but leads nowhere in particular ("Welche Konfiguration wird empfohlen?") stays on the
    topic."""
    if not alone.lexical:
        return not is_german(question)
    by_words = [_page(h) for h in alone.lexical[:SURE_DEPTH]]
    by_meaning = [_page(h) for h in alone.dense[:SURE_DEPTH]]
    first = [e.page_id for e in alone.evidences[:2]]
    sure = bool(by_meaning) and (by_words[0] in by_meaning or by_meaning[0] in by_words)
    sure = sure or (len(first) == 2 and first[0] == first[1])
    if not sure and not is_german(question) and _clear_by_words(alone, pages):
        return True
    if not sure:  # scattered (a German question over English pages): a named thing the topic does not hold
        return names_a_thing(question) and (
            not meets_topic(alone, pages) or lacks_its_names(alone, question, pages)
        )
    if _one_best_page(alone) not in (
        None,
        *pages,
    ):  # words, meaning and page ranking agree on a page elsewhere:
        return not holds_words(alone, pages, AGREED_SHARE)  # nor a topic page as near in meaning
    return not leads_to(alone, pages)


def lacks_its_names(alone: Retrieval, question: str, pages: Collection[str]) -> bool:
    """Whether the topic's pages, as the question's own retrieval shows them (its evidences from those pages),
    leave out something the question names: a version, an acronym, a CamelCase name (`key_terms`, as the
    answer's support check reads them). "Wie viele Überarbeitungen hat die Gov1 OXT-Projekt-Governance-Charta
    durchlaufen?" meets the Gov2 platform document first by words, but that page never says "Gov1"."""
    terms = key_terms(question)
    texts = [e.context_text for e in alone.evidences if e.page_id in pages]
    return bool(terms and texts and missing_terms(terms, texts))


def _clear_by_words(alone: Retrieval, pages: Collection[str]) -> bool:
    """Whether the question's words lead clearly to one page outside the topic: first in the page ranking and by
    words, the next page under `CLEAR_LEAD` of its score, and no topic page holding its words."""
    if len(alone.pages) < 2 or not alone.lexical:
        return False
    best = alone.pages[0]
    return (
        best.evidence_id == _page(alone.lexical[0])
        and best.evidence_id not in pages
        and alone.pages[1].score < CLEAR_LEAD * best.score
        and not holds_words(alone, pages)
    )


def _one_best_page(alone: Retrieval) -> str | None:
    """The page that is first by words, by meaning and in the page ranking alike, if there is one."""
    if not (alone.lexical and alone.dense and alone.pages):
        return None
    firsts = {_page(alone.lexical[0]), _page(alone.dense[0]), alone.pages[0].evidence_id}
    return firsts.pop() if len(firsts) == 1 else None


def hold(completion: Completion, word_share: Callable[[str], float]) -> Completion:
    """`completion` kept on its topic when its question shares a word with the topic that few of the wiki's pages
    hold (`word_share` under `COMMON_SHARE`, on both sides: "OEM", "Dell"); else as it was. Common words ("used",
    "tests", the product's name) hold nothing: the question is left to `settle`. Nothing is retrieved."""
    rare = [pair for pair in completion.shared if all(word_share(word) < COMMON_SHARE for word in pair)]
    if not completion.alone or not rare:
        return completion
    return _stays(completion, f"shares {rare[0][0]!r} with it")


def settle(completion: Completion, alone: Retrieval) -> Completion:
    """`completion` once its question was retrieved alone (`alone`): the question as asked when it starts a new
    topic (`starts_anew`), else the completion with the topic. A question that shares (common) words with the
    topic must also never meet the topic's pages (`meets_topic`): "how many unique measured launches were
    used?" about a hardware test report leads elsewhere by itself, but the report is among its candidates."""
    if not completion.alone:
        return completion
    pages = set(completion.topic_pages)
    anew = starts_anew(alone, completion.alone, pages)
    if anew and completion.shared:
        anew = not meets_topic(alone, pages)
    if anew:
        return Completion(question=completion.alone, method=NEW_TOPIC, calls=completion.calls)
    return _stays(completion)


def _stays(completion: Completion, why: str = "") -> Completion:
    method = completion.method + "; stays on the topic" + (f" ({why})" if why else "")
    return replace(completion, alone="", topic_pages=(), shared=(), method=method)


def opens_a_question(text: str) -> bool:
    """Whether `text` opens as a question does: a question word first (after a lead-in such as "btw," or a
    preposition too). Unlike `stands_alone`, a question word after a comma does not count: "Danke, hat
    geklappt." is no question."""
    words = [w.lower() for w in _words(_LEAD_IN.sub("", text.strip()))]
    return bool(words) and (
        words[0] in _ASKING or (len(words) > 1 and words[0] in _PREPOSITIONS and words[1] in _ASKING)
    )
