"""What THREADWISE_PERMISSIONS=per-user costs: the permission sync, and retrieval with the filter.

    .venv/bin/python bench/per_user_bench.py sync                 # permission sync of the ConfQuestions pages
    .venv/bin/python bench/per_user_bench.py retrieval --data-dir DIR [--queries 100] [--hidden 20]

`sync`: the 215 ConfQuestions pages served by the local Confluence (Data Center flavour), every n-th page
restricted to one of a few groups, 40 users in 5 groups; one page sync under per-user (hashing embedder: the
permission reads do not depend on it), then `--runs` permission syncs, each after one restriction changed
(wall time, the process's CPU time, which includes the fake server's threads, and the requests).
`retrieval`: an index folder made by `threadwise eval` (e.g. a copy of the ready E5 dev index; never the shared
one itself), the dev split's completed English questions, each retrieved without a filter and with a Scope
hiding `--hidden` pages (the top 3 pages of questions spread over the split, so the filter has work to do),
alternating; p50/p95 of each, and a check that no hidden page came back.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_confluence import FakeConfluence  # noqa: E402
from tests.support.sync_env import make_env  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions"
CLIENT: dict[str, Any] = {"backoff_s": 0.2, "max_wait_s": 5.0, "max_retries": 8, "timeout": 30.0}
GROUPS = ("hr", "eng", "finance", "legal", "ops")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _p50_p95(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 0.5), 1), "p95": round(percentile(values, 0.95), 1)}


def bench_sync(args: argparse.Namespace) -> dict[str, Any]:
    from threadwise.sync.permission_sync import PermissionSyncer

    with FakeConfluence.from_folder(args.docs, context_path="/confluence") as fake:
        for i in range(40):
            fake.people.add_user(f"user{i}", f"user{i}@example.com", groups=(GROUPS[i % 5],))
        ids = sorted(fake.pages)
        restricted = ids[:: args.restrict]
        for n, pid in enumerate(restricted):
            fake.restrict(pid, groups=[GROUPS[n % 5]])
        data_dir = Path(tempfile.mkdtemp(prefix="per-user-bench-"))
        env = make_env(data_dir, fake.url, **CLIENT)
        env.syncer.permissions = "per-user"
        for key in fake.spaces():
            env.admin.add_space(key)
        t = time.perf_counter()
        env.admin.sync(full=True)
        first = time.perf_counter() - t
        print(
            f"{len(ids)} pages in {len(fake.spaces())} spaces, {len(restricted)} restricted; "
            f"first page sync (per-user, hashing embedder) {first:.1f} s"
        )
        runs = []
        for run in range(args.runs):
            syncer = PermissionSyncer(syncer=env.syncer)  # one per run, as `sync --permissions` and serve do
            fake.restrict(restricted[run % len(restricted)], groups=[GROUPS[(run + 1) % 5]])
            fake.requests.clear()
            t, c = time.perf_counter(), cpu_s()
            reports = [syncer.sync(c_.scope) for c_ in env.admin.list_spaces()]
            row = {
                "seconds": round(time.perf_counter() - t, 2),
                "cpu_s": round(cpu_s() - c, 2),
                "pages": sum(r.pages for r in reports),
                "changed": sum(r.changed for r in reports),
                "requests": len(fake.requests),
                "served_page_bodies": len(fake.served_pages()),
            }
            print(f"permission sync {run + 1}: {json.dumps(row)}")
            runs.append(row)
    return {
        "pages": len(ids),
        "restricted": len(restricted),
        "first_page_sync_s": round(first, 1),
        "runs": runs,
    }


def bench_retrieval(args: argparse.Namespace) -> dict[str, Any]:
    from threadwise.core.retrieve.retriever import RetrievalOptions, Retriever
    from threadwise.core.types import Scope
    from threadwise.evaluation.run import EvalConfig, collection_name
    from threadwise.index.store import EvidenceIndex
    from threadwise.models.embedders import make_embedder

    if args.data_dir.resolve() == Path("/work/evaldata-final"):
        sys.exit(
            "copy the shared index first (cp -r /work/evaldata-final DIR): this benchmark opens it for writing"
        )
    embedder = make_embedder(args.embedder)
    embedder.warm_up()
    name = collection_name(EvalConfig(docs=args.docs, qa=args.qa), embedder)
    index = EvidenceIndex(directory=args.data_dir / "eval-index", embedder=embedder, collection=name)
    if index.count() == 0:
        sys.exit(f"{args.data_dir}/eval-index holds no collection {name}: run `threadwise eval` there first")
    retriever = Retriever(index=index, embedder=embedder, options=RetrievalOptions())
    convs = json.loads(args.qa.read_text(encoding="utf-8"))
    questions = [t["completed_q_en"] for c in convs for t in c["turns"]][: args.queries]
    retriever.retrieve(questions[0])  # loads BM25 and Chroma's HNSW
    ranked: dict[str, None] = {}  # pages the unfiltered retrieval ranks high, over questions spread out
    for q in questions[:: max(1, len(questions) // 20)]:
        ranked.update(dict.fromkeys(e.page_id for e in retriever.retrieve(q).evidences[:3]))
    hidden = list(ranked)[: args.hidden]
    scope = Scope.of(None, hidden)
    plain, filtered, plain_cpu, filtered_cpu, leaks = [], [], [], [], 0
    for q in questions:
        t, c = time.perf_counter(), time.process_time()
        retriever.retrieve(q)
        plain.append((time.perf_counter() - t) * 1000)
        plain_cpu.append((time.process_time() - c) * 1000)
        t, c = time.perf_counter(), time.process_time()
        got = retriever.retrieve(q, scope)
        filtered.append((time.perf_counter() - t) * 1000)
        filtered_cpu.append((time.process_time() - c) * 1000)
        leaks += sum(e.page_id in scope.hidden_pages for e in got.evidences)
    result = {
        "embedder": embedder.name,
        "queries": len(questions),
        "hidden_pages": len(hidden),
        "leaks": leaks,
        "no_filter_ms": _p50_p95(plain),
        "filter_ms": _p50_p95(filtered),
        "no_filter_cpu_ms": _p50_p95(plain_cpu),
        "filter_cpu_ms": _p50_p95(filtered_cpu),
    }
    print(json.dumps(result))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["sync", "retrieval"])
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--qa", type=Path, default=SHARED / "qa-dev.json")
    ap.add_argument(
        "--restrict", type=int, default=20, help="restrict every n-th page (default 20: 11 pages)"
    )
    ap.add_argument("--runs", type=int, default=3, help="permission syncs to time")
    ap.add_argument("--data-dir", type=Path, help="retrieval: a data folder with an eval index (a copy)")
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--hidden", type=int, default=20)
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON")
    args = ap.parse_args()
    if args.what == "retrieval" and args.data_dir is None:
        ap.error("retrieval needs --data-dir")
    result = bench_sync(args) if args.what == "sync" else bench_retrieval(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
