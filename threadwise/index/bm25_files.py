"""How a BM25 index lies in its folder: immutable main segments (`main-<id>/`, .npy postings memory-mapped,
docs.json) and one small `state.json` (the delta), each written beside and swapped in by a rename, so a
reader sees the old state or the new one."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from threadwise.core.retrieve.tokenize import TOKENIZER_VERSION

FORMAT = 1  # of the saved files: another format (or tokenizer) is rebuilt from the stored texts


@dataclass
class MainSegment:
    """The immutable segment: postings of term t are docs[indptr[t]:indptr[t+1]] with frequencies tf[...]."""

    name: str
    indptr: np.ndarray
    docs: np.ndarray
    tf: np.ndarray

    @classmethod
    def empty(cls) -> MainSegment:
        return cls("", np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        if term + 1 >= len(self.indptr):
            return self.docs[:0], self.tf[:0]
        start, end = int(self.indptr[term]), int(self.indptr[term + 1])
        return self.docs[start:end], self.tf[start:end]


def write_main(
    directory: Path,
    segment: MainSegment,
    lengths: np.ndarray,
    codes: np.ndarray,
    docs: dict[str, Any],
    mine: str,
) -> None:
    """A new main segment: its postings, each document's length and space, and docs.json (ids, pages,
    vocabulary, page signatures)."""
    tmp = directory / f"{segment.name}.tmp-{mine}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    np.save(tmp / "indptr.npy", segment.indptr)
    np.save(tmp / "docs.npy", segment.docs)
    np.save(tmp / "tf.npy", segment.tf)
    np.save(tmp / "lengths.npy", lengths)
    np.save(tmp / "space_codes.npy", codes)
    (tmp / "docs.json").write_text(json.dumps(docs))
    os.replace(tmp, directory / segment.name)


def write_state(directory: Path, state: dict[str, Any], mine: str) -> None:
    tmp = directory / f"state.json.tmp-{mine}"
    tmp.write_text(json.dumps({"format": FORMAT, "tokenizer": TOKENIZER_VERSION, **state}))
    os.replace(tmp, directory / "state.json")


def drop_old_mains(directory: Path, current: str) -> None:
    """Keep the current main segment and the one before (a reader may be loading it right now); drop an
    earlier release's whole-index files."""
    mains = sorted(
        (p for p in directory.iterdir() if p.name.startswith("main-") and ".tmp-" not in p.name),
        key=lambda p: p.stat().st_mtime,
    )
    for old in [p for p in mains if p.name != current][:-1]:
        shutil.rmtree(old, ignore_errors=True)
    for leftover in directory.iterdir():
        if leftover.name in ("model", "meta.json"):
            shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink()


def read_state(directory: Path) -> dict[str, Any] | None:
    """The saved state, or None when it is of another format or tokenizer (raises OSError when none)."""
    state: dict[str, Any] = json.loads((directory / "state.json").read_text())
    if state.get("format") != FORMAT or state.get("tokenizer") != TOKENIZER_VERSION:
        return None
    return state


def read_main(directory: Path, name: str) -> tuple[MainSegment, dict[str, Any], np.ndarray, np.ndarray]:
    """A main segment (postings memory-mapped), its docs.json, and its documents' lengths and space codes."""
    folder = directory / name
    docs = json.loads((folder / "docs.json").read_text())
    arrays = (np.load(folder / f, mmap_mode="r") for f in ("indptr.npy", "docs.npy", "tf.npy"))
    lengths = np.array(np.load(folder / "lengths.npy"), np.float32)
    codes = np.array(np.load(folder / "space_codes.npy"), np.int32)
    return MainSegment(name, *arrays), docs, lengths, codes
