"""BM25 per changed page: after edits, deletions and merges, the incremental index scores every query as a full
rebuild and bm25s itself do (within float error), in this process and in another that loads it from disk."""

from __future__ import annotations

import random
import shutil
import threading
from pathlib import Path

import bm25s
import numpy as np
import pytest

from tests.test_index import evidences, open_index, owners_table, page
from threadwise.core.retrieve.tokenize import tokenize
from threadwise.core.types import Page
from threadwise.index.bm25_corpus import TokenCorpus
from threadwise.index.bm25_store import BM25Store
from threadwise.index.store import EvidenceIndex

WORDS = [f"w{i}" for i in range(200)] + ["alpha", "beta", "release", "version 9.0.2", "OXT-239", "Größe"]
QUERIES = ["alpha w3 w17", "release version 9.0", "w5 w5 beta", "OXT 239 w150", "groesse w9", "nothing here"]


def corpus_of(pages: dict[str, list[str]]) -> TokenCorpus:
    corpus = TokenCorpus()
    for pid, texts in pages.items():
        for j, text in enumerate(texts):
            corpus.add(f"{pid}:{j}", f"S{int(pid[1:]) % 3}", text, page=pid)
    return corpus


def bm25s_hits(corpus: TokenCorpus, query: str, k: int) -> list[tuple[str, float]]:
    """The reference: bm25s built from the whole corpus, queried as the store queries."""
    model = bm25s.BM25()
    model.index((corpus.docs, corpus.vocab), show_progress=False)
    vocab = model.vocab_dict
    known = [t for t in tokenize(query, known=vocab.__contains__) if t in vocab]
    if not known:
        return []
    docs, scores = model.retrieve([known], k=min(k, len(corpus)), show_progress=False, n_threads=1)
    hits = [(corpus.ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
    return sorted(hits, key=lambda h: (-h[1], h[0]))


def assert_same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert len(got) == len(want)
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-5)
    # the same documents, up to the order of scores equal within float error
    assert {d for d, s in got if s > want[-1][1] * (1 + 1e-5)} == {
        d for d, s in want if s > want[-1][1] * (1 + 1e-5)
    }


def test_incremental_updates_score_as_a_full_rebuild_and_bm25s(tmp_path: Path) -> None:
    rng = random.Random(7)

    def texts() -> list[str]:
        return [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30))) for _ in range(rng.randint(0, 4))
        ]

    pages = {f"p{i}": texts() for i in range(60)}
    store = BM25Store(directory=tmp_path / "bm25", merge_min=25)  # small: the edits below merge several times
    store.rebuild(1, corpus_of(pages), {p: "1" for p in pages})
    mains = set()
    for step in range(2, 50):
        pid = rng.choice(sorted(pages))
        if rng.random() < 0.2:
            del pages[pid]
            store.update(step, {pid: None}, TokenCorpus())
        else:
            pages[pid] = texts()
            store.update(step, {pid: str(step)}, corpus_of({pid: pages[pid]}))
        mains |= {p.name for p in (tmp_path / "bm25").glob("main-*")}
    assert len(mains) >= 3  # merged along the way
    assert len(list((tmp_path / "bm25").glob("main-*"))) <= 2  # older segments dropped

    full = BM25Store(directory=tmp_path / "full")
    full.rebuild(49, corpus_of(pages), {})
    loaded = BM25Store(directory=tmp_path / "bm25")
    assert loaded.load() == 49 and loaded.signatures == store.signatures
    reference = corpus_of(pages)
    for query in QUERIES:
        want = bm25s_hits(reference, query, 40)
        for index in (store, full, loaded):
            got = index.search(query, 40)
            if want:
                assert_same(got, want)
            else:
                assert got == []
    in_s1 = loaded.search("alpha w3 w17", 40, ["S1"])
    assert in_s1 and all(int(d.split(":")[0][1:]) % 3 == 1 for d, _ in in_s1)


def pages_of(n: int) -> list[Page]:
    rng = random.Random(3)
    return [
        page(str(i), "|".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(3)), space="S")
        for i in range(n)
    ]


def put_all(index: EvidenceIndex, pages: list[Page]) -> None:
    index.put_pages([(p, evidences(p, p.body.split("|"))) for p in pages])
    index.flush()


@pytest.mark.parametrize("query", ["alpha w3 w17", "release version 9.0 beta", "zebra crossing w12"])
def test_an_edit_updates_bm25_without_a_rebuild_and_scores_as_a_fresh_index(
    tmp_path: Path, query: str
) -> None:
    pages = pages_of(40)
    index = open_index(tmp_path)
    put_all(index, pages)
    folder = tmp_path / "idx" / "evidence.bm25"
    main_before = sorted(p.name for p in folder.glob("main-*"))

    edited = page("7", "zebra crossing every Thursday|alpha release notes", version=2, space="S")
    put_all(index, [edited])
    index.delete_page("8")
    index.flush()
    assert sorted(p.name for p in folder.glob("main-*")) == main_before  # the delta took the change

    final = [edited if p.id == "7" else p for p in pages if p.id != "8"]
    fresh = EvidenceIndex(directory=tmp_path / "fresh", embedder=index.embedder)
    put_all(fresh, final)
    other = open_index(tmp_path)  # another process's view of the same folder: loads the saved state
    want = [(h.evidence.id, h.score) for h in fresh.search_lexical(query, 20)]
    for searched in (index, other):
        got = [(h.evidence.id, h.score) for h in searched.search_lexical(query, 20)]
        assert_same(got, want)
    pages_want = fresh.search_pages(query, 10)
    np.testing.assert_allclose(
        [s for _, s in other.search_pages(query, 10)], [s for _, s in pages_want], rtol=1e-5
    )
    assert "8" not in {pid for pid, _ in other.search_pages("w1 w2 w3 w4 w5 w6", 40)}


def test_searches_in_other_threads_see_whole_updates(tmp_path: Path) -> None:
    """A serving process searches while its scheduler's sync updates BM25: no search fails or sees half a
    change (a page's documents are all of one version)."""
    rng = random.Random(11)
    store = BM25Store(directory=tmp_path / "bm25", merge_min=10)
    store.rebuild(1, corpus_of({f"p{i}": [f"alpha w{i} v0"] * 3 for i in range(30)}), {})
    errors: list[BaseException] = []
    mixed: list[list[tuple[str, float]]] = []
    done = threading.Event()

    def search() -> None:
        while not done.is_set():
            try:
                hits = store.search("alpha", 200)
                by_page: dict[str, set[float]] = {}
                for doc, score in hits:
                    by_page.setdefault(doc.split(":")[0], set()).add(round(score, 5))
                if any(len(scores) > 1 for scores in by_page.values()):
                    mixed.append(hits)
            except BaseException as error:  # noqa: BLE001 - collected and asserted below
                errors.append(error)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for step in range(2, 60):
            pid = f"p{rng.randrange(30)}"
            store.update(step, {pid: str(step)}, corpus_of({pid: [f"alpha w{pid} v{step} " * 2] * 3}))
    finally:
        done.set()
        for t in threads:
            t.join(10)
    assert not errors and not mixed
    assert len(store.search("alpha", 200)) == 90


def test_a_state_saved_after_unsaved_changes_loads_whole(tmp_path: Path) -> None:
    """A process that could not save (another was writing) merges and appends in memory, then saves: the
    saved main segment and delta load into the same index."""
    pages = {f"p{i}": [f"alpha w{i} beta", f"w{i} release"] for i in range(12)}
    store = BM25Store(directory=tmp_path / "bm25", merge_min=4)
    store.rebuild(1, corpus_of(pages), {p: "1" for p in pages}, save=False)
    pages["p3"] = ["alpha gamma w300"]
    store.update(2, {"p3": "2"}, corpus_of({"p3": pages["p3"]}), save=False)
    pages["p20"] = ["alpha w20 delta"]
    store.update(3, {"p20": "3"}, corpus_of({"p20": pages["p20"]}))
    loaded = BM25Store(directory=tmp_path / "bm25")
    assert loaded.load() == 3 and loaded.signatures == store.signatures
    for query in ("alpha", "w3 gamma", "w20 delta", "release w7"):
        assert_same(loaded.search(query, 30), bm25s_hits(corpus_of(pages), query, 30))


def test_hidden_pages_and_spaces_are_left_out_before_the_top_k(tmp_path: Path) -> None:
    pages = {
        f"p{i}": [f"alpha w{i % 5} beta" + " pad" * i, f"alpha release w{i}" + " pad" * i] for i in range(30)
    }
    store = BM25Store(directory=tmp_path / "bm25")
    store.rebuild(1, corpus_of(pages), {})
    every = store.search("alpha release", 200)
    hidden = {"p3", "p4", "p10"}
    visible = [(d, s) for d, s in every if d.split(":")[0] not in hidden]
    assert (
        store.search("alpha release", 5, hidden_pages=hidden) == visible[:5]
    )  # same scores, the 5 best left
    in_s1 = [(d, s) for d, s in every if d.split(":")[0] not in hidden and int(d[1:].split(":")[0]) % 3 == 1]
    assert store.search("alpha release", 200, ["S1"], hidden) == in_s1
    assert store.search("alpha release", 5, []) == []  # no space allowed: nothing


def test_a_page_edited_twice_between_merges_loads_with_its_last_version_only(tmp_path: Path) -> None:
    """The first edit's documents sit in the delta; the second edit kills them: a saved state must not bring
    them back (a sync of version 2 over version 1 left 179 stale documents alive in another process)."""
    pages = {f"p{i}": [f"alpha w{i} beta"] for i in range(10)}
    store = BM25Store(directory=tmp_path / "bm25")  # the default merge size: no merge here
    store.rebuild(1, corpus_of(pages), {})
    for step, text in enumerate(["alpha gamma one", "alpha gamma two", "alpha gamma three"], start=2):
        pages["p1"] = [text]
        store.update(step, {"p1": str(step)}, corpus_of({"p1": pages["p1"]}))
    loaded = BM25Store(directory=tmp_path / "bm25")
    assert loaded.load() == 4
    for query in ("alpha gamma", "one two three", "beta w3"):
        want = bm25s_hits(corpus_of(pages), query, 30)
        for index in (store, loaded):
            got = index.search(query, 30)
            if want:
                assert_same(got, want)
            else:
                assert got == []


def test_bm25_of_the_pages_written_here_is_the_one_read_back_from_chroma(tmp_path: Path) -> None:
    """A process tokenizes the pages it writes as it writes them (FreshTerms), so that bringing BM25 up to date
    reads nothing back: the index it builds is the one built from Chroma's rows, score for score."""
    pages = pages_of(40)
    tables = page("t", "", title="Owners", space="S")
    table, row = owners_table(tables)
    index = open_index(tmp_path)
    index.put_pages([(p, evidences(p, p.body.split("|"))) for p in pages] + [(tables, [table, row])])
    index.flush()
    for saved in (tmp_path / "idx").glob("evidence*.bm25"):
        shutil.rmtree(saved)
    reread = open_index(tmp_path)  # nothing saved, nothing written here: every page read from Chroma
    for query in [*QUERIES, "Alice build", "owners release"]:
        assert [(h.evidence.id, h.score) for h in reread.search_lexical(query, 20)] == [
            (h.evidence.id, h.score) for h in index.search_lexical(query, 20)
        ]
        assert reread.search_pages(query, 10) == index.search_pages(query, 10)
    assert index.search_pages("Alice owns the build", 1)[0][0] == "t"


def test_a_page_another_writer_changed_is_read_back_not_taken_from_what_was_written_here(
    tmp_path: Path,
) -> None:
    index = open_index(tmp_path)
    first = page("1", "alpha release notes", space="S")
    index.put_page(first, evidences(first, [first.body]))
    other = open_index(tmp_path)  # another writer: page 1 changes before this process's BM25 catches up
    edited = page("1", "zebra crossing on Thursdays", version=2, space="S")
    other.put_page(edited, evidences(edited, ["zebra crossing on Thursdays"]))
    assert [h.evidence.page_id for h in index.search_lexical("zebra crossing", 5)] == ["1"]
    assert index.search_lexical("alpha release", 5) == []
