"""Lexical half of the index: BM25 over the contextualized evidence texts, updated per changed page.

bm25s (and BM25 in general) scores with corpus-wide statistics (document frequencies, the number of documents,
their average length), so a classic static index is rebuilt whole for any change (26 s per edit at 2,150
pages). This one keeps the postings instead of precomputed scores and applies BM25 (bm25s' "lucene" variant,
k1 1.5, b 0.75) at query time from the live statistics:
- a main segment: term-major postings (document slot, term frequency) in .npy files, memory-mapped, written
  once and never changed;
- a delta: documents added since the main segment was written, and the main documents removed since (a dead
  mark each), kept in `state.json`, which is small and rewritten per change;
- when the delta outgrows `MERGE_FRACTION` of the main segment, both are merged into a new main segment (from
  the postings: no text is read or tokenized again).
Scores equal a full rebuild's within float error (tests compare them with bm25s itself); an edit costs the
tokens of the pages it changed plus writing the delta. The index also remembers a signature (version, hash,
title) per page, so the owner can tell which pages changed since it was saved.
"""

from __future__ import annotations

import math
import os
import threading
import uuid
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from threadwise.core.retrieve.tokenize import tokenize
from threadwise.index.bm25_corpus import DocSlots, TokenCorpus, merged_segment, term_counts
from threadwise.index.bm25_files import (
    MainSegment,
    drop_old_mains,
    read_main,
    read_state,
    write_main,
    write_state,
)
from threadwise.index.shared_lock import SharedLock

K1, B = 1.5, 0.75  # bm25s' defaults, with its "lucene" idf: log(1 + (N - df + 0.5) / (df + 0.5))
MERGE_FRACTION = (
    0.05  # merge when the delta (documents added + removed) passes this share of the main segment
)
MERGE_MIN = 2_000  # … and this many documents


class BM25Store:
    """One BM25 index in a folder. Searches run at once with each other; a change waits for them and holds
    them off while it mutates (a rebuild or a load is made aside and swapped in). The evidence index
    serializes changes."""

    def __init__(self, *, directory: Path, merge_min: int = MERGE_MIN) -> None:
        self.directory = directory
        self.merge_min = merge_min
        self.generation = -1
        self._lock = SharedLock()
        self._clear()

    def _adopt(self, other: BM25Store) -> None:
        """Take over the index `other` built aside (one swap, while no search runs)."""
        state = {k: v for k, v in vars(other).items() if k not in ("directory", "merge_min", "_lock")}
        with self._lock.exclusive():
            self.__dict__.update(state)

    def _clear(self) -> None:
        self.vocab: dict[str, int] = {}
        self.spaces: list[str] = []
        self.signatures: dict[str, str] = {}  # page -> signature of what is indexed of it
        self._main = MainSegment.empty()
        self._n_main = 0
        self._docs = DocSlots()
        self._delta: dict[int, tuple[list[int], list[float]]] = {}  # term -> (slots, tfs) added since main
        self._delta_docs: list[tuple[int, list[int], list[float]]] = []  # (slot, terms, tfs) to save
        self._page_slots: dict[str, list[int]] | None = None  # built when first needed (writers only)
        self._main_signatures: dict[str, str] = {}
        self._unsaved_main = False  # merged in memory, not written yet (by a process that may not save)
        self._main_vocab = 0  # terms the main segment's vocabulary holds (the state adds the rest)
        self._base: tuple[dict[str, Any], np.ndarray, np.ndarray] | None = None  # the main segment's per-doc

    # ----- reading -----
    def _live(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """The live postings of a term: (slots, term frequencies)."""
        docs, tf = self._main.postings(term)
        extra = self._delta.get(term)
        if extra is not None:
            docs = np.concatenate([docs, np.asarray(extra[0], np.int32)])
            tf = np.concatenate([tf, np.asarray(extra[1], np.float32)])
        keep = self._docs.alive[docs]
        return docs[keep], tf[keep]

    def scores(self, terms: Sequence[int]) -> np.ndarray:
        """BM25 of every slot for these term ids (repeats count again, as in bm25s); dead slots score 0."""
        alive = self._docs.alive
        n = int(alive.sum())
        out = np.zeros(len(alive), np.float32)
        if n == 0:
            return out
        avg = float(self._docs.lengths[alive].sum()) / n
        norm = K1 * ((1 - B) + B * self._docs.lengths / avg)
        for term in terms:
            docs, tf = self._live(term)
            if len(docs) == 0:
                continue
            idf = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
            out[docs] += (idf * tf / (norm[docs] + tf)).astype(np.float32)
        return out

    def share(self, term: str) -> float:
        """The share of live documents that hold `term` (a BM25 term: tokenized, stemmed); 0 when none does."""
        with self._lock.shared():
            tid = self.vocab.get(term)
            alive = int(self._docs.alive.sum())
            return len(self._live(tid)[0]) / alive if tid is not None and alive else 0.0

    def search(
        self,
        query: str,
        k: int,
        spaces: Sequence[str] | None = None,
        hidden_pages: Collection[str] = (),
    ) -> list[tuple[str, float]]:
        """Best documents as (id, BM25 score), best first; documents with score 0 are left out. Only documents
        of `spaces` (None: all) whose page is not in `hidden_pages` can be found (filtered before the top k, so
        the k best are the k best among them; the statistics stay the whole index's)."""
        with self._lock.shared():
            return self._search(query, k, spaces, hidden_pages)

    def _search(
        self, query: str, k: int, spaces: Sequence[str] | None, hidden_pages: Collection[str]
    ) -> list[tuple[str, float]]:
        if not len(self._docs.alive):
            return []
        present: dict[str, bool] = {}

        def known(term: str) -> bool:  # a term of a live document (a full rebuild's vocabulary)
            if term not in present:
                tid = self.vocab.get(term)
                present[term] = tid is not None and len(self._live(tid)[0]) > 0
            return present[term]

        terms = [self.vocab[t] for t in tokenize(query, known=known) if known(t)]
        if not terms:
            return []
        scores = self.scores(terms)
        if spaces is not None:
            wanted = set(spaces)
            codes = [i for i, s in enumerate(self.spaces) if s in wanted]
            if len(codes) < len(self.spaces):  # a scope listing every space filters nothing
                scores[~np.isin(self._docs.space_codes, codes)] = 0
        if hidden_pages:  # few: the restricted pages the asker may not read
            slots = self._slots_of_pages()
            for page in hidden_pages:
                scores[slots.get(page, [])] = 0
        k = min(k, int((scores > 0).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        hits = [(self._docs.ids[int(i)], float(scores[i])) for i in top]
        return sorted(hits, key=lambda h: (-h[1], h[0]))  # equal scores by id: independent of insertion order

    # ----- changing -----
    def rebuild(
        self, generation: int, corpus: TokenCorpus, signatures: Mapping[str, str], *, save: bool = True
    ) -> None:
        """Build from a whole corpus (every page), aside while searches go on; `save`: and save it."""
        fresh = BM25Store(directory=self.directory, merge_min=self.merge_min)
        fresh.vocab = dict(corpus.vocab)
        fresh._append(corpus, postings=False)
        fresh.signatures = dict(signatures)
        fresh.generation = generation
        fresh._merge(extra=term_counts(corpus.docs, (len(corpus), len(fresh.vocab))))
        fresh._unsaved_main = True
        self._adopt(fresh)
        if save:
            self._save(new_main=True)

    def update(
        self, generation: int, changed: Mapping[str, str | None], corpus: TokenCorpus, *, save: bool = True
    ) -> None:
        """Replace what is indexed of the `changed` pages by their documents in `corpus` and record their
        signatures (None: the page is gone); `save`: and save. Costs the size of the change."""
        with self._lock.exclusive():
            slots = self._slots_of_pages()
            for page in changed:
                for slot in slots.pop(page, ()):
                    self._docs.alive[slot] = False
            self._append(corpus.remapped(self.vocab))
            for page, signature in changed.items():
                if signature is None:
                    self.signatures.pop(page, None)
                else:
                    self.signatures[page] = signature
            self.generation = generation
            dead = len(self._docs.alive) - int(self._docs.alive.sum())
            merge = len(self._delta_docs) + dead > max(self.merge_min, MERGE_FRACTION * self._n_main)
            if merge:
                self._merge()
            self._unsaved_main = self._unsaved_main or merge
        if save:
            self._save(new_main=self._unsaved_main)

    def _append(self, corpus: TokenCorpus, *, postings: bool = True) -> None:
        """Add the corpus's documents (ids in this index's vocabulary) as new slots; `postings`: and their
        postings to the delta (a rebuild makes its main segment of them at once instead)."""
        start = len(self._docs.ids)
        codes = {s: i for i, s in enumerate(self.spaces)}
        for s in corpus.spaces:
            if s not in codes:
                codes[s] = len(self.spaces)
                self.spaces.append(s)
        self._docs.extend(
            corpus.ids, corpus.pages, [codes[s] for s in corpus.spaces], [len(d) for d in corpus.docs]
        )
        for offset, doc in enumerate(corpus.docs if postings else ()):
            terms, counts = np.unique(np.frombuffer(doc, np.int32), return_counts=True)
            self._add_delta_doc(start + offset, terms.tolist(), counts.astype(np.float32).tolist())
        if self._page_slots is not None:
            for offset, page in enumerate(corpus.pages):
                self._page_slots.setdefault(page, []).append(start + offset)

    def _add_delta_doc(self, slot: int, terms: list[int], tfs: list[float]) -> None:
        self._delta_docs.append((slot, terms, tfs))
        for term, tf in zip(terms, tfs, strict=True):
            slots, freqs = self._delta.setdefault(term, ([], []))
            slots.append(slot)
            freqs.append(tf)

    def _slots_of_pages(self) -> dict[str, list[int]]:
        """Each page's live slots; built once (whole, then published: searches may build it at once)."""
        if self._page_slots is None:
            slots: dict[str, list[int]] = {}
            for slot, (page, alive) in enumerate(zip(self._docs.pages, self._docs.alive, strict=True)):
                if alive:
                    slots.setdefault(page, []).append(slot)
            self._page_slots = slots
        return self._page_slots

    def _merge(self, extra: Any = None) -> None:
        """Main segment + delta (+ `extra`, a sparse slot × term matrix) - dead documents -> one new main
        segment (slots renumbered)."""
        keep = np.flatnonzero(self._docs.alive)
        self._main = merged_segment(
            f"main-{uuid.uuid4().hex[:12]}",
            self._main,
            self._delta_docs,
            keep,
            len(self._docs.ids),
            len(self.vocab),
            extra,
        )
        self._docs = DocSlots(
            ids=[self._docs.ids[i] for i in keep],
            pages=[self._docs.pages[i] for i in keep],
            space_codes=self._docs.space_codes[keep],
            lengths=self._docs.lengths[keep],
            alive=np.ones(len(keep), bool),
        )
        self._n_main, self._main_vocab = len(keep), len(self.vocab)
        self._delta, self._delta_docs, self._page_slots = {}, [], None
        self._main_signatures = dict(self.signatures)
        # copies: the slots' lists grow with the delta, the main segment's do not
        base = {"ids": list(self._docs.ids), "pages": list(self._docs.pages), "vocab": list(self.vocab)}
        self._base = (
            {**base, "signatures": self._main_signatures},
            self._docs.lengths,
            self._docs.space_codes,
        )

    # ----- saving and loading -----
    def _save(self, *, new_main: bool) -> None:
        """Write the state (and a new main segment) beside, then swap it in by renaming: a reader sees the old
        state or the new one. Saving is a cache for other processes and the next start: when it fails (another
        process swapping at the same moment), this one keeps its index in memory."""
        with self._lock.shared():
            self._save_now(new_main=new_main)

    def _save_now(self, *, new_main: bool) -> None:
        mine = f"{os.getpid()}-{threading.get_ident()}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if new_main or not (self.directory / self._main.name).exists():  # another process dropped it
                assert self._base is not None
                docs, lengths, codes = self._base
                write_main(self.directory, self._main, lengths, codes, docs, mine)
                self._unsaved_main = False
            state = {
                "generation": self.generation,
                "main": self._main.name,
                "vocab": list(self.vocab)[self._main_vocab :],
                "spaces": self.spaces,
                "dead": np.flatnonzero(~self._docs.alive[: self._n_main]).tolist(),
                "delta": [
                    [self._docs.ids[s], self._docs.pages[s], int(self._docs.space_codes[s]), t, f]
                    for s, t, f in self._delta_docs
                    if self._docs.alive[s]  # a delta document replaced since is not saved (nor loaded alive)
                ],
                "signatures": {  # what changed since the main segment: a new signature, or None (gone)
                    **{p: None for p in self._main_signatures if p not in self.signatures},
                    **{p: s for p, s in self.signatures.items() if self._main_signatures.get(p) != s},
                },
            }
            write_state(self.directory, state, mine)
            drop_old_mains(self.directory, self._main.name)
        except OSError:
            pass

    def load(self) -> int | None:
        """Load the saved index (the main segment memory-mapped, reused when it is the one already loaded);
        returns the generation it was saved for, or None when there is none of today's format and tokenizer
        (then this index stays as it was)."""
        fresh = BM25Store(directory=self.directory, merge_min=self.merge_min)
        with self._lock.shared():
            fresh._main, fresh._base = self._main, self._base
            fresh._n_main, fresh._main_vocab = self._n_main, self._main_vocab
        try:
            state = read_state(self.directory)
            if state is None:
                return None
            fresh._load_state(state)
        except (OSError, ValueError, KeyError, IndexError):  # none saved, or a main segment just dropped
            return None
        self._adopt(fresh)
        return self.generation

    def _load_state(self, state: dict[str, Any]) -> None:
        name = state["main"]
        if name != self._main.name or self._base is None:
            main, docs, lengths, codes = read_main(self.directory, name)
            self._clear()
            self._main, self._n_main, self._main_vocab = main, len(docs["ids"]), len(docs["vocab"])
            self._base = (docs, lengths, codes)
        assert self._base is not None
        docs, lengths, codes = self._base
        self.vocab = {w: i for i, w in enumerate([*docs["vocab"], *state["vocab"]])}
        self.spaces = list(state["spaces"])
        self._docs = DocSlots(
            ids=list(docs["ids"]),
            pages=list(docs["pages"]),
            space_codes=codes.copy(),
            lengths=lengths.copy(),
            alive=np.ones(self._n_main, bool),
        )
        self._docs.alive[np.asarray(state["dead"], np.int64)] = False
        self._main_signatures = dict(docs["signatures"])
        self.signatures = dict(self._main_signatures)
        for page, signature in state["signatures"].items():
            if signature is None:
                self.signatures.pop(page, None)
            else:
                self.signatures[page] = signature
        self._delta, self._delta_docs, self._page_slots = {}, [], None
        start = len(self._docs.ids)
        delta = state["delta"]
        self._docs.extend(
            [d[0] for d in delta], [d[1] for d in delta], [d[2] for d in delta], [sum(d[4]) for d in delta]
        )
        for offset, (_i, _p, _c, terms, tfs) in enumerate(state["delta"]):
            self._add_delta_doc(start + offset, terms, tfs)
        self.generation = int(state["generation"])
