"""Indexing throughput through an embeddings server vs in-process, same model, at several concurrency limits.

The server is tests/support/fake_model_server.py in its own process, wrapping the same offline model (E5 by
default) behind OpenAI's /v1/embeddings; the client is `ServerEmbedder` through the real `openai` client.
Each run indexes the same first N ConfQuestions pages into a fresh index folder; the in-process run comes
first and again last, to show how much the host's load drifted meanwhile. Reported per run: wall time,
pages/s and evidences/s, CPU seconds of this process and of the server process, and how far the vectors
stored through the server are from the in-process ones (max |difference|; 0 means the same retrieval).

    .venv/bin/python bench/embeddings_server_bench.py --pages 12 --concurrency 1,4,8 --batch-size 8

The indexer embeds one page at a time, so a concurrency above 1 only helps when a page has more than
`--batch-size` evidences (its batches then go out together). The server serializes its model (one model,
as on one GPU), so on a CPU host the gain is the HTTP and JSON work that overlaps the model's.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procstat import cpu_of  # noqa: E402  (beside this script)

from tests.support.servers import free_port  # noqa: E402
from threadwise.connectors.files import load_pages  # noqa: E402
from threadwise.core.protocols import Embedder  # noqa: E402
from threadwise.core.types import Page  # noqa: E402
from threadwise.index.indexer import index_pages  # noqa: E402
from threadwise.index.store import EvidenceIndex  # noqa: E402
from threadwise.models.embedders import make_embedder  # noqa: E402
from threadwise.models.server_embedder import ServerEmbedder  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions" / "documents"


def index_run(pages: list[Page], embedder: Embedder, folder: Path, server_pid: int | None) -> dict[str, Any]:
    index = EvidenceIndex(directory=folder, embedder=embedder)
    cpu, server_cpu = time.process_time(), cpu_of(server_pid) if server_pid else 0.0
    started = time.perf_counter()
    report = index_pages(index, pages)
    wall = time.perf_counter() - started
    evidences = index.count()
    row_ids = [rid for rid, _doc, _meta in index.chroma.get()]
    return {
        "wall_s": round(wall, 2),
        "pages_per_s": round(len(pages) / wall, 2),
        "evidences_per_s": round(evidences / wall, 1),
        "client_cpu_s": round(time.process_time() - cpu, 2),
        "server_cpu_s": round(cpu_of(server_pid) - server_cpu, 2) if server_pid else None,
        "pages": report.embedded,
        "evidences": evidences,
        "_vectors": index.chroma.get_embeddings(row_ids),
    }


def start_server(embedder: str, port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.fake_model_server",
            "--port",
            str(port),
            "--embedder",
            embedder,
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120  # loading the model takes a while on a busy host
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1):
                return process
        except OSError:
            if process.poll() is not None:
                raise SystemExit("the model server exited") from None
            time.sleep(0.5)
    process.kill()
    raise SystemExit("the model server did not start within 120 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=12, help="first N ConfQuestions pages (bounded size)")
    parser.add_argument("--embedder", default="e5", help="the model, in-process and inside the server")
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    pages, _failures = load_pages(SHARED)
    pages = sorted(pages, key=lambda p: p.id)[: args.pages]
    results: dict[str, Any] = {"pages": len(pages), "embedder": args.embedder, "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory(prefix="tw-embed-bench-") as tmp:
        local = make_embedder(args.embedder)
        local.warm_up()
        baseline = index_run(pages, local, Path(tmp) / "in-process", None)
        reference = baseline.pop("_vectors")
        results["in_process"] = baseline
        print("in-process", baseline, flush=True)
        del local

        port = free_port()
        server = start_server(args.embedder, port)
        try:
            for concurrency in [int(c) for c in args.concurrency.split(",")]:
                remote = ServerEmbedder(
                    model=args.embedder,
                    base_url=f"http://127.0.0.1:{port}/v1",
                    batch_size=args.batch_size,
                    concurrency=concurrency,
                )
                remote.warm_up()
                run = index_run(pages, remote, Path(tmp) / f"server-{concurrency}", server.pid)
                vectors = run.pop("_vectors")
                run["max_abs_vector_difference"] = float(
                    max(np.max(np.abs(vectors[k] - reference[k])) for k in reference)
                )
                results[f"server_concurrency_{concurrency}"] = run
                print(f"server, concurrency {concurrency}", run, flush=True)
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)
        # once more at the end: on a shared host the load drifts, and this shows by how much
        local = make_embedder(args.embedder)
        local.warm_up()
        again = index_run(pages, local, Path(tmp) / "in-process-again", None)
        again.pop("_vectors")
        results["in_process_again"] = again
        print("in-process again", again, flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
