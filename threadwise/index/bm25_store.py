"""Lexical half of the index: BM25 (bm25s) over the contextualized evidence texts.

bm25s builds a static index, so this store is derived from the dense store's rows: rebuilt when the index
generation moves on, saved beside Chroma with the generation it was built for, and loaded if still current.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from array import array
from collections.abc import Collection, Sequence
from pathlib import Path

import bm25s
import numpy as np

from threadwise.core.retrieve.tokenize import TOKENIZER_VERSION, tokenize


class TokenCorpus:
    """Documents held as token ids over one vocabulary (4 bytes a token) while a BM25 index is built: the texts
    themselves are read a page at a time and dropped."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.spaces: list[str] = []
        self.docs: list[array[int]] = []
        self.vocab: dict[str, int] = {}

    def add(self, doc_id: str, space: str, text: str) -> None:
        vocab = self.vocab
        self.ids.append(doc_id)
        self.spaces.append(space)
        self.docs.append(array("i", [vocab.setdefault(t, len(vocab)) for t in tokenize(text) or ["_empty_"]]))

    def __len__(self) -> int:
        return len(self.ids)


class BM25Store:
    def __init__(self, *, directory: Path) -> None:
        self.directory = directory
        self.generation = -1
        self._ids: list[str] = []
        self._spaces: np.ndarray = np.array([], dtype=object)
        self._model: bm25s.BM25 | None = None
        self._pages: tuple[list[str], np.ndarray] | None = None  # (the ids it was made of, each row's page)

    def load(self, generation: int) -> bool:
        """Load the saved index if it was built for `generation` with today's tokenizer."""
        try:
            meta = json.loads((self.directory / "meta.json").read_text())
            if meta.get("generation") != generation or meta.get("tokenizer") != TOKENIZER_VERSION:
                return False
            # memory-mapped: a serving process pages in what queries touch instead of holding the whole index
            model = bm25s.BM25.load(str(self.directory / "model"), mmap=True) if meta["ids"] else None
        except (OSError, ValueError, KeyError):  # none saved yet, or another process is swapping it right now
            return False
        self._ids = meta["ids"]
        self._spaces = np.array(meta["spaces"], dtype=object)
        self._model = model
        self.generation = generation
        return True

    def rebuild(self, generation: int, corpus: TokenCorpus) -> None:
        """Build from a corpus and save atomically (write beside, then swap the folder).

        Saving is only a cache for the next start: when another process swaps the folder at the same moment,
        this one keeps its index in memory and leaves the folder to the other."""
        self._ids = corpus.ids
        self._spaces = np.array(corpus.spaces, dtype=object)
        self._model = None
        if self._ids:
            model = bm25s.BM25()
            model.index((corpus.docs, corpus.vocab), show_progress=False)
            self._model = model
        self.generation = generation
        mine = f"{os.getpid()}-{threading.get_ident()}"
        tmp = self.directory.with_name(f"{self.directory.name}.tmp-{mine}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if self._model is not None:
            self._model.save(str(tmp / "model"))
        (tmp / "meta.json").write_text(
            json.dumps(
                {
                    "generation": generation,
                    "tokenizer": TOKENIZER_VERSION,
                    "ids": self._ids,
                    "spaces": list(self._spaces),
                }
            )
        )
        old = self.directory.with_name(f"{self.directory.name}.old-{mine}")
        try:
            if self.directory.exists():
                self.directory.rename(old)
            tmp.rename(self.directory)
        except OSError:
            pass
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)

    def search(
        self,
        query: str,
        k: int,
        spaces: Sequence[str] | None = None,
        hidden_pages: Collection[str] = (),
    ) -> list[tuple[str, float]]:
        """Best rows as (row id, BM25 score), best first; rows with score 0 are left out. Only rows of
        `spaces` (None: all) whose page is not in `hidden_pages` can be found (a weight mask, so the k best
        are the k best among them)."""
        if self._model is None:
            return []
        vocab = self._model.vocab_dict
        known = [t for t in tokenize(query, known=vocab.__contains__) if t in vocab]
        if not known:
            return []
        mask = None
        if spaces is not None:
            mask = np.isin(self._spaces, list(spaces)).astype(np.float32)
        if hidden_pages:
            visible = ~np.isin(self._page_ids(), list(hidden_pages))
            mask = visible.astype(np.float32) if mask is None else mask * visible
        if mask is not None and not mask.any():
            return []
        docs, scores = self._model.retrieve(
            [known], k=min(k, len(self._ids)), show_progress=False, weight_mask=mask, n_threads=1
        )
        hits = [(self._ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]
        return sorted(hits, key=lambda h: (-h[1], h[0]))  # equal scores by id: independent of insertion order

    def _page_ids(self) -> np.ndarray:
        """Each row's page id (an evidence row id is `page:n@hash`; a page row's id is the page id)."""
        if self._pages is None or self._pages[0] is not self._ids:
            pages = [rid.rpartition("@")[0].rpartition(":")[0] if "@" in rid else rid for rid in self._ids]
            self._pages = (self._ids, np.array(pages, dtype=object))
        return self._pages[1]
