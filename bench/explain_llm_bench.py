"""Explain's wall time with an LLM of fixed latency L: the counterfactual answers must run in parallel.

A local OpenAI-compatible server replies after L seconds; LLMAnswerer over OpenAIChat answers from the sample
wiki's top-10 evidences; Explain runs with m = 3 repeats. Printed: wall time in units of L, the number of
answer calls, and how many requests the server had in flight at once.

    .venv/bin/python bench/explain_llm_bench.py --latency 0.5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages  # noqa: E402
from threadwise.core.answer.llm import LLMAnswerer  # noqa: E402
from threadwise.core.attribute.attribution import explain  # noqa: E402
from threadwise.core.retrieve.retriever import Retriever  # noqa: E402
from threadwise.index.indexer import index_pages  # noqa: E402
from threadwise.index.store import EvidenceIndex  # noqa: E402
from threadwise.models.embedders import UniversalSentenceEncoder  # noqa: E402
from threadwise.models.openai_chat import OpenAIChat  # noqa: E402

QUESTIONS = [
    "What is Alice's action item from the October 14 meeting?",
    "Which BIOS version did the release 4.2 test report use?",
    "Who has to be paged for a severity 1 incident?",
    "How do I install the toolchain for the dev setup?",
    "Wie viele Urlaubstage gibt es?",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds the fake LLM takes per reply (L)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    embedder = UniversalSentenceEncoder()
    embedder.warm_up()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(delay=args.latency, api_key="") as server:
        index = EvidenceIndex(directory=Path(tmp), embedder=embedder)
        index_pages(index, load_pages(SAMPLE_WIKI_DIR)[0])
        retriever = Retriever(index=index, embedder=embedder)
        chat = OpenAIChat(model="fake", base_url=server.url, api_key="x", timeout=10, max_retries=2)
        answerer = LLMAnswerer(chat=chat, follow_ups=0)
        rows = []
        for question in QUESTIONS:
            evidences = retriever.retrieve(question).evidences
            answer = answerer.answer(question, evidences)
            before = len(server.requests)
            started = time.perf_counter()
            expl = explain(
                question,
                answer,
                evidences,
                answerer=answerer,
                embedder=embedder,
                repeats=args.repeats,
                evidence_embeddings=index.embeddings_of(evidences),
            )
            wall = time.perf_counter() - started
            rows.append(
                {
                    "question": question,
                    "evidences": len(evidences),
                    "clusters": len(expl.clusters),
                    "answer_calls": expl.answer_calls,
                    "requests": len(server.requests) - before,
                    "wall_s": round(wall, 3),
                    "wall_in_L": round(wall / args.latency, 2),
                }
            )
        overlap = server.max_overlap()
    report = {
        "latency_s": args.latency,
        "repeats": args.repeats,
        "max_requests_in_flight": overlap,
        "wall_in_L_median": statistics.median(r["wall_in_L"] for r in rows),
        "wall_in_L_max": max(r["wall_in_L"] for r in rows),
        "runs": rows,
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
