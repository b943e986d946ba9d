"""How sure answers are (issue 28): per confidence level, the number of answered questions and their P@1, on
the dev split, completed and conversational, EN and DE.

Each question is asked as `threadwise eval --answers` asks it (the `Pipeline` with the app's completer and
answerer over the eval index; reuse one with THREADWISE_DATA_DIR). `--cache` keeps each query's retrieval and
`--results` every turn's result, so a second run with other thresholds (`--set HIGH=0.85`,
`--set close_second=0.2`) only re-reads the signals (threadwise/core/answer/confidence.py).

    THREADWISE_DATA_DIR=DIR THREADWISE_LLM=off PYTHONPATH=. .venv/bin/python bench/confidence_dev.py \
        --cache /tmp/conf-retrievals.pkl --results /tmp/conf-results.pkl [--set LOW=0.45]
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from threadwise.core.answer import confidence
from threadwise.core.pipeline import Pipeline, TurnResult
from threadwise.evaluation.dataset import load_conversations, rank_of_gold
from threadwise.evaluation.run import ask_turns

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topic_switch import eval_retriever  # noqa: E402
from topic_switch_set import SHARED  # noqa: E402

SETTINGS = [(q, lang) for q in ("completed", "conversational") for lang in ("en", "de")]


def ask_all(cache: Path | None) -> dict[str, list[tuple[int | None, TurnResult]]]:
    """Per setting, every answerable dev question's (rank of its gold page, result)."""
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    app = Threadwise(settings=load_settings(config_file=None, data_dir=None))
    retriever = eval_retriever(cache)
    pipeline = Pipeline(completer=app.completer, retriever=retriever, answerer=app.answerer)
    out: dict[str, list[tuple[int | None, TurnResult]]] = {}
    for questions, lang in SETTINGS:
        rows = out.setdefault(f"{questions} {lang}", [])
        for conversation in load_conversations(SHARED / "qa-dev.json", lang):
            for turn, result in ask_turns(pipeline, conversation, questions):
                rows.append((rank_of_gold([e.page_id for e in result.sources], turn.gold_pages), result))
        retriever.save()
    return out


def level_of(result: TurnResult) -> confidence.Confidence | None:
    follow_up = result.completion.question.strip() != result.question.strip()
    return confidence.confidence_of(
        result.completion.question, result.retrieval, result.answer, follow_up=follow_up
    )


def apply(settings: list[str]) -> None:
    """`NAME=VALUE`: a module threshold (HIGH, LOW, MIN_COVERAGE, MIN_MARGIN) or a penalty's share."""
    for setting in settings:
        name, _, value = setting.partition("=")
        if name in confidence.PENALTIES:
            confidence.PENALTIES[name] = (float(value), confidence.PENALTIES[name][1])
        else:
            setattr(confidence, name, float(value))


def table(rows: list[tuple[int | None, TurnResult]]) -> dict[str, Any]:
    """Per level (and not found): questions and P@1; and which reasons the low answers gave."""
    groups: dict[str, list[int | None]] = {}
    reasons: Counter[str] = Counter()
    for rank, result in rows:
        c = level_of(result)
        groups.setdefault(c.level if c else "not found", []).append(rank)
        if c and c.level != "high":
            reasons[f"{c.level}: {c.reason}"] += 1
    out: dict[str, Any] = {
        level: (len(ranks), sum(r == 1 for r in ranks) / len(ranks))
        for level, ranks in groups.items()
        if ranks
    }
    out["reasons"] = reasons.most_common(6)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path, help="keep each query's retrieval here between runs")
    p.add_argument("--results", type=Path, help="keep every turn's result here between runs")
    p.add_argument("--set", action="append", default=[], help="a threshold or penalty, NAME=VALUE")
    args = p.parse_args()
    if args.results and args.results.exists():
        results = pickle.loads(args.results.read_bytes())
    else:
        results = ask_all(args.cache)
        if args.results:
            args.results.write_bytes(pickle.dumps(results))
    apply(args.set)
    print(f"{'setting':<20} {'level':<10} {'n':>4} {'P@1':>6}")
    for name, rows in results.items():
        t = table(rows)
        p1 = sum(r == 1 for r, _ in rows) / len(rows)
        print(f"{name:<20} {'all':<10} {len(rows):>4} {p1:>6.3f}")
        for level in ("high", "medium", "low", "not found"):
            if level in t:
                n, p_at_1 = t[level]
                print(f"{'':<20} {level:<10} {n:>4} {p_at_1:>6.3f}")
        print(f"{'':<20} {t['reasons']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
