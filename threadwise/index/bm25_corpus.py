"""What BM25 reads: the index's pages as token ids, and their postings (counted, merged into a segment)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from threadwise.core.retrieve.tokenize import tokenize
from threadwise.index.bm25_files import MainSegment


@dataclass
class DocSlots:
    """Per document slot of the BM25 index (main segment first, then the delta): id, page, space, length,
    alive."""

    ids: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    space_codes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    alive: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    def extend(
        self, ids: Sequence[str], pages: Sequence[str], space_codes: Sequence[int], lengths: Sequence[float]
    ) -> None:
        """Append live slots."""
        self.ids.extend(ids)
        self.pages.extend(pages)
        self.space_codes = np.concatenate([self.space_codes, np.array(space_codes, np.int32)])
        self.lengths = np.concatenate([self.lengths, np.array(lengths, np.float32)])
        self.alive = np.concatenate([self.alive, np.ones(len(ids), bool)])


class TokenCorpus:
    """Documents as token ids over one vocabulary (4 bytes a token), each with its page: the texts themselves
    are read a page at a time and dropped."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.pages: list[str] = []
        self.spaces: list[str] = []
        self.docs: list[array[int]] = []
        self.vocab: dict[str, int] = {}

    def add(self, doc_id: str, space: str, text: str, *, page: str | None = None) -> None:
        self.add_terms(doc_id, space, tokenize(text), page=page)

    def add_terms(self, doc_id: str, space: str, terms: Sequence[str], *, page: str | None = None) -> None:
        """A document already tokenized (`tokenize`)."""
        vocab = self.vocab
        self.ids.append(doc_id)
        self.pages.append(doc_id if page is None else page)
        self.spaces.append(space)
        self.docs.append(array("i", [vocab.setdefault(t, len(vocab)) for t in terms or ["_empty_"]]))

    def __len__(self) -> int:
        return len(self.ids)

    def remapped(self, vocab: dict[str, int]) -> TokenCorpus:
        """The same documents with token ids of `vocab` (its new terms added to it)."""
        words = sorted(self.vocab, key=self.vocab.__getitem__)
        mapping = np.array([vocab.setdefault(w, len(vocab)) for w in words] or [0], np.int64)
        out = TokenCorpus()
        out.ids, out.pages, out.spaces, out.vocab = self.ids, self.pages, self.spaces, vocab
        out.docs = [array("i", mapping[np.frombuffer(d, np.int32)].tolist()) for d in self.docs]
        return out


def term_counts(docs: Sequence[array[int]], shape: tuple[int, int]) -> Any:
    """Term frequencies of documents as a sparse slot × term matrix, counted a few thousand documents at a
    time with numpy (Python lists of every posting would take gigabytes at 10,000 pages)."""
    from scipy.sparse import coo_matrix

    n_terms = max(1, shape[1])
    rows, cols, vals = [], [], []
    for start in range(0, len(docs), 4096):
        chunk = docs[start : start + 4096]
        tokens = np.concatenate([np.frombuffer(d, np.int32) for d in chunk]).astype(np.int64)
        local = np.repeat(np.arange(len(chunk), dtype=np.int64), [len(d) for d in chunk])
        keys, counts = np.unique(local * n_terms + tokens, return_counts=True)
        rows.append((keys // n_terms + start).astype(np.int32))
        cols.append((keys % n_terms).astype(np.int32))
        vals.append(counts.astype(np.float32))
    if not rows:
        return coo_matrix(shape, dtype=np.float32)
    return coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=shape)


def merged_segment(
    name: str,
    main: MainSegment,
    delta_docs: Sequence[tuple[int, list[int], list[float]]],
    keep: np.ndarray,
    n_slots: int,
    n_terms: int,
    extra: Any = None,
) -> MainSegment:
    """One main segment of the postings of `main`, the delta's documents (slot, terms, frequencies) and
    `extra` (a sparse slot × term matrix), keeping the slots `keep` (renumbered in that order)."""
    from scipy.sparse import coo_matrix, csc_matrix

    main_m = csc_matrix((main.tf, main.docs, main.indptr), shape=(n_slots, len(main.indptr) - 1))
    main_m.resize((n_slots, n_terms))
    rows = [slot for slot, terms, _ in delta_docs for _ in terms]
    cols = [t for _, terms, _ in delta_docs for t in terms]
    vals = [f for _, _, tfs in delta_docs for f in tfs]
    delta_m = coo_matrix(
        (np.array(vals, np.float32), (np.array(rows, np.int64), np.array(cols, np.int64))),
        shape=(n_slots, n_terms),
    )
    merged = main_m + delta_m.tocsc()
    if extra is not None:
        merged = merged + extra.tocsc()
    if len(keep) < n_slots:
        merged = merged.tocsr()[keep]
    merged = csc_matrix(merged)
    merged.sort_indices()
    return MainSegment(
        name, merged.indptr.astype(np.int64), merged.indices.astype(np.int32), merged.data.astype(np.float32)
    )
