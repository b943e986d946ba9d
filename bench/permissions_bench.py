"""What THREADWISE_PERMISSIONS=open-pages costs a sync: the ConfQuestions pages served by the local Confluence,
a few of them restricted, synced in full under `off` and under `open-pages`, then incrementally.

    .venv/bin/python bench/permissions_bench.py                      # hashing embedder: seconds
    .venv/bin/python bench/permissions_bench.py --restrict 10 --delay 0.01

Each policy syncs into its own empty index with the same embedder, so the difference between the two full
syncs is the restriction reads (one per page, each page asked once, `fetch_workers` threads) minus the
restricted pages that are no longer fetched or embedded. `--delay` makes every Confluence reply wait (a remote
server), which the restriction reads pay too.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_confluence import FakeConfluence  # noqa: E402
from tests.support.sync_env import make_env  # noqa: E402
from threadwise.models.embedders import make_embedder  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions"
CLIENT: dict[str, Any] = {"backoff_s": 0.2, "max_wait_s": 5.0, "max_retries": 8, "timeout": 30.0}


def restriction_reads(fake: FakeConfluence) -> int:
    return sum(r.path.endswith("/restriction/byOperation/read") for r in fake.requests)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--embedder", default="hashing", help="e5, use, minilm, bge-m3 or hashing (default)")
    ap.add_argument(
        "--restrict", type=int, default=5, help="restrict every n-th page's read (default 5: 20%%)"
    )
    ap.add_argument("--delay", type=float, default=0.0, help="seconds every Confluence reply waits")
    ap.add_argument("--policies", default="off,open-pages", help="in this order (the first run pays warm-up)")
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON")
    args = ap.parse_args()

    embedder = make_embedder(args.embedder)
    embedder.warm_up()
    results: dict[str, Any] = {"embedder": embedder.name, "delay_s": args.delay}
    with FakeConfluence.from_folder(args.docs, context_path="/confluence") as fake:
        fake.faults.delay_s = args.delay
        ids = sorted(fake.pages)
        for pid in ids[:: args.restrict]:
            fake.restrict(pid, groups=["hr"])
        results["pages"], results["restricted"] = len(ids), len(ids[:: args.restrict])
        print(f"{len(ids)} pages in {len(fake.spaces())} spaces, {results['restricted']} restricted")
        for policy in args.policies.split(","):
            data_dir = Path(tempfile.mkdtemp(prefix=f"perm-bench-{policy}-"))
            env = make_env(data_dir, fake.url, embedder=embedder, **CLIENT)
            env.syncer.permissions = policy
            for key in fake.spaces():
                env.admin.add_space(key)
            row: dict[str, Any] = {}
            for run, full in (("full", True), ("incremental", False)):
                fake.requests.clear()
                t = time.perf_counter()
                reports = env.admin.sync(full=full)
                seconds = time.perf_counter() - t
                row[run] = {
                    "seconds": round(seconds, 2),
                    "indexed": sum(r.counts.pages for r in reports),
                    "left_out": sum(len(r.restricted) for r in reports),
                    "requests": len(fake.requests),
                    "restriction_reads": restriction_reads(fake),
                }
                print(f"{policy:10s} {run:11s} {json.dumps(row[run])}")
            results[policy] = row
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
