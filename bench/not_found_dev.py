"""How often the offline answerer says "not found": wrongly, for the dev split's answerable questions, and
rightly, for the unanswerable dev set (bench/dev_sets/unanswerable.json: in-domain near misses and out-of-domain
questions, EN and DE).

Every question is retrieved once from the eval index (built as `threadwise eval` builds it, reused through
THREADWISE_DATA_DIR) and kept in a pickle; then the answerer answers from the saved retrievals, so trying its
settings takes seconds, not an indexing run. Prints, per language: the not-found rate of the near misses, of
the out-of-domain questions and of the answerable completed questions, the answerable ones' token recall,
and the share an LLM answerer would not be asked (`clearly_unsupported`: the call it saves).
It also checks that no page mentions what the near misses name (`absent` in the set).

    THREADWISE_DATA_DIR=DIR PYTHONPATH=. .venv/bin/python bench/not_found_dev.py --cache /tmp/nf.pkl \
        [--set min_support=0.5] [--dump misses.jsonl]
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from threadwise.core.answer.support import clearly_unsupported, rankings_agree
from threadwise.evaluation.answer_metrics import score_answers
from threadwise.evaluation.dataset import load_conversations

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "confquestions"  # beside the checkout
UNANSWERABLE = Path(__file__).resolve().parent / "dev_sets" / "unanswerable.json"
SETS = {"answerable": SHARED / "qa-dev.json", "unanswerable": UNANSWERABLE}


def check_absent(path: Path = UNANSWERABLE) -> list[str]:
    """The near misses' `absent` terms that some page does mention after all (should be none)."""
    pages = [p.read_text(encoding="utf-8").lower() for p in sorted((SHARED / "documents").glob("*.json"))]
    found = []
    for conv in json.loads(path.read_text(encoding="utf-8")):
        for turn in conv["turns"]:
            found += [t for t in turn.get("absent", []) if any(t.lower() in page for page in pages)]
    return found


def retrieve_all(cache: Path) -> dict[str, list[dict[str, Any]]]:
    """Every completed question of both sets and languages with its retrieval (all stages kept)."""
    from threadwise.connectors.files import load_pages
    from threadwise.core.retrieve.retriever import Retriever
    from threadwise.evaluation.run import EvalConfig, build_eval_index
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    app = Threadwise(settings=load_settings(config_file=None, data_dir=None))
    pages, _ = load_pages(SHARED / "documents")
    cfg = EvalConfig(docs=SHARED / "documents", qa=SETS["answerable"])
    t = time.perf_counter()
    index, _ = build_eval_index(
        cfg, pages, embedder=app.embedder, data_dir=app.settings.data_dir, progress=lambda *a: None
    )
    print(f"index ready in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    retriever = Retriever(index=index, embedder=app.embedder)
    out: dict[str, list[dict[str, Any]]] = {}
    for path in SETS.values():
        for lang in ("en", "de"):
            for conversation in load_conversations(path, lang):
                for turn in conversation:
                    retrieval = retriever.retrieve(turn.completed)
                    kind = turn.kind or "answerable"
                    out.setdefault(f"{kind}-{lang}", []).append(
                        {"query": turn.completed, "gold": turn.answer, "retrieval": retrieval}
                    )
    cache.write_bytes(pickle.dumps(out))
    return out


def answerer_with(settings: list[str]) -> Any:
    """The offline answerer (USE), with `NAME=VALUE` overrides of its parameters."""
    from threadwise.core.answer.extractive import ExtractiveAnswerer
    from threadwise.models.embedders import make_embedder

    answerer = ExtractiveAnswerer(embedder=make_embedder("use"))
    for setting in settings:
        name, _, value = setting.partition("=")
        current = getattr(answerer, name)
        answerer = replace(answerer, **{name: type(current)(value)})
    return answerer


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--set", action="append", default=[], help="an answerer parameter, NAME=VALUE")
    parser.add_argument("--dump", type=Path, help="one JSON line per question: its answer and the decision")
    args = parser.parse_args()
    mentioned = check_absent()
    print(f"near-miss terms some page mentions: {mentioned or 'none'}")
    rows = pickle.loads(args.cache.read_bytes()) if args.cache.exists() else retrieve_all(args.cache)
    answerer = answerer_with(args.set)
    answerer.warm_up()
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    print(f"{'set':<22} {'n':>4} {'not found':>9} {'recall':>7} {'LLM skipped':>11}")
    for name in sorted(rows):
        answers = []
        skipped = 0
        for row in rows[name]:
            retrieval = row["retrieval"]
            agree = rankings_agree(retrieval.lexical, retrieval.dense)
            answer = answerer.answer(row["query"], retrieval.evidences, rankings_agree=agree)
            skipped += clearly_unsupported(row["query"], retrieval.evidences, min_coverage=0.5)
            answers.append(answer)
            if dump:
                record = {"set": name, "query": row["query"], "not_found": answer.not_found}
                dump.write(json.dumps({**record, "answer": answer.text[:300]}, ensure_ascii=False) + "\n")
        scores = score_answers([a.text for a in answers], [r["gold"] for r in rows[name]])
        recall = f"{scores.token_recall:.3f}" if name.startswith("answerable") else ""
        llm = skipped / len(answers)
        print(f"{name:<22} {len(answers):>4} {scores.not_found_rate:>9.3f} {recall:>7} {llm:>11.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
