"""Topic switches inside a thread (issue 28): a question that stands on its own starts a new topic, a follow-up
follows the latest topic, in English and German; the offline completer and the sample-wiki thread end to end."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from threadwise.cli.qa_cmds import render_turn, use_docs
from threadwise.core.complete.conversation import conversation_history
from threadwise.core.complete.history import SEPARATOR, HistoryCompleter
from threadwise.core.complete.topic import (
    MEET_DEPTH,
    NEW_TOPIC,
    hold,
    holding_words,
    may_start_topic,
    settle,
    stands_alone,
    topic_start,
)
from threadwise.core.retrieve.retriever import Retrieval
from threadwise.core.types import Evidence, Hit, PastTurn
from threadwise.db.conversations import ThreadKey
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

ALICE = "What is Alice's action item from the October 14 meeting?"
DUE = "and when is it due?"
VACATION = "Wer ist im Urlaub?"
FRANCE = "What is the capital of France?"


def turns(*questions: str) -> list[PastTurn]:
    """Answered turns, each asked as it stood, each answered from a page of its own."""
    return [
        PastTurn(question=q, completed_question=q, answer="", page_ids=(f"p{i}",))
        for i, q in enumerate(questions)
    ]


def followed(question: str, *earlier: str, page: str) -> PastTurn:
    """An answered follow-up: completed with the questions before it, answered from `page`."""
    return PastTurn(
        question=question,
        completed_question=SEPARATOR.join([question, *earlier]),
        answer="",
        page_ids=(page,),
    )


@pytest.mark.parametrize(
    "question",
    [
        FRANCE,
        VACATION,
        "What is VirtIO?",
        "Which BIOS version does the ThinkPad T14 Gen 3 need for the 4.2 upgrade?",
        "By the way, what is TBOOT?",
        "Gibt es einen Notfallkontakt für das Wochenende?",
        "For which laptops is the BIOS update required?",
        "in the 4.2 release test, was the ThinkPad upgraded?",
        "Wonach richtet sich die Urlaubsplanung?",
    ],
)
def test_questions_with_their_own_words_stand_alone(question: str) -> None:
    assert stands_alone(question)


@pytest.mark.parametrize(
    "question",
    [
        DUE,
        "And what about TPM?",
        "What about layer creation and changes?",
        "Where is it located?",
        "Did he also propose these ideas for OpenXT?",
        "What was the reason?",
        "Decision?",
        "By whom?",
        "Und was ist mit TPM?",
        "Wo ist es zu finden?",
        "Was war der Grund dafür?",
        "Warum führt das zu viel Komplexität?",
        "Sind diese von Microsoft signiert?",
        "Welche Version war es?",
        "Isolation of display outputs?",
    ],
)
def test_follow_up_cues_and_fragments_keep_a_question_on_the_topic(question: str) -> None:
    assert not stands_alone(question)
    assert not may_start_topic(question, [ALICE])


@pytest.mark.parametrize(
    "question",
    [
        "basic approaches for testing OpenXT pull request processes?",
        "os used in the OEM N config in the openxt 7.0 hardware testing?",
        "Verwenden sowohl manuelle Builds für OpenXT-Treiber als auch Builds aus dem OpenXT-Builder "
        "Entwicklungszertifikate in Windows?",  # a German yes/no question opens with its verb
    ],
)
def test_a_long_question_without_a_question_word_is_settled_by_its_retrieval(question: str) -> None:
    """Five content words and a question mark: it may start a topic; where its retrieval leads decides."""
    assert stands_alone(question)
    c = HistoryCompleter().complete(question, turns(ALICE))
    assert c.alone == question
    held = retrieved(question, words=[("geo", 9.0), ("p0", 8.0)], meaning=[("geo", 0.86), ("p0", 0.85)])
    assert settle(c, held).alone == "" and settle(c, held).method != NEW_TOPIC


def test_a_question_of_its_own_that_shares_words_with_the_topic_and_names_nothing_new_stays_on_it() -> None:
    topic = ["What was the BIOS version used for Dell Optiplex 7040 in the OpenXT 9.0 measurement tests?"]
    assert stands_alone("Which measurement tests did the Dell Optiplex 7040 pass?")
    assert not may_start_topic("Which measurement tests did the Dell Optiplex 7040 pass?", topic)
    # one word in common (the product) does not hold a long question of its own on the topic
    assert may_start_topic(
        "How many Intel CPU generations were tested during the OpenXT 7.0 hardware testing?", topic
    )
    # a hyphenated compound counts its parts: one word in common does not hold this long question either
    assert may_start_topic(
        "Wie viele Build-Standorte wurden für OpenXt 7.x verwendet?",
        ["was bewirkt ein erfolgreicher Durchlauf des Skripts ./build.sh für oxt 6?"],
    )
    # German compounds meet their parts
    assert not may_start_topic(
        "Welche Eingabegeräte sind vom Schutz betroffen?",
        ["Welche Eigenschaften haben mit Eingabeschutz zu tun?"],
    )


DELL = "What was the BIOS and Build versions used for Dell Optiplex 7040 in the OpenXT 9.0 measurement tests?"
OEM = "os used in the OEM N config in the openxt 7.0 hardware testing?"
# shares of the ConfQuestions pages that hold each word (measured over the eval index)
SHARES = {"used": 0.61, "build": 0.38, "buildbot": 0.03, "tests": 0.42, "tested": 0.42, "oem": 0.06}


def share(word: str) -> float:
    return SHARES.get(word.lower(), 0.0)


def test_a_question_that_names_another_release_is_left_to_its_retrieval_whatever_words_it_shares() -> None:
    question = "Which OpenXT 9.0.2 tests did Dell 9010 pass for the legacy system?"
    assert may_start_topic(question, [DELL])
    assert holding_words(question, [DELL]) == ()  # another version and machine: no shared word holds it
    c = hold(HistoryCompleter().complete(question, turns(DELL)), share)
    assert c.alone == question  # its retrieval decides: leading to the topic's page, it stays
    to_topic = retrieved(question, words=[("p0", 9.0), ("geo", 5.0)], meaning=[("p0", 0.86), ("geo", 0.8)])
    assert settle(c, to_topic).alone == "" and settle(c, to_topic).method != NEW_TOPIC


def test_a_rare_word_shared_with_the_topic_holds_a_question_that_names_a_new_thing() -> None:
    """The word "OEM" is on few pages: the question stays on the OEM test report without being retrieved alone."""
    question = "was audio playback and recording tested for OEM Model N configuration?"
    c = HistoryCompleter().complete(question, turns(OEM))
    assert c.alone == question and ("oem", "oem") in c.shared  # "Model" is new, so it may leave
    held = hold(c, share)
    assert held.alone == "" and held.question == c.question and "stays on the topic" in held.method


def test_common_shared_words_let_a_named_thing_leave_only_when_no_topic_page_comes_near() -> None:
    """The words "used" and "build" are on most pages: they do not hold "What is BuildBot used for?" on the Dell report.
    It leaves when its retrieval leads elsewhere and meets none of the topic's pages among its first candidates."""
    question = "What is BuildBot used for?"
    c = hold(HistoryCompleter().complete(question, turns(DELL)), share)
    assert c.alone == question and c.shared  # every shared word is common: not held
    elsewhere = retrieved(
        question, words=[("buildbot", 9.0), ("geo", 4.0)], meaning=[("buildbot", 0.86), ("geo", 0.8)]
    )
    assert settle(c, elsewhere).question == question and settle(c, elsewhere).method == NEW_TOPIC
    # the same leading elsewhere, but the topic's page among its first candidates: it stays
    near = retrieved(
        question, words=[("buildbot", 9.0), ("geo", 4.0)], meaning=[("buildbot", 0.86), ("p0", 0.8)]
    )
    assert settle(c, near).alone == "" and settle(c, near).method != NEW_TOPIC
    # "how many unique measured launches were used?" names nothing new: "used" keeps it there by its words
    assert not may_start_topic("how many unique measured launches were used?", [OEM])


def test_the_topic_starts_at_the_last_turn_asked_as_it_stood() -> None:
    alice = turns(ALICE)[0]
    due = followed(DUE, ALICE, page="p0")
    assert topic_start([alice, due]) == 0
    assert topic_start([alice, due, *turns(VACATION)]) == 2
    # what people said in the thread without asking (no pages) starts no topic
    assert topic_start(conversation_history([], said=["the build is red", "any idea?"])) == 0


def retrieved(query: str, *, words: list[tuple[str, float]], meaning: list[tuple[str, float]]) -> Retrieval:
    """A retrieval of `query`: the pages its words reach with their BM25 scores, and its dense hits (page, cosine),
    one evidence per page, best first."""
    lexical = [Hit(f"{p}:1", s, i) for i, (p, s) in enumerate(words, start=1)]
    dense = [Hit(f"{p}:1", s, i) for i, (p, s) in enumerate(meaning, start=1)]
    pages = [Hit(p, s, i) for i, (p, s) in enumerate(words, start=1)]
    return Retrieval(query=query, evidences=[], lexical=lexical, dense=dense, pages=pages)


def test_a_question_that_may_start_a_topic_is_completed_and_marked_and_settled_by_its_retrieval() -> None:
    history = [*turns(ALICE), followed(DUE, ALICE, page="p0")]
    c = HistoryCompleter().complete(f"  {FRANCE} ", history)
    assert c.question == SEPARATOR.join([FRANCE, DUE, ALICE])  # what is asked unless settled
    assert c.alone == FRANCE and c.topic_pages == ("p0",)
    # it leads elsewhere, by its words and its meaning alike: a new topic
    elsewhere = retrieved(FRANCE, words=[("geo", 9.0), ("p0", 1.0)], meaning=[("geo", 0.86), ("p0", 0.80)])
    new = settle(c, elsewhere)
    assert new.question == FRANCE and new.method == NEW_TOPIC and new.alone == ""
    # none of its words is in the wiki (an English question): about none of the pages, a new topic too
    assert settle(c, retrieved(FRANCE, words=[], meaning=[("p0", 0.75), ("geo", 0.74)])).question == FRANCE


@pytest.mark.parametrize(("topic_page_at", "new"), [(2, False), (3, False), (4, True), (6, True)])
def test_near_in_meaning_leads_to_the_topic_only_among_the_first_hits(topic_page_at: int, new: bool) -> None:
    """ "wo hat George Dunlop 2014 einen Vortrag über Openxt gehalten?" after a meeting's minutes: its first five
    dense hits are all one talks page, the minutes sixth but within 0.02 of the best. That is not where it leads."""
    question = "wo hat George Dunlop 2014 einen Vortrag über Openxt gehalten?"
    c = HistoryCompleter().complete(
        question, turns("Was war der geschlossene Tagesordnungspunkt im Meeting am 18.8.16?")
    )
    assert c.alone == question
    meaning = [("talks", 0.829 - i * 0.001) for i in range(5)]
    meaning.insert(topic_page_at - 1, ("p0", 0.829 - topic_page_at * 0.001))
    # sure: its words and its meaning agree on the talks page (though another page is first by words)
    words = [("misc", 6.6), ("talks", 6.5), ("p0", 1.7)]
    sure = retrieved(question, words=words, meaning=meaning)
    assert (settle(c, sure).method == NEW_TOPIC) is new


@pytest.mark.parametrize(
    ("words", "meaning"),
    [
        ([("p0", 6.0), ("geo", 9.0)], [("geo", 0.86), ("p0", 0.80)]),  # the topic's page holds its words
        (
            [("geo", 9.0), ("atlas", 8.0)],
            [("atlas", 0.86), ("p0", 0.85)],
        ),  # the topic's page is as near in meaning
        # words and meaning disagree (unsure), and the topic's page is among its candidates
        ([("geo", 9.0)], [("atlas", 0.86), ("other", 0.85), ("p0", 0.70)]),
    ],
)
def test_a_question_that_leads_to_the_topic_or_is_unsure_stays_on_it(
    words: list[tuple[str, float]], meaning: list[tuple[str, float]]
) -> None:
    c = HistoryCompleter().complete(FRANCE, [*turns(ALICE), followed(DUE, ALICE, page="p0")])
    kept = settle(c, retrieved(FRANCE, words=words, meaning=meaning))
    assert kept.question == c.question and kept.alone == "" and "stays on the topic" in kept.method


def test_a_german_question_without_a_word_in_english_pages_stays_on_the_topic() -> None:
    question = "Welche Konfiguration wird empfohlen?"
    c = HistoryCompleter().complete(question, turns("What is BuildBot used for?"))
    assert c.alone == question
    assert settle(c, retrieved(question, words=[], meaning=[("other", 0.82), ("p0", 0.79)])).alone == ""


@pytest.mark.parametrize(
    ("question", "new"),
    [
        ("gibt es ein Git-Repository für die Oxt-Website?", True),  # a name with an inner capital
        ("was bewirkt ein erfolgreicher Durchlauf des Skripts ./build.sh für oxt 6?", True),
        ("Welche speziellen Register sind für das Trusted Platform Module verfügbar?", True),  # long
        ("Welche Konfiguration wird empfohlen?", False),  # names nothing of its own
        ("Wer sollte Schreibberechtigungen für die Tabelle haben?", False),
    ],
)
def test_an_unsure_question_that_names_a_thing_and_never_meets_the_topic_starts_anew(
    question: str, new: bool
) -> None:
    """A German question over English pages is often scattered: a named thing whose own retrieval finds none
    of the topic's pages among all its candidates starts a new topic all the same."""
    c = HistoryCompleter().complete(question, turns("What is BuildBot used for?"))
    assert c.alone == question
    nowhere = retrieved(
        question, words=[("geo", 5.0), ("atlas", 4.9)], meaning=[("other", 0.86), ("more", 0.85)]
    )
    assert (settle(c, nowhere).method == NEW_TOPIC) is new
    met = retrieved(question, words=[("geo", 5.0), ("atlas", 4.9)], meaning=[("other", 0.86), ("p0", 0.80)])
    assert settle(c, met).alone == "" and settle(c, met).method != NEW_TOPIC


ARCHITECTURE = "Welche Sicherheitsziele nennt das OpenXT-Architekturdokument für die Netzwerkisolation?"


def scattered(question: str, topic_page_at: int) -> Retrieval:
    """An unsure retrieval of a German question over English pages: words and meaning disagree, the dense hits
    lie within 0.03 of each other, and the topic's page `p0` comes `topic_page_at`-th by meaning."""
    meaning = [(f"other{i}", 0.87 - i * 0.002) for i in range(1, 15)]
    meaning.insert(topic_page_at - 1, ("p0", 0.87 - topic_page_at * 0.002 + 0.001))
    return retrieved(question, words=[("geo", 5.0), ("atlas", 4.9)], meaning=meaning)


@pytest.mark.parametrize(("topic_page_at", "new"), [(2, False), (10, False), (11, True), (14, True)])
def test_an_unsure_question_meets_the_topic_only_among_its_first_candidates(
    topic_page_at: int, new: bool
) -> None:
    """Deep in a scattered ranking a question meets every page: the topic's page counts among its first ten."""
    assert MEET_DEPTH == 10
    c = HistoryCompleter().complete(ARCHITECTURE, turns("Wofür wird der BuildBot genutzt?"))
    assert c.alone == ARCHITECTURE and c.topic_pages == ("p0",)
    settled = settle(c, scattered(ARCHITECTURE, topic_page_at))
    assert (settled.method == NEW_TOPIC) is new
    assert settled.question == (ARCHITECTURE if new else c.question)


def page_evidence(page: str, text: str) -> Evidence:
    return Evidence(f"{page}:0", page, "OXT", page, "", 1, "passage", 0, text, text)


@pytest.mark.parametrize(
    ("topic_text", "new"),
    [("Gov2 platform: protection properties", True), ("OXT governance: the Gov1 charter, revised", False)],
)
def test_an_unsure_question_leaves_a_topic_whose_pages_never_name_its_thing(
    topic_text: str, new: bool
) -> None:
    """The Gov2 platform document comes first by words for "… Gov1 OXT-Projekt-Governance-Charta …": it meets the
    question, but it never says "Gov1", so the question is about something else; a topic page that does say it
    holds the question."""
    question = "Wie viele Überarbeitungen hat die Gov1 OXT-Projekt-Governance-Charta durchlaufen?"
    c = HistoryCompleter().complete(
        question, turns("Welche Eigenschaften der Gov2 Open XT Plattform haben mit Schutz zu tun?")
    )
    assert c.alone == question and c.topic_pages == ("p0",)
    unsure = retrieved(
        question, words=[("p0", 4.0), ("charter", 3.7)], meaning=[("arch", 0.849), ("other", 0.847)]
    )
    shown = [page_evidence("charter", "Gov1 OXT charter, revision 3"), page_evidence("p0", topic_text)]
    assert (settle(c, replace(unsure, evidences=shown)).method == NEW_TOPIC) is new


def test_the_topic_is_the_pages_its_turns_were_answered_from_first() -> None:
    """A page shown beside a turn's first source (a second or third source) is no topic of the thread: an unsure
    question that meets only that page among its first candidates starts anew."""
    builds = "Wie viele Build-Server nutzt das Projekt für OpenXT 8?"
    version = "Welche Version war es?"
    history = [
        PastTurn(question=builds, completed_question=builds, answer="", page_ids=("p0",)),
        PastTurn(
            question=version,
            completed_question=SEPARATOR.join([version, builds]),
            answer="",
            page_ids=("p0", "release-notes"),
        ),
    ]
    question = "Wie viele Intel-Generationen deckten die OpenXT 9.0-Hardwaretests ab?"
    c = HistoryCompleter().complete(question, history)
    assert c.alone == question and c.topic_pages == ("p0",)
    # words and meaning disagree (unsure); the page shown beside the topic is third by words: it starts anew
    beside = retrieved(
        question,
        words=[("hardware-tests", 8.2), ("xenclient", 6.4), ("release-notes", 6.2)],
        meaning=[("install", 0.857), ("upgrade", 0.856)],
    )
    assert settle(c, beside).method == NEW_TOPIC
    # the topic's own page there holds it
    near = retrieved(
        question,
        words=[("hardware-tests", 8.2), ("xenclient", 6.4), ("p0", 6.2)],
        meaning=[("install", 0.857), ("upgrade", 0.856)],
    )
    assert settle(c, near).alone == "" and settle(c, near).method != NEW_TOPIC


def test_a_question_whose_words_meaning_and_page_ranking_agree_on_a_page_outside_the_topic_starts_anew() -> (
    None
):
    """Sure beyond doubt: the topic's page being as near in meaning (a general page) does not hold it."""
    c = HistoryCompleter().complete(FRANCE, [*turns(ALICE), followed(DUE, ALICE, page="p0")])
    agreed = retrieved(FRANCE, words=[("geo", 9.0)], meaning=[("geo", 0.86), ("p0", 0.85)])
    assert settle(c, agreed).method == NEW_TOPIC
    # the topic's page holding most of its words (0.8 of the best page's score) still holds it, less does not
    held = retrieved(FRANCE, words=[("geo", 9.0), ("p0", 8.0)], meaning=[("geo", 0.86), ("p0", 0.85)])
    assert settle(c, held).alone == "" and settle(c, held).method != NEW_TOPIC
    less = retrieved(FRANCE, words=[("geo", 9.0), ("p0", 6.5)], meaning=[("geo", 0.86), ("p0", 0.85)])
    assert settle(c, less).method == NEW_TOPIC


def test_an_english_question_whose_words_lead_clearly_elsewhere_starts_anew_though_meaning_is_unsure() -> (
    None
):
    c = HistoryCompleter().complete(FRANCE, [*turns(ALICE), followed(DUE, ALICE, page="p0")])
    meaning = [("p0", 0.877), ("atlas", 0.876)]  # a near tie by meaning, the topic's page first
    clear = settle(c, retrieved(FRANCE, words=[("geo", 10.0), ("atlas", 7.0)], meaning=meaning))
    assert clear.method == NEW_TOPIC
    close = settle(c, retrieved(FRANCE, words=[("geo", 10.0), ("atlas", 9.0)], meaning=meaning))
    assert close.alone == "" and close.method != NEW_TOPIC


def test_a_follow_up_is_not_marked() -> None:
    c = HistoryCompleter().complete(DUE, turns(ALICE))
    assert c.question == f"{DUE}{SEPARATOR}{ALICE}" and c.alone == ""
    assert settle(c, retrieved(DUE, words=[("geo", 1.0)], meaning=[("geo", 0.9)])) == c


def test_a_follow_up_after_a_switch_follows_the_new_topic_only() -> None:
    new = "Which BIOS version does the ThinkPad T14 Gen 3 need for the 4.2 upgrade?"
    history = [*turns(ALICE), followed(DUE, ALICE, page="p0"), *turns(new)]
    c = HistoryCompleter().complete("And what about its TPM?", history)
    assert c.question == f"And what about its TPM?{SEPARATOR}{new}"
    assert "topic since turn 3" in c.method
    assert "Alice" not in c.question


def test_german_follow_up_after_a_german_switch() -> None:
    new = "Wie viel Resturlaub darf ich übertragen?"
    history = [*turns(ALICE), followed(DUE, ALICE, page="p0"), *turns(new)]
    c = HistoryCompleter().complete("Und bis wann muss er genommen werden?", history)
    assert c.question == f"Und bis wann muss er genommen werden?{SEPARATOR}{new}"


def test_without_topic_detection_the_whole_thread_is_one_topic() -> None:
    c = HistoryCompleter(topics=False).complete(FRANCE, turns(ALICE, DUE, VACATION))
    assert c.question == SEPARATOR.join([FRANCE, VACATION, DUE, ALICE]) and c.alone == ""


def test_what_people_said_before_the_question_is_part_of_the_topic() -> None:
    history = conversation_history([], said=["The nightly build on the Dell Optiplex is red again"])
    c = HistoryCompleter().complete("Which BIOS does the Dell Optiplex run?", history)
    assert c.question.startswith("Which BIOS does the Dell Optiplex run?" + SEPARATOR)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Threadwise]:
    """The offline default over the sample wiki, indexed the way `chat` and `ask` index it."""
    data_dir: Path = tmp_path_factory.mktemp("topics")
    yield use_docs(Threadwise(settings=load_settings(env={}, data_dir=data_dir)), None)


def test_trap_a_new_question_in_a_thread_is_not_answered_from_the_old_topic(sample: Threadwise) -> None:
    """The thread of issue 28, asked in one thread as `chat` and `ask --thread` ask (the conversation service
    remembers each turn), rendered as the CLI shows it."""
    key = ThreadKey("cli", "local", "test", "issue-28")
    views = {q: sample.conversations.ask(key, q) for q in (ALICE, DUE, VACATION, FRANCE)}
    due = views[DUE]
    assert "2024-10-18" in due.answer and ALICE in due.completed_question
    assert "(understood as: " in render_turn(due, hint="")
    vacation = views[VACATION]
    assert vacation.completed_question == VACATION
    assert vacation.sources[0].title == "Urlaubsregelung"
    france = views[FRANCE]
    assert france.completed_question == FRANCE and "understood as" not in render_turn(france, hint="")
    assert "understood as" not in render_turn(replace(france, question=f"  {FRANCE}\n"), hint="")
    assert france.not_found and not france.cited_sources, france.answer
    assert "Alice" not in france.answer


def test_the_index_says_how_common_a_word_is_among_its_pages(sample: Threadwise) -> None:
    """The shares `hold` reads come from the page index: of the six sample pages, "sync" is on the two weekly-sync
    minutes, "Urlaub" on the leave policy alone; a word the wiki lacks and a stop word are on none."""
    share = sample.retriever.word_share
    assert share("sync") == pytest.approx(2 / 6)
    assert share("Urlaub") == pytest.approx(1 / 6)
    assert share("Zebra") == 0.0 and share("the") == 0.0
