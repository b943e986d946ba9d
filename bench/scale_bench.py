"""The index at wiki scale: the 215 ConfQuestions pages and copies of them with small edits, up to N pages.

Each size runs in a fresh process (so its peak RSS is its own) and reports: indexing time (wall and CPU),
pages/s and evidences/s, texts the model embedded against vectors found in the embedding cache (the copies
repeat most texts of their originals: the hit rate says how much of the speed is the cache), peak RSS, the
query latency of hybrid retrieval over the dev questions (p50 / p95), then again with the scope a `per-user`
asker gets (every indexed space listed, 20 restricted pages hidden), a flush with nothing changed, and one page
edited (its evidences written, texts embedded).

A copy `i` of a page lives in a copied space (`<SPACE>-c<i>`), keeps its title, and has two small edits: a
sentence appended to its body and the copy number in its first paragraph; so its evidences that quote the
first paragraph, and its last one, are new texts. Pages go to the index 16 at a time through `index_stream` (the pipeline the sync uses),
as `index --docs` and `sync` do, and are generated as they go (never all in memory).

    .venv/bin/python bench/scale_bench.py --sizes 215 2150 --embedder hashing --json /tmp/scale.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stream_index import index_stream  # noqa: E402

from threadwise.connectors.files import load_pages  # noqa: E402
from threadwise.core.retrieve.retriever import Retriever  # noqa: E402
from threadwise.core.types import Page, Scope  # noqa: E402
from threadwise.evaluation.dataset import load_conversations  # noqa: E402
from threadwise.index.embedding_cache import EmbedCounts  # noqa: E402
from threadwise.index.indexer import index_page  # noqa: E402
from threadwise.index.store import EvidenceIndex  # noqa: E402
from threadwise.models.embedders import make_embedder  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions"


def copy_of(page: Page, i: int) -> Page:
    """Copy `i` of a page: another space, the same title, two small edits."""
    body = page.body.replace("<p>", f"<p>(copy {i}) ", 1) + f"<p>Copied for space {page.space}-c{i}.</p>"
    return replace(
        page, id=f"{page.id}-c{i}", space=f"{page.space}-c{i}", url=f"{page.url}?copy={i}", body=body
    )


def wiki(originals: list[Page], size: int) -> Iterator[Page]:
    for n in range(size):
        i, j = divmod(n, len(originals))
        yield originals[j] if i == 0 else copy_of(originals[j], i)


def one_size(args: argparse.Namespace) -> dict[str, Any]:
    originals = load_pages(args.docs)[0]
    embedder = make_embedder(args.embedder)
    embedder.warm_up()
    index = EvidenceIndex(directory=args.data_dir / "index", embedder=embedder)
    counts = EmbedCounts()
    wall, cpu = time.perf_counter(), time.process_time()
    index_stream(index, wiki(originals, args.size), counts=counts)
    index.flush()  # sweeps nothing (no crash), builds BM25
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    reused = counts.cached + counts.shared
    out: dict[str, Any] = {
        "pages": args.size,
        "embedder": embedder.name,
        "evidences": counts.evidences,
        "index_seconds": round(wall, 1),
        "index_cpu_seconds": round(cpu, 1),
        "pages_per_s": round(args.size / wall, 1),
        "evidences_per_s": round(counts.evidences / wall, 1),
        "texts_embedded": counts.embedded,
        "cache_hit_rate": round(reused / max(1, counts.evidences), 3),
    }

    queries = [t.completed for c in load_conversations(args.qa, "en") for t in c][: args.queries]
    retriever = Retriever(index=index, embedder=embedder)
    retriever.retrieve(queries[0])  # loads BM25 and Chroma's HNSW
    # what a `per-user` asker's scope looks like: the spaces they may read (here all), restricted pages hidden
    per_user = Scope.of(index.spaces(), [p.id for p in originals[::11][:20]])
    for label, scope in (("query", None), ("scoped_query", per_user)):
        ms = []
        for q in queries:
            t = time.perf_counter()
            retriever.retrieve(q, scope)
            ms.append((time.perf_counter() - t) * 1000)
        ms.sort()
        out[f"{label}_ms_p50"] = round(ms[len(ms) // 2], 1)
        out[f"{label}_ms_p95"] = round(ms[min(len(ms) - 1, int(len(ms) * 0.95))], 1)

    t = time.perf_counter()
    index.flush()
    out["no_change_flush_s"] = round(time.perf_counter() - t, 3)

    target = max(originals[:20], key=lambda p: len(p.body))  # a page of many evidences
    edited = replace(target, body=target.body + "<p>Edited by the scale benchmark.</p>", version=2)
    edit = EmbedCounts()
    t = time.perf_counter()
    index_page(index, edited, counts=edit)
    index.flush()
    out["one_edit_s"] = round(time.perf_counter() - t, 2)
    out["one_edit_evidences"] = edit.evidences
    out["one_edit_texts_embedded"] = edit.embedded
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--qa", type=Path, default=SHARED / "qa-dev.json")
    ap.add_argument("--sizes", type=int, nargs="+", default=[215, 2150])
    ap.add_argument("--embedder", default="hashing", help="hashing (default), use, e5, …")
    ap.add_argument("--queries", type=int, default=100, help="dev questions timed (completed, English)")
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON")
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)  # one size, in this process
    ap.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.size is not None:
        print(json.dumps(one_size(args)), flush=True)
        return
    results = []
    for size in args.sizes:
        data_dir = Path(tempfile.mkdtemp(prefix=f"scale-{size}-"))
        cmd = [sys.executable, __file__, "--size", str(size), "--data-dir", str(data_dir)]
        cmd += ["--docs", str(args.docs), "--qa", str(args.qa), "--embedder", args.embedder]
        cmd += ["--queries", str(args.queries)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
