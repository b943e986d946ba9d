"""What a row costs Chroma to write, in today's form and in the older one: the ConfQuestions evidences (random
vectors: the vectors' values do not change the cost), upserted 250 at a time into a fresh local collection,
as the index writes a batch. Prints milliseconds per row (wall and CPU) for each form, alternating.

    .venv/bin/python bench/chroma_rows.py --repeats 3

Today a row holds the keys the index filters on and the evidence as one JSON string (`evidence_metadata`);
before, every field was a metadata key of its own and the context text the row's document, which Chroma also
indexes for full-text search.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from threadwise.connectors.files import load_pages  # noqa: E402
from threadwise.core.ingest.extract import extract_evidence  # noqa: E402
from threadwise.core.types import Evidence  # noqa: E402
from threadwise.index.chroma_store import ChromaStore, evidence_metadata, row_id  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions"
BATCH = 250


def older_row(evidence: Evidence, page_hash: str) -> tuple[str, dict[str, Any]]:
    """The form rows had before: the context text as the document, every other field a metadata key."""
    meta: dict[str, Any] = {**evidence.to_dict(), "page_hash": page_hash}
    return str(meta.pop("context_text")), meta


def today(evidences: list[Evidence]) -> dict[str, Any]:
    return {"metadatas": [evidence_metadata(e, "h") for e in evidences]}


def older(evidences: list[Evidence]) -> dict[str, Any]:
    documents, metadatas = zip(*(older_row(e, "h") for e in evidences), strict=True)
    return {"documents": list(documents), "metadatas": list(metadatas)}


def ms_per_row(
    evidences: list[Evidence], vectors: np.ndarray, form: Callable[[list[Evidence]], dict[str, Any]]
) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        collection = ChromaStore(directory=Path(folder), collection="evidence")._collection
        wall, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(evidences), BATCH):
            part = evidences[start : start + BATCH]
            collection.upsert(
                ids=[row_id(e, "h") for e in part],
                embeddings=vectors[start : start + BATCH].tolist(),
                **form(part),
            )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return 1000 * wall / len(evidences), 1000 * cpu / len(evidences)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    pages, _ = load_pages(args.docs)
    evidences = [e for page in pages for e in extract_evidence(page)]
    vectors = np.random.default_rng(0).standard_normal((len(evidences), 384)).astype(np.float32)
    print(f"{len(evidences)} evidences, {BATCH} rows per upsert")
    for repeat in range(args.repeats):
        for name, form in (("today", today), ("older", older)):
            wall, cpu = ms_per_row(evidences, vectors, form)
            print(f"run {repeat + 1}, {name:5s}: {wall:.3f} ms per row wall, {cpu:.3f} ms CPU")


if __name__ == "__main__":
    main()
