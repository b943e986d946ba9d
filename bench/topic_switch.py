"""Topic switches inside a thread (issue 28): P@1 of a switched question and of its follow-up against the same
questions asked in a new thread, and the dev split's conversational P@1, with and without topic detection.

The threads come from `topic_switch_set.py` (built from the dev split at run time). Each question is completed
as `eval --questions conversational` completes it (the history built by `core/complete/conversation.py`, each
turn remembered with the pages of its sources, no answer: retrieval only) through the `Pipeline` that `eval`
and the bots use, over the eval index (reuse one with THREADWISE_DATA_DIR); `--cache` keeps each query's
retrieval, so a second run retrieves only the queries that changed.

    THREADWISE_DATA_DIR=DIR THREADWISE_LLM=off PYTHONPATH=. .venv/bin/python bench/topic_switch.py \
        --cache /tmp/switch-rankings.pkl

`--offset N` draws the second conversations N places on instead of 12 (`topic_switch_set.py`): other threads,
not tuned on, to check a change against; `--offset 3,5,7,9,12,15,18,21` prints each draw and their mean.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from pathlib import Path
from typing import Any

from threadwise.core.complete.history import SEPARATOR, HistoryCompleter
from threadwise.core.pipeline import Pipeline
from threadwise.core.protocols import QuestionCompleter
from threadwise.core.retrieve.retriever import Retrieval, RetrievalOptions, Retriever
from threadwise.core.types import Scope
from threadwise.evaluation.dataset import QATurn, load_conversations, rank_of_gold
from threadwise.evaluation.run import NoAnswer, ask_turns

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topic_switch_set import BEFORE, OFFSET, SHARED, fresh_threads, load_dev, switch_threads  # noqa: E402


def ask_all(conversations: list[list[QATurn]], pipeline: Pipeline) -> list[list[Any]]:
    """Per conversation, per turn: (rank of the gold page, the completed question), asked as `eval` asks."""
    out = []
    for conversation in conversations:
        out.append(
            [
                (
                    rank_of_gold([e.page_id for e in result.sources], turn.gold_pages),
                    result.completion.question,
                )
                for turn, result in ask_turns(pipeline, conversation, "conversational")
            ]
        )
    return out


def p_at_1(rows: list[Any]) -> float:
    return sum(1 for rank, _ in rows if rank == 1) / len(rows) if rows else 0.0


class CachedRetriever(Retriever):
    """The eval index's retriever, each query's retrieval kept (and saved to `path` between runs)."""

    def __init__(self, path: Path | None, **parts: Any) -> None:
        super().__init__(**parts)
        self.path = path
        self.cache: dict[str, Retrieval] = pickle.loads(path.read_bytes()) if path and path.exists() else {}

    def retrieve(self, query: str, scope: Scope | None = None) -> Retrieval:
        if query not in self.cache:
            self.cache[query] = super().retrieve(query, scope)
        return self.cache[query]

    def save(self) -> None:
        if self.path:
            self.path.write_bytes(pickle.dumps(self.cache))


def eval_retriever(cache: Path | None) -> CachedRetriever:
    """Retrieval over the eval index that `threadwise eval` builds, with the app's settings."""
    from threadwise.connectors.files import load_pages
    from threadwise.evaluation.run import EvalConfig, build_eval_index
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    app = Threadwise(settings=load_settings(config_file=None, data_dir=None))
    pages, _ = load_pages(SHARED / "documents")
    cfg = EvalConfig(docs=SHARED / "documents", qa=SHARED / "qa-dev.json")
    index, _ = build_eval_index(
        cfg, pages, embedder=app.embedder, data_dir=app.settings.data_dir, progress=lambda *a: None
    )
    options = RetrievalOptions(top_k=app.settings.top_k)
    return CachedRetriever(cache, index=index, embedder=app.embedder, reranker=app.reranker, options=options)


def measure(pipeline: Pipeline, files: dict[str, Path], lang: str) -> dict[str, Any]:
    dev = ask_all(load_conversations(files["dev"], lang), pipeline)
    switched = ask_all(load_conversations(files["switch"], lang), pipeline)
    fresh = ask_all(load_conversations(files["fresh"], lang), pipeline)
    later = [row for rows in dev for row in rows[1:]]
    return {
        "dev_conversational_p_at_1": round(p_at_1([row for rows in dev for row in rows]), 3),
        "dev_later_turns_passed_through": sum(SEPARATOR not in q for _, q in later),
        "dev_later_turns": len(later),
        "switched_p_at_1": round(p_at_1([rows[BEFORE] for rows in switched]), 3),
        "fresh_p_at_1": round(p_at_1([rows[0] for rows in fresh]), 3),
        "follow_up_p_at_1": round(p_at_1([rows[BEFORE + 1] for rows in switched]), 3),
        "fresh_follow_up_p_at_1": round(p_at_1([rows[1] for rows in fresh]), 3),
        "switches_detected": sum(
            rows[BEFORE][1] == rows_f[0][1] for rows, rows_f in zip(switched, fresh, strict=True)
        ),
        "follow_ups_as_fresh": sum(
            rows[BEFORE + 1][1] == rows_f[1][1] for rows, rows_f in zip(switched, fresh, strict=True)
        ),
        "threads": len(switched),
    }


def thread_files(folder: Path, threads: list[dict[str, Any]]) -> dict[str, Path]:
    """The dev split, the switching threads and their fresh counterparts as qa files (the latter in `folder`)."""
    files = {"dev": SHARED / "qa-dev.json", "switch": folder / "switch.json", "fresh": folder / "fresh.json"}
    files["switch"].write_text(json.dumps(threads), encoding="utf-8")
    files["fresh"].write_text(json.dumps(fresh_threads(threads)), encoding="utf-8")
    return files


def over_draws(retriever: CachedRetriever, offsets: list[int]) -> dict[str, Any]:
    """The topic-switch completer over several draws of threads: each draw's numbers and their mean."""
    import tempfile

    keys = ("switched_p_at_1", "fresh_p_at_1", "follow_up_p_at_1", "fresh_follow_up_p_at_1")
    results: dict[str, Any] = {}
    for lang in ("en", "de"):
        rows = []
        for offset in offsets:
            threads = switch_threads(load_dev(), offset=offset)
            with tempfile.TemporaryDirectory() as tmp:
                files = thread_files(Path(tmp), threads)
                pipeline = Pipeline(completer=HistoryCompleter(), retriever=retriever, answerer=NoAnswer())
                rows.append(measure(pipeline, files, lang))
            print(f"offset {offset} [{lang}]", {k: rows[-1][k] for k in keys}, flush=True)
            retriever.save()
        results[lang] = mean = {k: round(sum(r[k] for r in rows) / len(rows), 3) for k in keys}
        mean["dev_conversational_p_at_1"] = rows[0]["dev_conversational_p_at_1"]
        print(f"mean of {len(offsets)} draws [{lang}]", mean)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path, help="keep each query's ranked pages here between runs")
    p.add_argument("--out", type=Path, help="write the numbers as JSON")
    p.add_argument(
        "--offset",
        default=str(OFFSET),
        help="draw the second conversations this far on; several (3,5,7): the mean over those draws",
    )
    args = p.parse_args()
    import tempfile

    retriever = eval_retriever(args.cache)
    offsets = [int(o) for o in args.offset.split(",")]
    if len(offsets) > 1:
        means = over_draws(retriever, offsets)
        if args.out:
            args.out.write_text(json.dumps(means, indent=2))
        return
    threads = switch_threads(load_dev(), offset=offsets[0])
    completers: dict[str, QuestionCompleter] = {
        "history (no topic detection)": HistoryCompleter(topics=False),
        "history with topic switches": HistoryCompleter(),
    }
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = thread_files(Path(tmp), threads)
        for name, completer in completers.items():
            for lang in ("en", "de"):
                pipeline = Pipeline(completer=completer, retriever=retriever, answerer=NoAnswer())
                results[f"{name} {lang}"] = r = measure(pipeline, files, lang)
                print(f"{name} [{lang}]")
                for k, v in r.items():
                    print(f"  {k:<32} {v}")
                retriever.save()
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
