"""The BM25 tokenizer: versions, issue keys, German folding, and compounds split against the index's words."""

from __future__ import annotations

import json
from pathlib import Path

from threadwise.core.retrieve.tokenize import TOKENIZER_VERSION, compound_parts, tokenize
from threadwise.index.bm25_store import BM25Store
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder

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


def test_possessives_lose_their_s() -> None:
    assert tokenize("Alice's item, the team’s plan") == tokenize("Alice item, the team plan")


def test_a_possessive_question_is_not_pulled_to_other_possessives(tmp_path: Path) -> None:
    index = EvidenceIndex(directory=tmp_path / "idx", embedder=HashingEmbedder())
    put(index, page("1", "Alice: migrate the search index"))
    put(index, page("2", "The quarter's roadmap and the team's goals, the manager's notes"))
    assert [h.evidence.page_id for h in index.search_lexical("What is Alice's item?", 3)] == ["1"]


def test_saved_bm25_of_another_tokenizer_is_rebuilt(tmp_path: Path) -> None:
    index = EvidenceIndex(directory=tmp_path / "idx", embedder=HashingEmbedder())
    put(index, page("1", "Alice: migrate the search index"))
    assert index.search_lexical("migrate", 3)
    meta = tmp_path / "idx" / "evidence.bm25" / "state.json"
    saved = json.loads(meta.read_text())
    assert saved["tokenizer"] == TOKENIZER_VERSION
    meta.write_text(json.dumps({**saved, "tokenizer": TOKENIZER_VERSION - 1}))
    store = BM25Store(directory=meta.parent)
    assert store.load() is None  # stale tokenization: not loaded, so the index rebuilds it
    reopened = EvidenceIndex(directory=tmp_path / "idx", embedder=HashingEmbedder())
    assert [h.evidence.page_id for h in reopened.search_lexical("migrate", 3)] == ["1"]
    assert json.loads(meta.read_text())["tokenizer"] == TOKENIZER_VERSION
