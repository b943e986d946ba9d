"""Round-trips through the real Chroma and BM25 stores in a temporary folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from threadwise.core.retrieve.retriever import (
    RetrievalOptions,
    Retriever,
    keep_ranking_heads,
    reciprocal_rank_fusion,
)
from threadwise.core.types import Evidence, Page, Scope
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder


def page(pid: str, body: str, *, version: int = 1, space: str = "ENG", title: str = "") -> Page:
    return Page(
        id=pid,
        space=space,
        title=title or f"Page {pid}",
        url=f"https://wiki/p/{pid}",
        body=body,
        version=version,
    )


def evidences(p: Page, texts: list[str]) -> list[Evidence]:
    return [
        Evidence(
            id=f"{p.id}:{i}",
            page_id=p.id,
            space=p.space,
            page_title=p.title,
            url=p.url,
            page_version=p.version,
            kind="passage",
            position=i,
            text=t,
            context_text=f"{p.title}\n{t}",
        )
        for i, t in enumerate(texts)
    ]


def owners_table(p: Page) -> tuple[Evidence, Evidence]:
    """A table evidence and one of its rows (kind "row", with cells) on page `p`."""
    table, row = evidences(p, ["Table: Alice build, Bob release", "Alice owns the build"])
    return table, replace(row, kind="row", table_no=2, row_no=1, cells=(("Who", "Alice"), ("Owns", "build")))


def put(index: EvidenceIndex, p: Page) -> bool:
    return index.put_page(p, evidences(p, p.body.split("|")))


def open_index(tmp_path: Path) -> EvidenceIndex:
    return EvidenceIndex(directory=tmp_path / "idx", embedder=HashingEmbedder())


def top_page(
    index: EvidenceIndex, query: str, mode: str = "hybrid", spaces: list[str] | None = None
) -> str | None:
    r = Retriever(index=index, embedder=index.embedder, options=RetrievalOptions(mode=mode))  # type: ignore[arg-type]
    got = r.retrieve(query, None if spaces is None else Scope.of(spaces))
    return got.evidences[0].page_id if got.evidences else None


def test_add_query_replace_delete_and_restart(tmp_path: Path) -> None:
    index = open_index(tmp_path)
    assert put(index, page("1", "The TPM version is 2.0|Dell Optiplex 7040 uses BIOS 1.14.0"))
    assert put(index, page("2", "Vacation requests go to the team lead|Expense reports are due monthly"))
    assert index.count() == 4
    for mode in ("hybrid", "lexical", "dense"):
        assert top_page(index, "which BIOS version on the Optiplex", mode) == "1"
    assert top_page(index, "expense reports due", "lexical") == "2"

    # unchanged page: nothing embedded
    before = index.embedded_pages
    assert not put(index, page("1", "The TPM version is 2.0|Dell Optiplex 7040 uses BIOS 1.14.0"))
    assert index.embedded_pages == before

    # replaced page: old evidence is gone from both stores
    assert put(index, page("1", "Kubernetes cluster upgrade notes", version=2))
    assert index.page_states()["1"].version == 2
    assert top_page(index, "Optiplex BIOS 1.14.0", "lexical") != "1"
    assert top_page(index, "Kubernetes cluster upgrade", "lexical") == "1"

    # restart: a new instance over the same folder sees the same state
    index2 = open_index(tmp_path)
    assert index2.count() == 3
    assert top_page(index2, "Kubernetes cluster upgrade") == "1"

    index2.delete_page("1")
    assert top_page(index2, "Kubernetes cluster upgrade", "lexical") is None
    assert set(index2.page_states()) == {"2"}
    assert open_index(tmp_path).count() == 2


def test_the_evidences_carry_their_final_retrieval_scores_for_the_answerer(tmp_path: Path) -> None:
    index = open_index(tmp_path)
    assert put(index, page("1", "The TPM version is 2.0|Dell Optiplex 7040 uses BIOS 1.14.0"))
    assert put(index, page("2", "Vacation requests go to the team lead|Expense reports are due monthly"))
    got = Retriever(index=index, embedder=index.embedder).retrieve("which BIOS version on the Optiplex")
    scores = [e.score for e in got.evidences]
    assert scores == [h.score for h in got.fused[: len(scores)]] and len(scores) == 4
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # a score is not part of what an evidence is: equality and the stored form ignore it
    assert got.evidences[0] == replace(got.evidences[0], score=None)
    assert "score" not in got.evidences[0].to_dict()


def test_space_filter_and_delete_space(tmp_path: Path) -> None:
    index = open_index(tmp_path)
    put(index, page("1", "release checklist for OXT-239", space="ENG"))
    put(index, page("2", "release checklist for the office move", space="HR"))
    assert top_page(index, "release checklist", "lexical", ["HR"]) == "2"
    assert top_page(index, "release checklist", "dense", ["ENG"]) == "1"
    assert top_page(index, "OXT-239", "lexical") == "1"
    assert index.delete_space("HR") == 1
    assert index.spaces() == ["ENG"]
    assert top_page(index, "office move", "lexical", ["HR"]) is None


def test_interrupted_update_keeps_previous_state(tmp_path: Path) -> None:
    """New rows written but the manifest never switched (a crash): queries still answer from the old page."""
    index = open_index(tmp_path)
    old = page("1", "The wiki moved to Confluence in 2019")
    put(index, old)
    new = page("1", "The wiki moved to Notion in 2024", version=2)
    # step 1 of `put_page`, as a process killed right after it leaves the index
    index.manifest.mark_dirty([new.id])
    index.chroma.add(evidences(new, [new.body]), index.embedder.embed([new.body]), new.content_hash)

    reopened = open_index(tmp_path)
    got = Retriever(index=reopened, embedder=reopened.embedder).retrieve("where did the wiki move")
    assert [e.text for e in got.evidences] == ["The wiki moved to Confluence in 2019"]
    reopened.flush()  # sweeps the orphan rows
    assert reopened.chroma.count() == 1
    assert put(reopened, new)
    got = Retriever(index=reopened, embedder=reopened.embedder).retrieve("where did the wiki move")
    assert [e.text for e in got.evidences] == ["The wiki moved to Notion in 2024"]


def test_embedder_mismatch_is_refused(tmp_path: Path) -> None:
    open_index(tmp_path)

    class Other(HashingEmbedder):
        name = "other"

    try:
        EvidenceIndex(directory=tmp_path / "idx", embedder=Other())
    except ValueError as err:
        assert "THREADWISE_EMBEDDER=hashing" in str(err)  # how to keep it
        assert "threadwise sync --full" in str(err)  # how to rebuild it
    else:
        raise AssertionError("mismatched embedder accepted")


def test_rrf() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "d"]], k=60)
    assert [x for x, _ in fused][:2] == ["b", "c"]
    assert abs(dict(fused)["b"] - (1 / 62 + 1 / 61)) < 1e-12


def test_page_level_ranking_finds_the_page_by_its_title_and_text(tmp_path: Path) -> None:
    index = open_index(tmp_path)
    put(index, page("1", "Alice reviews the draft|Bob books the room", title="Weekly sync October 14"))
    put(index, page("2", "Install the toolchain|Run the build", title="Developer setup"))
    assert [pid for pid, _ in index.search_pages("October weekly sync", 5)][0] == "1"
    assert [pid for pid, _ in index.search_pages("toolchain build setup", 5)][0] == "2"
    index.delete_page("2")
    assert [pid for pid, _ in index.search_pages("toolchain build setup", 5)] == []


def test_the_extraction_version_is_part_of_the_content_hash(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import threadwise.core.types as page_module

    p = page("1", "body")
    before = p.content_hash
    monkeypatch.setattr(page_module, "EXTRACTION_VERSION", page_module.EXTRACTION_VERSION + 1)
    assert p.content_hash != before  # an upgraded extractor re-indexes every page once


def test_writers_in_two_processes_take_turns(tmp_path: Path) -> None:
    """A page written while another process holds the index's write lock waits for it to finish."""
    import subprocess
    import sys
    import time

    index = open_index(tmp_path)
    put(index, page("0", "opened and warm before the other process starts"))
    held, released = tmp_path / "held", tmp_path / "released"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import time
from pathlib import Path
from threadwise.models.embedders import HashingEmbedder
from threadwise.index.store import EvidenceIndex
index = EvidenceIndex(directory=Path({str(tmp_path / "idx")!r}), embedder=HashingEmbedder())
with index._write_lock:
    Path({str(held)!r}).touch()
    time.sleep(1.0)
    Path({str(released)!r}).touch()
""",
        ]
    )
    try:
        deadline = time.monotonic() + 60
        while not held.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the lock holder did not start"
            time.sleep(0.02)
        put(index, page("1", "written after the other process let go"))
        assert released.exists()
    finally:
        holder.wait(timeout=60)


def test_index_page_extracts_only_what_changed_and_keeps_evidence_of_an_unusable_page(tmp_path: Path) -> None:
    """The road the folder indexer and the Confluence sync share: an unchanged page is not even extracted."""
    from threadwise.core.ingest.extract import extract_evidence
    from threadwise.core.types import PageFailure
    from threadwise.index.indexer import index_page

    extracted: list[str] = []

    def extract(p: Page) -> list[Evidence]:
        extracted.append(p.id)
        return extract_evidence(p)

    index = open_index(tmp_path)
    first = page("1", "<p>The TPM version is 2.0 on every test machine.</p>")
    assert index_page(index, first, extract=extract) is True
    assert index_page(index, first, extract=extract) is False
    assert extracted == ["1"]
    broken = page("1", "<ac:structured-macro ac:name='toc'/>", version=2)
    outcome = index_page(index, broken, extract=extract)
    assert isinstance(outcome, PageFailure) and "no text left" in outcome.reason
    index.flush()
    assert index.page_states()["1"].version == 1 and top_page(index, "TPM version") == "1"


def test_an_edit_embeds_only_changed_texts_and_a_copy_embeds_none(tmp_path: Path) -> None:
    from tests.support.sync_env import CountingEmbedder

    embedder = CountingEmbedder(HashingEmbedder())
    index = EvidenceIndex(directory=tmp_path / "idx", embedder=embedder)
    assert put(index, page("1", "Alpha is first|Beta is second|Gamma is third", title="Greek"))
    assert embedder.texts == 3
    assert put(index, page("1", "Alpha is first|Beta is second now|Gamma is third", title="Greek", version=2))
    assert embedder.texts == 4  # only the changed evidence
    assert put(index, page("2", "Alpha is first|Gamma is third", title="Greek", space="COPY"))
    assert embedder.texts == 4  # a copy with the same texts embeds nothing
    assert index.counts.embedded == 4 and index.counts.cached == 4
    # the cached vectors are the vectors: the copy is found like the original
    assert {h.evidence.page_id for h in index.search_dense(embedder.embed_query("Alpha is first"), 2)} == {
        "1",
        "2",
    }
    # a new instance on the same folder (the next sync) reuses them too
    again = EvidenceIndex(directory=tmp_path / "idx", embedder=embedder)
    assert put(again, page("3", "Gamma is third", title="Greek"))
    assert embedder.texts == 4


def test_rows_may_take_their_tables_vector(tmp_path: Path) -> None:
    """With row_vectors="table" a row costs no embedding and stays out of dense search; BM25 still finds it."""
    from tests.support.sync_env import CountingEmbedder

    embedder = CountingEmbedder(HashingEmbedder())
    index = EvidenceIndex(directory=tmp_path / "idx", embedder=embedder, row_vectors="table")
    p = page("1", "", title="Owners")
    table, *rows = evidences(
        p, ["Table: Alice build, Bob release", "Alice owns the build", "Bob owns the release"]
    )
    table = replace(table, kind="table", table_no=0)
    rows = [replace(r, kind="row", table_no=0, row_no=i) for i, r in enumerate(rows)]
    assert index.put_page(p, [table, *rows])
    assert embedder.texts == 1 and index.counts.shared == 2
    assert [h.evidence.kind for h in index.search_dense(embedder.embed_query("Bob release"), 5)] == ["table"]
    assert index.search_lexical("Bob release", 1)[0].evidence.text == "Bob owns the release"


def test_rows_written_in_the_older_form_are_still_read(tmp_path: Path) -> None:
    """Rows written before rows kept their evidence as one JSON string (each field a metadata key, the context
    text as the row's document) come back as the same evidences from dense and lexical search alike."""
    index = open_index(tmp_path)
    p = page("1", "", title="Owners")
    table, row = owners_table(p)
    assert index.put_page(p, [table, row])
    store = index.chroma
    [(rid, document, meta)] = [r for r in store.get(where={"page_id": "1"}) if r[0].startswith(row.id + "@")]
    assert document is None and set(meta) == {"page_id", "space", "kind", "page_hash", "evidence"}
    older = {**row.to_dict(), "page_hash": meta["page_hash"]}
    del older["context_text"]
    vector = store.get_embeddings([rid])[rid]
    store._collection.upsert(
        ids=[rid], embeddings=[vector.tolist()], documents=[row.context_text], metadatas=[older]
    )
    (tmp_path / "idx" / "evidence.bm25").unlink(missing_ok=True)  # BM25 is built from the rows

    reopened = open_index(tmp_path)
    assert reopened.search_dense(vector, 1)[0].evidence == row
    assert reopened.search_lexical("Alice owns the build", 1)[0].evidence == row


def test_dense_search_is_near_exact_also_in_a_collection_made_with_chromas_defaults(tmp_path: Path) -> None:
    """Chroma's default ef_search (100) returns an approximate top 200, so the same vectors indexed twice could
    rank differently; the store searches with 500 candidates, also in a collection an older release made."""
    import chromadb
    from chromadb.config import Settings

    from threadwise.index.chroma_store import EF_SEARCH, ChromaStore

    folder = tmp_path / "chroma"
    older = chromadb.PersistentClient(str(folder), Settings(anonymized_telemetry=False, allow_reset=False))
    older.create_collection("evidence", embedding_function=None, metadata={"hnsw:space": "cosine"})
    store = ChromaStore(directory=folder, collection="evidence")
    assert store._collection.configuration["hnsw"]["ef_search"] == EF_SEARCH == 500

    rng = np.random.default_rng(0)  # 1,000 unit vectors in clusters of 16, as a page's evidences sit together
    centers = rng.normal(size=(63, 64))
    x = centers[np.arange(1000) // 16] + 0.5 * rng.normal(size=(1000, 64))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    p = page("1", "")
    rows = evidences(p, [f"text {i}" for i in range(1000)])
    store.add_pages([(rows, "h")], x.astype(np.float32))
    for q in x[rng.choice(1000, 10)] + 0.3 * rng.normal(size=(10, 64)):
        exact = {rows[i].id for i in np.argsort(-(x @ q))[:200]}
        assert {rid.split("@")[0] for rid, *_ in store.query(q.astype(np.float32), 200, None)} == exact


def test_a_copied_pages_equal_dense_scores_rank_by_id_whatever_the_order_written(tmp_path: Path) -> None:
    """A page and its copy have the very same vectors; HNSW returns such ties in the order the rows were
    written, so the dense ranking, and the fused one after it, depended on the order pages were synced."""
    original = page("7", "Hibernation is off|Backups run nightly", title="Power")
    copy = page("3", "Hibernation is off", title="Power", space="OPS")
    rankings = []
    for name, order in (("a", [original, copy]), ("b", [copy, original])):
        index = EvidenceIndex(directory=tmp_path / name, embedder=HashingEmbedder())
        for p in order:
            put(index, p)
        vector = index.embeddings_of(evidences(original, ["Hibernation is off"]))[0]
        rankings.append([(h.evidence.id, round(h.score, 6)) for h in index.search_dense(vector, 3)])
    assert rankings[0] == rankings[1]
    assert [eid for eid, _ in rankings[0][:2]] == ["3:0", "7:0"] and rankings[0][0][1] == rankings[0][1][1]


def test_a_rankings_best_hit_missing_from_the_top_k_is_kept_at_the_head_rank() -> None:
    page_of = {"a1": "A", "a2": "A", "b1": "B", "c1": "C", "g1": "G", "g2": "G", "g3": "G"}
    fused = [("a1", 0.9), ("a2", 0.8), ("b1", 0.7), ("c1", 0.6), ("g1", 0.1), ("g2", 0.05), ("g3", 0.01)]
    dense = ["g2", "g1", "g3", "a1"]  # the dense ranking is sure of page G, which the fusion buried
    kept = keep_ranking_heads(fused, [dense], page_of, rank=2, top_k=3)
    assert [eid for eid, _ in kept] == ["a1", "g1", "g2", "a2", "b1", "c1", "g3"]  # P@1 as it was
    scores = [s for _, s in kept]
    assert 0.9 > scores[1] > scores[2] > 0.8 == scores[3]  # scored between their new neighbours, in order
    # a head whose page is already in the top-k changes nothing
    assert keep_ranking_heads(fused, [["b1", "g1"]], page_of, rank=2, top_k=3) == fused
