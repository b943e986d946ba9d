"""`threadwise eval`: benchmark retrieval, answers and explanations on ConfQuestions-style data."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from threadwise.models.embedders import EMBEDDER_NAMES
from threadwise.wiring import Threadwise

Build = Callable[[], Threadwise]


def register(sub: Any, build: Build) -> None:
    p = sub.add_parser("eval", help="measure retrieval (and answers, explanations) on a question set")
    p.add_argument("--docs", type=Path, default=Path("../shared/confquestions/documents"))
    p.add_argument("--qa", type=Path, default=Path("../shared/confquestions/qa-dev.json"))
    p.add_argument("--questions", choices=["completed", "conversational"], default="completed")
    p.add_argument("--lang", choices=["en", "de"], default="en")
    p.add_argument("--context", default="ALL", help="NONE, TTL, HDR, BEF, AFT, ALL or a comma list (TTL,HDR)")
    p.add_argument(
        "--linearizer", default="verbalized", choices=["verbalized", "piped", "markdown", "html", "plaintext"]
    )
    p.add_argument("--tables", default="both", choices=["both", "rows", "tables"])
    p.add_argument("--mode", default="hybrid", choices=["hybrid", "lexical", "dense"])
    p.add_argument("--embedder", help=f"retrieval embedder: {EMBEDDER_NAMES} (default: the configured one)")
    p.add_argument("--answers", action="store_true", help="also answer and score against the gold answers")
    p.add_argument("--explain", action="store_true", help="also run Explain and score attribution accuracy")
    p.add_argument("--limit", type=int, help="only the first N conversations")
    p.add_argument("--out", type=Path, help="write the report as one JSON object")
    p.set_defaults(func=lambda a: run(a, build), exit_at_once=True)


def run(args: argparse.Namespace, build: Build) -> int:
    from threadwise.connectors.files import load_pages
    from threadwise.evaluation.run import EvalConfig, run_eval
    from threadwise.models.embedders import make_embedder

    app = build()
    if args.embedder:
        app.__dict__["embedder"] = make_embedder(args.embedder)  # the override replaces the configured one
    if not args.docs.is_dir():
        raise FileNotFoundError(f"{args.docs} is not a folder of pages (see --docs)")
    pages, failures = load_pages(args.docs)
    for f in failures:
        print(f"skipped {f.page_id}: {f.reason}", file=sys.stderr)
    cfg = EvalConfig(
        docs=args.docs,
        qa=args.qa,
        questions=args.questions,
        lang=args.lang,
        context=args.context,
        linearizer=args.linearizer,
        tables=args.tables,
        mode=args.mode,
        answers=args.answers,
        explain=args.explain,
        limit=args.limit,
    )
    app.embedder.warm_up()
    judge = None
    if args.answers and app.llm is not None:
        from threadwise.evaluation.judge import LLMJudge
        from threadwise.models.llm_settings import make_chat

        judge = LLMJudge(chat=make_chat(app.llm["judge"]))
    report = run_eval(
        cfg,
        pages,
        embedder=app.embedder,
        similarity_embedder=app.similarity_embedder,
        completer=app.completer,
        answerer=app.answerer if (args.answers or args.explain) else None,
        data_dir=app.settings.data_dir,
        reranker=app.reranker,
        judge=judge,
        top_k=app.settings.top_k,
        progress=_progress_bars(),
    )
    print_table(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2))
    return 0


def _progress_bars() -> Callable[[str, int, int], None]:
    """One progress bar per stage of the run: indexing the pages, then asking the questions."""
    from threadwise.cli.progress import ProgressBar

    bars: dict[str, ProgressBar] = {}

    def show(stage: str, done: int, total: int) -> None:
        if stage not in bars:
            label, unit = ("Indexing", "pages") if stage == "index" else ("Asking", "questions")
            bars[stage] = ProgressBar(label, unit=unit)
        bars[stage](done, total)

    return show


def print_table(report: dict[str, Any]) -> None:
    keys = [
        "questions",
        "answerable_questions",
        "p_at_1",
        "hit_at_10",
        "mrr_at_10",
        "index_seconds",
        "query_ms_p50",
        "query_ms_p95",
        "token_recall",
        "token_f1",
        "median_words",
        "not_found_rate",
        "not_found_rate_answerable",
        "not_found_rate_unanswerable",
        "not_found_by_kind",
        "by_confidence",
        "answer_ms_p50",
        "answer_ms_p95",
        "answer_relevance",
        "attribution_accuracy",
        "naive_accuracy",
        "attribution_n",
        "explain_ms_p50",
        "explain_ms_p95",
    ]
    cfg = report["config"]
    print(" ".join(f"{k}={v}" for k, v in cfg.items()))
    for k in keys:
        if k in report:
            print(f"  {k:<22} {report[k]}")
    for group in ("by_source", "by_type", "by_turn"):
        print(f"  {group:<22} " + "  ".join(f"{k}: {v:.3f}" for k, v in report[group].items()))
