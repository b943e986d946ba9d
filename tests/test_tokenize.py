"""The BM25 tokenizer: versions, issue keys, German folding, and compounds split against the index's words."""

from __future__ import annotations

from pathlib import Path

from threadwise.core.embedders import HashingEmbedder
from threadwise.core.index import EvidenceIndex
from threadwise.core.tokenize import compound_parts, tokenize

from .test_index import page, put

ENGLISH_WORDS = set(tokenize("hardware tests standard port release checklist versions storage medium system"))


def known(term: str) -> bool:
    return term in ENGLISH_WORDS


def test_versions_issue_keys_and_umlauts() -> None:
    assert tokenize("OpenXT 9.0.2 fixes OXT-239") == [
        "openxt",
        "9.0.2",
        "9.0",
        "fix",
        "oxt-239",
        "oxt",
        "239",
    ]
    assert tokenize("Größe") == tokenize("groesse")
    assert tokenize("Wie ist die Konfiguration?") == ["konfigur"]  # German stopwords go


def test_compound_splits_into_the_words_the_index_knows() -> None:
    assert compound_parts("hardwaretests", known) == ["test", "hardwar"]
    assert compound_parts("standardport", known) == ["port", "standard"]
    assert compound_parts("freigabecheckliste", known) == ["checklist"]  # only the part the pages have
    assert compound_parts("startversionen", known) == ["version"]  # German plural ending dropped
    assert compound_parts("zielsystem", known) == ["system"]


def test_no_split_without_a_known_part_or_into_tiny_pieces() -> None:
    assert compound_parts("entwicklungszertifikate", known) == []
    assert compound_parts("bestand", known) == []  # "stand" would be a part shorter than the word allows
    assert compound_parts("porter", lambda t: t in {"port", "er"}) == []


def test_queries_split_unknown_words_documents_do_not() -> None:
    assert tokenize("Standardport", known=known) == ["standardport", "port", "standard"]
    assert tokenize("Standardport") == ["standardport"]
    assert tokenize("standard", known=known) == ["standard"]  # a known word is left whole


def test_german_compound_question_finds_the_english_page(tmp_path: Path) -> None:
    index = EvidenceIndex(directory=tmp_path / "idx", embedder=HashingEmbedder())
    put(index, page("1", "TBOOT listens on the default port 8080 when tracing to serial"))
    put(index, page("2", "The default port of the web console is documented elsewhere, not here"))
    put(index, page("3", "Hardware tests ran on the Dell Optiplex with the measured launch"))
    hits = index.search_lexical("Welche Hardwaretests liefen mit Measured Launch?", 3)
    assert hits and hits[0].evidence.page_id == "3"
    assert [h.evidence.page_id for h in index.search_lexical("Hardwaretests", 3)] == ["3"]
