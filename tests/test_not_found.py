"""What a question names that the evidences must mention (issue 28): numbered names, and the names of a German
question that its capitals alone do not tell (core/answer/names.py, support.required_terms)."""

from __future__ import annotations

import pytest

from tests.test_attribution import evidence
from threadwise.core.answer.names import german_names, looks_german, numbered_names
from threadwise.core.answer.support import lacks_money, missing_terms, required_terms, supported


def test_a_name_with_a_number_is_one_term() -> None:
    assert numbered_names("Which Debian 12 packages does QEMU 7.2 need on the OEM Model Z?") == [
        "Debian 12",
        "QEMU 7.2",
    ]
    assert numbered_names("Hat der Dell Optiplex 7060 die OpenXT 7.0-Hardwaretests bestanden?") == [
        "Optiplex 7060",
        "OpenXT 7.0",
    ]


@pytest.mark.parametrize(
    "question",
    [
        "What changed in version 9.0 and on page 3?",  # counting words number things, they do not name them
        "Was steht in Version 8.0.1 auf Seite 3?",
        "What was decided on March 14?",  # a date
        "Who spoke at the Xen Summit 2013?",  # a year
        "Was the memory 8G in 5x runs with 64-Bit guests?",  # a quantity, not a name's number
        "Windows 11: is it supported?",  # the question's first word starts the sentence
    ],
)
def test_counting_words_dates_years_and_quantities_are_no_numbered_names(question: str) -> None:
    assert numbered_names(question) == []


def test_a_numbered_name_needs_its_name_just_before_the_number() -> None:
    page = "Tested on Windows 10 with 11 drivers; OpenXT 9.0.2 on the Dell OptiPlex 7040. Row 12 in Table 3"
    assert missing_terms(["Windows 11", "Optiplex 7040", "OXT 9.0.2", "Debian 12"], [page]) == [
        "Windows 11",
        "Debian 12",
    ]
    assert missing_terms(["OpenXT 6"], ["Building - Version 6 and Later"]) == []  # the release stands for it


def test_a_german_name_is_told_by_where_it_stands() -> None:
    assert german_names("Wann fand das Planungstreffen in Tokio statt?") == ["Tokio"]  # no article
    assert german_names("Gibt es einen Discord-Server für die OpenXT-Community?") == ["Discord", "OpenXT"]
    assert german_names("Wie viele Posten stehen in der Satzung (bylaws)?") == ["bylaws"]  # the page's word
    assert german_names("Welche Tests liefen auf dem Dell Optiplex im Labor?") == ["Dell Optiplex"]  # a run
    assert german_names("Welche Betriebssysteme liefen auf OEM Model Z?") == [
        "OEM Model",
        "Z",
    ]  # a model letter


@pytest.mark.parametrize(
    "question",
    [
        "Was sollte eine Neuversiegelung in Bezug auf TPM-PCR-Werte auslösen?",  # German nouns, not names
        "Wozu kann der Gast-Ruhezustand unter Umständen führen?",
        "Welche Optionen wurden für die Konfiguration mit Erweiterungen genannt?",
        "Welche Generationen wurden während der OpenXT 7.0-Hardwaretests getestet?",
    ],
)
def test_german_nouns_are_no_names(question: str) -> None:
    assert german_names(question) == []


def test_german_looking_words() -> None:
    assert all(looks_german(w) for w in ("Bezug", "Konfiguration", "Gäste", "Schutz", "Nacht", "Abstimmungs"))
    assert not any(looks_german(w) for w in ("Tokio", "Scarthgap", "Discord", "Kubernetes", "Pivot"))
    assert looks_german("Lake") and not looks_german("Lake", inflected=False)  # in a run of names
    assert german_names("Wie groß ist der Ring auf einem Ampere Altra Server?") == ["Ampere Altra Server"]


def test_required_terms_add_numbered_and_german_names_to_the_key_terms() -> None:
    assert required_terms("Welche Debian 12 Pakete braucht man in Tokio?") == ["12", "Debian 12", "Tokio"]
    english = required_terms("Which Debian 12 packages are needed in Tokyo?")
    assert english == ["12", "Debian", "Tokyo", "Debian 12"]  # English capitals are key terms already


def test_an_acronym_that_is_a_stop_word_counts_only_as_written() -> None:
    assert missing_terms(["IT"], ["Restart it and wait."]) == ["IT"]
    assert missing_terms(["IT"], ["Ask IT for a laptop."]) == []


def test_a_name_only_in_a_link_address_is_not_mentioned() -> None:
    text = "Copy this link: https://maps.google.com/maps?q=George+Street,+Sydney,+Australia&hl=en"
    assert missing_terms(["Australia"], [text]) == ["Australia"]
    assert missing_terms(["Australia"], [text + " Our office is in Australia."]) == []


def test_supported_needs_the_numbered_names_and_german_names_on_the_pages() -> None:
    page = evidence(
        0, "OpenXT 9.0 Measurement Test. Measured on Windows 10 and Debian 11 guests with OpenXT 9.0."
    )
    assert supported("Which Debian 11 guests were measured?", [page], {0}, min_coverage=0.5)
    assert not supported("Which Debian 12 guests were measured?", [page], {0}, min_coverage=0.5)
    assert not supported("Welche Gäste wurden in Tokio gemessen?", [page], {0}, min_coverage=0.5)


@pytest.mark.parametrize(
    "question",
    [
        "How much does the Atlas team earn?",
        "Wie viel verdient das Atlas-Team?",
        "What is the price of a license?",
    ],
)
def test_a_question_for_a_price_or_pay_needs_an_amount_of_money(question: str) -> None:
    assert lacks_money(question, ["Team Atlas: set up your machine in about an hour."])
    assert not lacks_money(question, ["A seat costs 40 EUR a month."])
    assert not lacks_money(question, ["A seat costs $40 a month."])


def test_other_questions_need_no_money() -> None:
    page = ["The build needs 8 GB of memory."]
    assert not lacks_money("How much memory does the build need?", page)
    assert not lacks_money("Wie reiche ich meine Reisekosten ein?", page)  # how to, not how much
