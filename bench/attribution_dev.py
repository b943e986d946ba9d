"""Where counterfactual attribution (CFA) loses to the naive baseline, question by question, on the dev split.

`threadwise eval --questions completed --answers --explain` asks each question through the pipeline, then
explains the answer. The answer and the evidences stay the same while Explain changes, so this script keeps
them (question as answered, answer, evidences, the index's evidence vectors, gold pages) in a pickle per
language, then explains each saved answer again and prints, for every question where CFA or the naive
baseline misses: the gold pages, CFA's top cluster (its pages and share, and what the answer became without
it), naive's top evidence, and what the answer quoted. The totals match `eval --explain` over the same
answers (the same questions are explained: those whose gold page was retrieved in the top 10).

    THREADWISE_DATA_DIR=/tmp/attr_eval PYTHONPATH=. .venv/bin/python bench/attribution_dev.py \
        --lang en --cache /tmp/attr_en.pkl [--quiet]

The eval index must exist in THREADWISE_DATA_DIR (`threadwise eval` builds it); the first run retrieves and
answers every question (a minute or two), later runs reuse the pickle.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "confquestions"  # beside the checkout


def collect(lang: str, questions: str, cache: Path) -> list[dict[str, Any]]:
    """Ask every dev-split question as `eval` does (conversational ones with the conversation so far); keep
    what Explain needs."""
    from threadwise.connectors.files import load_pages
    from threadwise.evaluation.dataset import load_conversations, rank_of_gold
    from threadwise.evaluation.run import EvalConfig, ask_turns, build_eval_index, eval_pipeline
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    app = Threadwise(settings=load_settings(config_file=None, data_dir=None))
    pages, _ = load_pages(SHARED / "documents")
    cfg = EvalConfig(
        docs=SHARED / "documents",
        qa=SHARED / "qa-dev.json",
        questions=questions,
        lang=lang,
        answers=True,
        explain=True,
    )
    index, _ = build_eval_index(
        cfg, pages, embedder=app.embedder, data_dir=app.settings.data_dir, progress=lambda *a: None
    )
    pipeline = eval_pipeline(
        cfg,
        index,
        embedder=app.embedder,
        completer=app.completer,
        answerer=app.answerer,
        reranker=app.reranker,
        top_k=app.settings.top_k,
    )
    rows = []
    for conversation in load_conversations(cfg.qa, lang):
        for turn, result in ask_turns(pipeline, conversation, questions):
            rank = rank_of_gold([e.page_id for e in result.sources], turn.gold_pages)
            if rank is None:  # eval explains only answers whose gold page was retrieved
                continue
            rows.append(
                {
                    "question": result.completion.question,
                    "answer": result.answer,
                    "sources": list(result.sources),
                    "vectors": index.vectors_for(app.similarity_embedder, result.sources),
                    "gold": frozenset(turn.gold_pages),
                    "kind": turn.source,
                    "rank": rank,
                }
            )
    cache.write_bytes(pickle.dumps(rows))
    print(f"{questions} {lang}: {len(rows)} answers saved to {cache}", file=sys.stderr)
    return rows


def short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lang", choices=["en", "de"], default="en")
    parser.add_argument("--questions", choices=["completed", "conversational"], default="completed")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--quiet", action="store_true", help="totals only")
    parser.add_argument(
        "--closed-up",
        action="store_true",
        help="leave removed sources out and move the rest up (the paper's removal), as before 2026-11-27",
    )
    args = parser.parse_args()

    from threadwise.core.attribute.attribution import explain
    from threadwise.evaluation.attribution_metrics import (
        explanation_accuracy,
        naive_accuracy,
        naive_top_source,
        top_source,
    )
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    rows = (
        pickle.loads(args.cache.read_bytes())
        if args.cache.exists()
        else collect(args.lang, args.questions, args.cache)
    )
    app = Threadwise(settings=load_settings(config_file=None, data_dir=None))
    answerer, embedder = app.counterfactual_answerer, app.similarity_embedder

    tally: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {}
    started = time.perf_counter()
    for n, row in enumerate(rows, start=1):
        expl = explain(
            row["question"],
            row["answer"],
            row["sources"],
            answerer=answerer,
            embedder=embedder,
            evidence_embeddings=row["vectors"],
            keep_places=not args.closed_up,
        )
        ok, naive_ok = explanation_accuracy(expl, row["gold"]), naive_accuracy(expl, row["gold"])
        cited_pages = {row["sources"][k - 1].page_id for k in expl.cited if 0 < k <= len(row["sources"])}
        for c in (tally, by_kind.setdefault(row["kind"], Counter())):
            c["n"] += 1
            c["cfa"] += ok
            c["naive"] += naive_ok
            c["cfa_only"] += ok and not naive_ok
            c["naive_only"] += naive_ok and not ok
        tally[f"cited_pages={len(cited_pages)}"] += 1
        tally[f"cited_pages={len(cited_pages)} cfa"] += ok
        tally[f"cited_pages={len(cited_pages)} naive"] += naive_ok
        if args.quiet or (ok and naive_ok):
            continue
        top, naive_top = top_source(expl), naive_top_source(expl)
        label = "NAIVE ONLY" if naive_ok else ("CFA ONLY" if ok else "BOTH MISS")
        print(f"\n#{n} [{label}] {row['kind']} rank {row['rank']}: {short(row['question'], 120)}")
        print(f"  gold: {sorted(row['gold'])}")
        print(f"  answer (cites {list(expl.cited)}): {short(row['answer'].text, 300)}")
        for cluster in sorted(expl.clusters, key=lambda k: -k.share)[:3]:
            pages = ", ".join(
                f"[{s.position}] {s.page_id}{'*' if s.page_id in row['gold'] else ''}"
                for s in cluster.sources
            )
            answers = cluster.counterfactual_answers
            without = short(answers[0], 140) if answers else "-"
            print(
                f"  cluster {cluster.index} share {cluster.share:.3f} c={cluster.contribution}: {pages}\n"
                f"      without: {without}"
            )
        if top is not None and naive_top is not None:
            print(
                f"  CFA top [{top.position}] {top.page_id} ({top.label}); "
                f"naive top [{naive_top.position}] {naive_top.page_id} ({naive_top.label})"
            )
    seconds = time.perf_counter() - started
    total = tally["n"] or 1
    print(
        f"\n{args.questions} {args.lang}: n={tally['n']} CFA {tally['cfa'] / total:.4f} naive {tally['naive'] / total:.4f} "
        f"(CFA only {tally['cfa_only']}, naive only {tally['naive_only']}); {seconds:.0f} s"
    )
    for kind, c in sorted(by_kind.items()):
        print(f"  {kind}: n={c['n']} CFA {c['cfa'] / c['n']:.3f} naive {c['naive'] / c['n']:.3f}")
    for k in sorted(k for k in tally if k.startswith("cited_pages=") and " " not in k):
        m = tally[k]
        print(f"  answers citing {k[12:]} page(s): n={m} CFA {tally[k + ' cfa']} naive {tally[k + ' naive']}")


if __name__ == "__main__":
    main()
