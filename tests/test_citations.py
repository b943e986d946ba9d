"""Citation parsing, rewriting, and recognising the out-of-scope sentence."""

from __future__ import annotations

import pytest

from threadwise.core.answer.citations import (
    cited_sources,
    group_numbers,
    is_not_found,
    rewrite_citations,
    strip_citations,
)
from threadwise.core.types import NOT_FOUND, NOT_FOUND_DE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The BIOS was 1.2 [Source 3].", (3,)),
        ("Alice [Source 1, 3] and Bob [Source 2].", (1, 3, 2)),
        ("See [Sources 2-4].", (2, 3, 4)),
        ("See [Sources 2–3] and [source 1].", (2, 3, 1)),
        ("Plain [1] and [2, 5].", (1, 2, 5)),
        ("Repeated [Source 2] then [Source 2] then [Source 1].", (2, 1)),
        ("Mixed [Source 1; Source 4] and [Sources 1 and 2].", (1, 4, 2)),
        ("German [Quelle 2] und [Quellen 1 und 3].", (2, 1, 3)),
        ("Colon style [Source: 5].", (5,)),
        ("Out of range [Source 11] and [Source 0] are dropped [Source 10].", (10,)),
        ("No citations here, and [not a citation] neither.", ()),
    ],
)
def test_cited_sources(text: str, expected: tuple[int, ...]) -> None:
    assert cited_sources(text, n_sources=10) == expected


def test_absurd_ranges_are_not_expanded() -> None:
    assert group_numbers("1-300") == [1, 300]
    assert group_numbers("4-2") == [4, 2]


def test_rewrite_turns_citations_into_links_and_drops_invalid_ones() -> None:
    urls = {1: "https://wiki/a", 2: "https://wiki/b"}
    text = "Alice leads [Source 1, 2], Bob tests [Source 9]. Done [Sources 1-2]."
    linked = rewrite_citations(text, lambda n: f"<{urls[n]}|[{n}]>", n_sources=2)
    assert (
        linked
        == "Alice leads <https://wiki/a|[1]><https://wiki/b|[2]>, Bob tests. Done <https://wiki/a|[1]><https://wiki/b|[2]>."
    )


def test_rewrite_keeps_the_space_before_a_kept_citation() -> None:
    assert rewrite_citations("Yes [Source 1].", lambda n: f"({n})", n_sources=1) == "Yes (1)."
    assert rewrite_citations("Yes [1, 2].", lambda n: f"({n})", n_sources=2, separator=" ") == "Yes (1) (2)."


def test_strip_citations() -> None:
    assert (
        strip_citations("The build was 5.1 [Source 2]. It passed [Sources 1-3].")
        == "The build was 5.1. It passed."
    )


@pytest.mark.parametrize(
    "answer",
    [
        NOT_FOUND,
        NOT_FOUND_DE,
        "The desired information can't be found in the retrieved pool of evidence.",
        "I'm sorry. The requested information is not contained in the provided sources.",
        "The answer cannot be found in the given evidence",
        "Die gewünschten Informationen können in den abgerufenen Belegen nicht gefunden werden.",
        "Leider ist diese Information nicht in den Quellen enthalten.",
    ],
)
def test_not_found_variants(answer: str) -> None:
    assert is_not_found(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "The TPM version was 2.0 [Source 1].",
        "Version 9 is not available for download.",  # a negative answer is still an answer
        "The information in the sources is incomplete, but the build used BIOS 1.4 [Source 2].",
        # says something is missing but does cite what it found
        "The exact date cannot be found in the sources, but the release was in May [Source 3].",
    ],
)
def test_real_answers_are_not_not_found(answer: str) -> None:
    assert not is_not_found(answer)
