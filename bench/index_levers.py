"""Indexing levers against retrieval quality: each variant indexes the ConfQuestions pages, then P@1 is measured
on the dev split (completed and conversational questions, English and German, retrieval only) as `threadwise
eval` measures it.

Variants: how many characters E5 embeds per evidence (`--chars`) and whether table rows get a vector of their
own or their table's (`--rows own table`). Every variant has its own data folder; all share one embedding
cache file, so a text is embedded once over all variants (say `--seed-cache FILE` to start from a cache that
already holds vectors). The time printed is the indexing time with the texts the model embedded in it.

    .venv/bin/python bench/index_levers.py --out-dir /tmp/levers --chars 300 200 --rows own table
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from threadwise.connectors.files import load_pages  # noqa: E402
from threadwise.core.complete.history import HistoryCompleter  # noqa: E402
from threadwise.evaluation.run import EvalConfig, collection_name, run_eval  # noqa: E402
from threadwise.index.embedding_cache import RowVectors  # noqa: E402
from threadwise.index.indexer import index_pages  # noqa: E402
from threadwise.index.store import EvidenceIndex  # noqa: E402
from threadwise.models.embedders import MultilingualE5Small  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions"
SETTINGS = [("completed", "en"), ("completed", "de"), ("conversational", "en"), ("conversational", "de")]


def variant(
    args: argparse.Namespace, chars: int, rows: RowVectors, pages: list[Any], cache: Path
) -> dict[str, Any]:
    data_dir = args.out_dir / f"chars{chars}-rows-{rows}"
    shutil.rmtree(data_dir, ignore_errors=True)
    index_dir = data_dir / "eval-index"
    index_dir.mkdir(parents=True)
    if cache.exists():
        shutil.copy(cache, index_dir / "embedding-cache.sqlite")
    embedder = MultilingualE5Small(passage_chars=chars)
    embedder.warm_up()
    cfg = EvalConfig(docs=args.docs, qa=args.qa, questions="completed", lang="en")
    index = EvidenceIndex(
        directory=index_dir, embedder=embedder, collection=collection_name(cfg, embedder), row_vectors=rows
    )
    wall, cpu = time.perf_counter(), time.process_time()
    report = index_pages(index, pages)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    shutil.copy(index_dir / "embedding-cache.sqlite", cache)  # the next variant reuses these vectors
    out: dict[str, Any] = {
        "chars": chars,
        "rows": rows,
        "index_seconds": round(wall, 1),
        "index_cpu_seconds": round(cpu, 1),
        "texts_embedded": report.vectors.embedded,
        "texts_cached": report.vectors.cached,
        "rows_shared": report.vectors.shared,
        "evidences": report.vectors.evidences,
    }
    for questions, lang in SETTINGS:
        cfg = EvalConfig(docs=args.docs, qa=args.qa, questions=questions, lang=lang)
        got = run_eval(
            cfg, pages, embedder=embedder, completer=HistoryCompleter(), answerer=None, data_dir=data_dir
        )
        out[f"p1_{questions}_{lang}"] = got["p_at_1"]
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--qa", type=Path, default=SHARED / "qa-dev.json")
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--chars", type=int, nargs="+", default=[300])
    ap.add_argument("--rows", nargs="+", choices=["own", "table"], default=["own", "table"])
    ap.add_argument("--seed-cache", type=Path, help="an embedding cache file to start from (copied)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    cache = args.out_dir / "embedding-cache.sqlite"
    if args.seed_cache:
        shutil.copy(args.seed_cache, cache)
    pages, _failures = load_pages(args.docs)
    results = [variant(args, c, r, pages, cache) for c in args.chars for r in args.rows]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
