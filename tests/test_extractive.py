"""The offline extractive answerer on hand-made evidence, with the real multilingual embedder (USE v3)."""

from __future__ import annotations

import threading

import pytest

from threadwise.core.answer.extractive import ExtractiveAnswerer
from threadwise.core.answer.question import (
    expected_answer_type,
    has_answer_type,
    is_german,
    own_and_history,
    question_parts,
)
from threadwise.core.answer.spans import list_items, split_sentences, table_headers, verbalized_cells
from threadwise.core.complete.history import HistoryCompleter
from threadwise.core.types import NOT_FOUND_PLAIN, NOT_FOUND_PLAIN_DE, Evidence, EvidenceKind, PastTurn
from threadwise.models.embedders import UniversalSentenceEncoder


@pytest.fixture(scope="module")
def answerer() -> ExtractiveAnswerer:
    embedder = UniversalSentenceEncoder()
    embedder.warm_up()
    return ExtractiveAnswerer(embedder=embedder)


def evidence(
    text: str,
    *,
    kind: EvidenceKind = "passage",
    title: str = "OpenXT Build Guide",
    position: int = 0,
    cells: tuple[tuple[str, str], ...] = (),
) -> Evidence:
    return Evidence(
        id=f"p-{title}:{position}",
        page_id=f"p-{title}",
        space="DEV",
        page_title=title,
        url=f"https://wiki.example.com/{title.replace(' ', '+')}",
        page_version=1,
        kind=kind,
        position=position,
        text=text,
        context_text=f"Page: {title}\n{text}",
        row_no=position + 1 if kind == "row" else None,
        table_no=1 if kind == "row" else None,
        cells=cells,
    )


BUILD_PASSAGE = evidence(
    "OpenXT is built with BuildBot, which automates the nightly builds. "
    "The recommended build host is a 64-bit installation of Debian Jessie. "
    "A full build takes about four hours on a machine with eight cores."
)
INSTALL_LIST = evidence(
    "1. Boot the OpenXT installer.\n"
    "2. Choose Erase and Install when an existing installation is found.\n"
    "3. Success:\n"
    "   1. The platform reboots to the UIVM.\n"
    "   2. At the bottom-right corner, the XT shield is green.\n"
    "4. Remove the USB stick.",
    kind="list",
    title="OpenXT Measurement Test",
)


def row(position: int, platform: str, bios: str, tpm: str, result: str) -> Evidence:
    cells = (("Platform", platform), ("BIOS", bios), ("TPM", tpm), ("Build", "6662"), ("Install", result))
    text = f"Row {position + 1} in Table 1: " + ", and ".join(f"{h} is {v}" for h, v in cells)
    return evidence(text, kind="row", title="OpenXT 9.0 Measurement Test", position=position, cells=cells)


ROWS = [
    row(0, "Dell Latitude 7490", "1.9.3", "2.0", "Pass"),
    row(1, "Dell OptiPlex 7040", "1.14.0", "1.2", "Fail"),
    row(2, "Dell OptiPlex 7060", "1.3.4", "2.0", "Pass"),
]
UNRELATED = evidence(
    "The community call takes place on the third Thursday of every month at 4 pm UTC.", title="Community Call"
)


def test_picks_the_sentence_that_answers_from_a_passage(answerer: ExtractiveAnswerer) -> None:
    answer = answerer.answer("What is the recommended build host for OpenXT?", [BUILD_PASSAGE, UNRELATED])
    # the sentence that answers, with its neighbours as context, in the page's order; only the answering source
    assert "The recommended build host is a 64-bit installation of Debian Jessie." in answer.text
    assert answer.text.endswith("[Source 1]") and "Community call" not in answer.text
    assert answer.cited == (1,)
    assert not answer.not_found
    assert answer.answerer == "extractive"


def test_picks_the_list_item_with_its_parent(answerer: ExtractiveAnswerer) -> None:
    answer = answerer.answer("What colour is the XT shield after a successful install?", [INSTALL_LIST])
    assert (
        "Success: The platform reboots to the UIVM; At the bottom-right corner, the XT shield is green"
        in (answer.text)
    )
    assert answer.text.endswith("[Source 1]")


def test_renders_the_relevant_cells_of_a_table_row(answerer: ExtractiveAnswerer) -> None:
    answer = answerer.answer("Which BIOS version did the Dell OptiPlex 7040 use?", ROWS)
    first = answer.text.split(" [Source")[0]
    assert first == "Platform: Dell OptiPlex 7040; BIOS: 1.14.0; TPM: 1.2; Build: 6662; Install: Fail"
    assert "[Source 2]" in answer.text
    assert answer.cited[0] == 2


def test_cites_the_position_of_the_evidence_that_holds_the_answer(answerer: ExtractiveAnswerer) -> None:
    answer = answerer.answer("What is the recommended build host for OpenXT?", [UNRELATED, BUILD_PASSAGE])
    assert "The recommended build host is a 64-bit installation of Debian Jessie." in answer.text
    assert answer.cited[0] == 2


def test_german_question_over_english_evidence(answerer: ExtractiveAnswerer) -> None:
    question = "Wie lange dauert ein vollständiger Build auf einer Maschine mit acht Kernen?"
    answer = answerer.answer(question, [BUILD_PASSAGE, UNRELATED])
    assert "A full build takes about four hours on a machine with eight cores." in answer.text
    assert answer.text.endswith("(Zitat aus einer englischen Seite) [Source 1]")


def test_german_question_picks_the_list_item(answerer: ExtractiveAnswerer) -> None:
    answer = answerer.answer("Welche Farbe hat das XT-Schild?", [INSTALL_LIST])
    assert "the XT shield is green" in answer.text


def test_out_of_scope_question_is_not_found(answerer: ExtractiveAnswerer) -> None:
    answer = answerer.answer("What is the capital of France?", [BUILD_PASSAGE, INSTALL_LIST, *ROWS])
    assert answer.not_found
    assert answer.text.startswith(NOT_FOUND_PLAIN)
    assert "The closest pages: OpenXT Build Guide; OpenXT Measurement Test" in answer.text
    assert answer.cited == ()


def test_out_of_scope_german_question_says_so_in_german(answerer: ExtractiveAnswerer) -> None:
    answer = answerer.answer("Wie wird das Wetter morgen in Berlin?", [BUILD_PASSAGE, INSTALL_LIST])
    assert answer.not_found
    assert answer.text.startswith(NOT_FOUND_PLAIN_DE + " Am nächsten kamen: OpenXT Build Guide")


def test_no_evidence_is_not_found(answerer: ExtractiveAnswerer) -> None:
    assert answerer.answer("What is the recommended build host?", []).text == NOT_FOUND_PLAIN
    assert answerer.answer("Welcher Build-Host wird empfohlen?", []).text == NOT_FOUND_PLAIN_DE


def test_threshold_is_a_parameter() -> None:
    strict = ExtractiveAnswerer(embedder=UniversalSentenceEncoder(), min_confidence=10.0)
    assert strict.answer("What is the recommended build host for OpenXT?", [BUILD_PASSAGE]).not_found


def test_same_input_same_output_also_from_several_threads(answerer: ExtractiveAnswerer) -> None:
    question, evidences = "Which BIOS version did the Dell OptiPlex 7040 use?", [*ROWS, BUILD_PASSAGE]
    first = answerer.answer(question, evidences)
    results: list[str] = []

    def run() -> None:
        results.append(answerer.answer(question, evidences).text)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answerer.deterministic
    assert results == [first.text] * 4


def test_an_intro_sentence_is_completed_by_what_follows(answerer: ExtractiveAnswerer) -> None:
    steps = evidence(
        "1. Things that should trigger a reseal for a measured launch:\n"
        "   1. changes to BIOS settings\n"
        "   2. internal changes to hardware\n",
        kind="list",
        title="TPM PCR values",
    )
    answer = answerer.answer("What should trigger a reseal for a measured launch?", [steps])
    assert "changes to BIOS settings" in answer.text
    assert "internal changes to hardware" in answer.text


# --- the pure helpers ------------------------------------------------------------------------------------------


def test_sentences_keep_versions_and_abbreviations_whole() -> None:
    text = "Install OpenXT 9.0.2 first, e.g. from the ISO. Then reboot.\nDone here now."
    assert split_sentences(text) == [
        "Install OpenXT 9.0.2 first, e.g. from the ISO.",
        "Then reboot.",
        "Done here now.",
    ]


def test_list_items_carry_their_parent_and_join_broken_lines() -> None:
    items = list_items("1. Success:\n   1. it reboots;\n   2. the shield is\n   green.\n2. Done")
    assert [full for full, _ in items] == [
        "Success:",
        "Success: it reboots;",
        "Success: the shield is green.",
        "Done",
    ]
    assert items[2][1] == "the shield is green."


def test_verbalized_table_lines_give_their_cells_back() -> None:
    assert verbalized_cells("Row 2 in Table 1: Member is Alice, and Task is Similarity") == (
        ("Member", "Alice"),
        ("Task", "Similarity"),
    )
    assert verbalized_cells("| a | b |") == ()


@pytest.mark.parametrize(
    ("question", "german"),
    [
        ("What was the TPM version used for the Dell Optiplex 7040?", False),
        ("Welche TPM Version wurde für den Dell Optiplex 7040 genutzt?", True),
        ("Und was ist mit TPM?", True),
        ("And what about TPM?", False),
        ("Wer hat das Dokument geschrieben?", True),
        ("Was bedeutet „Software-Dokumentation abgeschlossen“?", True),  # no function word: its quotes tell
        ('What does "software documentation done" mean?', False),
    ],
)
def test_language_guess(question: str, german: bool) -> None:
    assert is_german(question) is german


def test_a_heading_that_repeats_the_question_is_not_the_answer(answerer: ExtractiveAnswerer) -> None:
    faq = evidence(
        "What is TBOOT?\nTBOOT is the reference program from Intel for driving the Intel TXT hardware.",
        title="TBOOT",
    )
    answer = answerer.answer("What is TBOOT?", [faq])
    assert answer.text.startswith("TBOOT is the reference program from Intel") and "?" not in answer.text


def test_when_questions_prefer_the_sentence_with_a_date(answerer: ExtractiveAnswerer) -> None:
    minutes = evidence(
        "The VirtIO Argo planning meeting discussed the design of the driver. "
        "The VirtIO Argo planning meeting was held on Friday 17th July, 2020.",
        title="VirtIO Argo planning meeting",
    )
    assert "17th July, 2020" in answerer.answer("When was the VirtIO Argo planning meeting?", [minutes]).text


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When was the meeting held?", "date"),
        ("Wann fand das Treffen statt?", "date"),
        ("How many people attended?", "number"),
        ("Wie viele Personen waren da?", "number"),
        ("Who wrote the document?", "person"),
        ("Von wem wurde das Dokument geschrieben?", "person"),
        ("What is TBOOT?", None),
    ],
)
def test_expected_answer_type(question: str, kind: str | None) -> None:
    assert expected_answer_type(question) == kind


def test_answer_type_patterns() -> None:
    assert has_answer_type("date", "Last updated: Oct 19, 2017")
    assert has_answer_type("number", "two techniques")
    assert has_answer_type("person", "Owned by Rich Persaud")
    assert not has_answer_type("person", "The Board decides monthly")


def test_a_failure_row_comes_after_the_row_that_passed_and_says_so(answerer: ExtractiveAnswerer) -> None:
    failed = row(0, "Lenovo ThinkPad T14 Gen 3", "1.42", "2.0", "Fail")
    passed = row(1, "Lenovo ThinkPad T14 Gen 3", "1.45", "2.0", "Pass")
    answer = answerer.answer("Which BIOS does the Lenovo ThinkPad T14 Gen 3 need?", [failed, passed])
    assert answer.text.index("1.45") < answer.text.index("The same table also records a failure:")
    assert answer.text.index("The same table also records a failure:") < answer.text.index("1.42")
    # a question about the failure gets the failure row first, unlabelled
    about = answerer.answer("Which BIOS failed on the Lenovo ThinkPad T14 Gen 3?", [failed, passed])
    assert (
        about.text.startswith("Platform: Lenovo ThinkPad T14 Gen 3; BIOS: 1.42")
        and "records a failure" not in about.text
    )


def test_a_two_part_question_gets_a_unit_for_each_part(answerer: ExtractiveAnswerer) -> None:
    assert question_parts("Who gets paged for a SEV2 incident, and how quickly do they have to respond?") == [
        "Who gets paged for a SEV2 incident",
        "how quickly do they have to respond",
    ]
    assert question_parts("Which BIOS and TPM did the Dell 7040 use?") == [
        "Which BIOS and TPM did the Dell 7040 use?"
    ]


def test_an_intro_at_the_end_of_an_evidence_is_completed_by_the_next_evidence(
    answerer: ExtractiveAnswerer,
) -> None:
    intro = evidence("The platform provides these properties:", title="Platform", position=3)
    items = evidence("- Verified launch\n- Measured boot", kind="list", title="Platform", position=4)
    answer = answerer.answer("Which properties does the platform provide?", [intro, items])
    assert "these properties: Verified launch; Measured boot" in answer.text


def test_verbalized_headers_that_contain_is_are_read_back_whole() -> None:
    lines = [
        "Row 1 in Table 1: Severity is SEV1, and Who is paged is Primary and secondary",
        "Row 2 in Table 1: Severity is SEV2, and Who is paged is Primary",
    ]
    headers = table_headers(lines)
    assert verbalized_cells(lines[1], headers) == (("Severity", "SEV2"), ("Who is paged", "Primary"))


def test_two_pages_that_disagree_are_said_to(answerer: ExtractiveAnswerer) -> None:
    report = row(0, "Dell OptiPlex 7040", "1.14.0", "2.0", "Pass")
    other_page = evidence(
        "Row 1 in Table 1: Platform is Dell OptiPlex 7040, and BIOS is 1.12.0",
        kind="row",
        title="Hardware inventory",
        cells=(("Platform", "Dell OptiPlex 7040"), ("BIOS", "1.12.0")),
    )
    answer = answerer.answer("Which BIOS does the Dell OptiPlex 7040 have?", [report, other_page])
    assert "1.14.0" in answer.text
    assert "Another source says otherwise: Platform: Dell OptiPlex 7040; BIOS: 1.12.0" in answer.text


def test_a_follow_up_completed_offline_is_scored_by_its_own_question(answerer: ExtractiveAnswerer) -> None:
    earlier = "Which host is recommended for building OpenXT with BuildBot?"
    question = (
        HistoryCompleter()
        .complete("How long does a full build take?", [PastTurn(earlier, earlier, "Debian Jessie")])
        .question
    )
    assert own_and_history(question) == ("How long does a full build take?", earlier)
    best = answerer.score_spans(question, [BUILD_PASSAGE])[0][0]
    assert "four hours" in best.span.text  # not the host sentence that the earlier question's words match


def filler(title: str, position: int) -> Evidence:
    return evidence(
        f"Section {position} of {title} lists the meeting rooms of floor {position}.",
        title=title,
        position=position,
    )


def test_a_lower_section_of_the_top_page_can_be_quoted(answerer: ExtractiveAnswerer) -> None:
    """The page retrieval is surest of often answers in a section ranked below the top 4 (`page_evidences`)."""
    top = evidence("Ask the platform team for access to the wiki.", position=0)
    others = [filler("Office Guide", k) for k in range(1, 5)]
    lower = evidence("A full build takes about four hours on a machine with eight cores.", position=5)
    question = "How long does a full build of OpenXT take?"
    answer = answerer.answer(question, [top, *others, lower])
    assert "four hours" in answer.text and "[Source 6]" in answer.text
    without = ExtractiveAnswerer(embedder=answerer.embedder, page_evidences=0)
    assert "four hours" not in without.answer(question, [top, *others, lower]).text


def test_a_follow_up_quotes_up_to_three_units_of_the_page(answerer: ExtractiveAnswerer) -> None:
    """A follow-up completed offline says little by itself: up to `followup_pieces` units of the page join."""
    rows = [
        evidence(
            f"Row {k} in Table 1: Host is {host}, and Build time is {hours}",
            kind="row",
            position=k,
            cells=(("Host", host), ("Build time", hours)),
        )
        for k, (host, hours) in enumerate(
            [("builder-1", "4 hours"), ("builder-2", "5 hours"), ("builder-3", "6 hours")]
        )
    ]
    earlier = "Which build hosts does OpenXT use?"
    question = (
        HistoryCompleter().complete("And how long do they take?", [PastTurn(earlier, earlier, "")]).question
    )
    text = answerer.answer(question, rows).text
    assert all(f"[Source {k}]" in text for k in (1, 2, 3)), text
    alone = answerer.answer("How long do the OpenXT build hosts take?", rows).text
    assert "[Source 3]" not in alone, alone  # a self-contained question keeps `max_pieces` (2)


# --- whether the evidence can answer at all (support.py) --------------------------------------------------------


def test_key_terms_are_what_the_question_is_about() -> None:
    from threadwise.core.answer.support import key_terms

    english = key_terms("What was the TPM version of the Lenovo ThinkPad X1 Carbon in the Stable-11 tests?")
    assert {"TPM", "Lenovo", "ThinkPad", "X1", "Carbon", "Stable-11"} <= set(english)
    german = key_terms("Welche Generationen wurden während der OpenXT 7.0-Hardwaretests getestet?")
    assert german == ["OpenXT", "7.0"]  # German nouns are capitalized: only digits, acronyms, CamelCase


def test_a_key_term_is_found_as_written_as_part_of_a_word_or_one_typo_away() -> None:
    from threadwise.core.answer.support import missing_terms

    text = "OpenXT 9.0.2 Measurement test on the Dell Optiplex 7040, talk by George Dunlap"
    terms = ["9.0", "XT", "OXT", "Measuremnt", "Dunlop", "12.x", "Tokyo", "X1", "7040", "RDMA"]
    assert missing_terms(terms, [text]) == ["12.x", "Tokyo", "X1", "RDMA"]
    assert missing_terms(["RCs"], ["Archive the RC builds"]) == []  # a plural acronym


def test_rankings_agree_when_both_find_one_page_near_the_top() -> None:
    from threadwise.core.answer.support import rankings_agree
    from threadwise.core.types import Hit

    def hits(*ids: str) -> list[Hit]:
        return [Hit(f"{page}:0", 1.0, rank) for rank, page in enumerate(ids, start=1)]

    assert rankings_agree(hits("a", "b", "c"), hits("d", "e", "b"))
    assert not rankings_agree(hits("a", "b", "c"), hits("d", "e", "f", "a"))  # only past the third
    assert not rankings_agree([], hits("d"))  # no word of the question matched at all


def test_a_near_miss_is_not_found_though_a_close_row_exists(answerer: ExtractiveAnswerer) -> None:
    """The pages tested the Optiplex 7040: the same question about a model they never mention is not
    answered with the 7040's row, and the answer names the page it came closest to."""
    row = evidence(
        "Row 7 in Table 1: Device is Dell Optiplex 7040, and BIOS is 1.14.0",
        kind="row",
        cells=(("Device", "Dell Optiplex 7040"), ("BIOS", "1.14.0")),
    )
    assert "1.14.0" in answerer.answer("Which BIOS does the Dell Optiplex 7040 use?", [row]).text
    near_miss = answerer.answer("Which BIOS does the Dell Optiplex 3080 use?", [row])
    assert near_miss.not_found and near_miss.cited == () and row.page_title in near_miss.text
    disputed = answerer.answer("Which BIOS does the Dell Optiplex 7040 use?", [row], rankings_agree=False)
    assert not disputed.not_found  # close enough to answer even when the rankings disagree
