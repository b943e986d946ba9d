"""Confluence sync through HTTP, measured: the ConfQuestions pages served by the local Confluence server.

1. full sync of every space (time, pages/s, evidences), then retrieval P@1 on the dev questions;
2. an incremental run with nothing changed (time; pages fetched and embedded: zero);
3. one page edited (only that page fetched and re-embedded);
4. a run with 20% of requests failing with 429/500 (every page arrives, none twice).

    .venv/bin/python bench/sync_bench.py --embedder hashing          # minutes: seconds
    .venv/bin/python bench/sync_bench.py                              # the default embedder

The fault run re-syncs the same index in full by default (every page fetched again, nothing re-embedded);
`--fault-run fresh` syncs into an empty index instead (everything embedded a second time).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_confluence import FakeConfluence  # noqa: E402
from tests.support.sync_env import CountingEmbedder, SyncEnv, make_env  # noqa: E402
from threadwise.connectors.files import load_pages  # noqa: E402
from threadwise.core.protocols import Embedder  # noqa: E402
from threadwise.core.retrieve.retriever import Retriever  # noqa: E402
from threadwise.evaluation.dataset import load_conversations, page_id_of, rank_of_gold  # noqa: E402
from threadwise.index.indexer import index_pages  # noqa: E402
from threadwise.index.store import EvidenceIndex  # noqa: E402
from threadwise.models.embedders import make_embedder  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions"
PUBLIC_BASE = (
    "https://openxt.atlassian.net/wiki"  # web links keep the pages' real URLs (gold answers use them)
)
CLIENT: dict[str, Any] = {"backoff_s": 0.2, "max_wait_s": 5.0, "max_retries": 8, "timeout": 30.0}


def fetched_pages(fake: FakeConfluence) -> list[str]:
    """Page ids whose content was served since the last call (then forgets the requests)."""
    ids = fake.served_pages()
    fake.requests.clear()
    return ids


def timed_sync(env: SyncEnv, *, full: bool = False) -> tuple[float, list[Any]]:
    t = time.perf_counter()
    reports = env.admin.sync(full=full)
    return time.perf_counter() - t, reports


def totals(reports: list[Any]) -> dict[str, int]:
    keys = ("pages", "added", "updated", "deleted", "unchanged", "failed")
    out = {k: sum(getattr(r.counts, k) for r in reports) for k in keys}
    for k in (
        "evidences",
        "embedded",
        "cached",
        "shared",
    ):  # evidences written; where their vectors came from
        out[f"vectors_{k}"] = sum(getattr(r.vectors, k) for r in reports)
    return out


def p_at_1(index: EvidenceIndex, embedder: Embedder, qa: Path) -> tuple[float, int]:
    """Retrieval P@1 as `threadwise eval` measures it (completed English questions, hybrid, no reranker)."""
    retriever = Retriever(index=index, embedder=embedder)
    ranks = []
    for conversation in load_conversations(qa, "en"):
        for turn in conversation:
            evidences = retriever.retrieve(turn.completed).evidences
            ranks.append(rank_of_gold([page_id_of(e.url) for e in evidences], turn.gold_pages))
    return sum(r == 1 for r in ranks) / len(ranks), len(ranks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--qa", type=Path, default=SHARED / "qa-dev.json")
    ap.add_argument("--embedder", default="default", help="e5 (default), use, minilm, bge-m3 or hashing")
    ap.add_argument("--data-dir", type=Path, help="keep the synced index here (default: a temporary folder)")
    ap.add_argument("--fault-run", choices=["resync", "fresh"], default="resync")
    ap.add_argument(
        "--flavor", choices=["datacenter", "cloud"], default="datacenter", help="which REST API to serve"
    )
    ap.add_argument(
        "--compare-files",
        action="store_true",
        help="also index the files directly and compare P@1 (embeds twice)",
    )
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON")
    args = ap.parse_args()

    base_embedder = make_embedder(args.embedder)
    base_embedder.warm_up()
    embedder = CountingEmbedder(base_embedder)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="sync-bench-"))
    results: dict[str, Any] = {
        "embedder": base_embedder.name,
        "data_dir": str(data_dir),
        "flavor": args.flavor,
    }

    cloud = args.flavor == "cloud"
    context = "/wiki" if cloud else "/confluence"
    served = FakeConfluence.from_folder(
        args.docs, context_path=context, public_base=PUBLIC_BASE, flavor=args.flavor
    )
    with served as fake:
        env = make_env(data_dir, fake.url, embedder=embedder, cloud=cloud, **CLIENT)
        for key in fake.spaces():
            env.admin.add_space(key)
        print(f"{len(fake.pages)} pages in {len(fake.spaces())} spaces at {fake.url}")

        # 1. full sync
        cpu = time.process_time()
        seconds, reports = timed_sync(env, full=True)
        cpu = time.process_time() - cpu
        counts = totals(reports)
        evidences = env.index.count()
        results["full"] = {
            "seconds": round(seconds, 2),
            "cpu_seconds": round(cpu, 1),
            "pages_per_s": round(counts["pages"] / seconds, 2),
            "evidences_per_s": round(evidences / seconds, 1),
            "evidences": evidences,
            "requests": len(fake.requests),
            **counts,
        }
        fetched_pages(fake)
        print(
            f"full sync: {counts['pages']} pages, {evidences} evidences in {seconds:.1f}s, CPU {cpu:.1f}s "
            f"({counts['pages'] / seconds:.2f} pages/s, {evidences / seconds:.1f} evidences/s); "
            f"{counts['vectors_embedded']} texts embedded, {counts['vectors_cached']} from the cache; "
            f"{counts['failed']} failed"
        )
        p1, questions = p_at_1(env.index, embedder.inner, args.qa)
        results["p_at_1"] = {"synced": round(p1, 4), "questions": questions}
        print(f"retrieval P@1 on the synced index ({questions} dev questions, completed, en): {p1:.3f}")
        if args.compare_files:
            files_index = EvidenceIndex(directory=data_dir / "files-index", embedder=embedder.inner)
            index_pages(files_index, load_pages(args.docs)[0])
            p1_files, _ = p_at_1(files_index, embedder.inner, args.qa)
            results["p_at_1"]["from_files"] = round(p1_files, 4)
            print(
                f"retrieval P@1 with the same pages indexed from the files (as `threadwise eval`): {p1_files:.3f}"
            )

        # 2. nothing changed
        texts_before = embedder.texts
        seconds, reports = timed_sync(env)
        fetched = fetched_pages(fake)
        results["no_change"] = {
            "seconds": round(seconds, 3),
            "pages_fetched": len(fetched),
            "texts_embedded": embedder.texts - texts_before,
            **totals(reports),
        }
        print(
            f"incremental, nothing changed: {seconds:.2f}s; {len(fetched)} pages fetched, "
            f"{embedder.texts - texts_before} texts embedded"
        )

        # 3. one page edited
        edited = sorted(fake.pages)[0]
        fake.edit_page(edited, body=fake.pages[edited].body + "<p>Edited by the sync benchmark.</p>")
        pages_before = env.index.embedded_pages
        seconds, reports = timed_sync(env)
        fetched = fetched_pages(fake)
        results["one_edit"] = {
            "seconds": round(seconds, 3),
            "edited": edited,
            "pages_fetched": fetched,
            "pages_embedded": env.index.embedded_pages - pages_before,
            **totals(reports),
        }
        print(
            f"one page edited ({edited}): {seconds:.2f}s; fetched {fetched}, "
            f"{env.index.embedded_pages - pages_before} page(s) re-written, "
            f"{results['one_edit']['vectors_embedded']} of its {results['one_edit']['vectors_evidences']} "
            "evidences embedded (the rest from the cache)"
        )

        # 4. 20% of requests fail
        expected = (len(env.index.page_states()), env.index.count())
        fake.faults.error_rate, fake.faults.retry_after = 0.2, "1"
        target = env
        if args.fault_run == "fresh":
            fresh_dir = Path(tempfile.mkdtemp(prefix="sync-bench-faults-"))
            target = make_env(fresh_dir, fake.url, embedder=embedder, cloud=cloud, **CLIENT)
            for key in fake.spaces():
                target.admin.add_space(key)
        statuses: Counter[int] = Counter()
        seconds, reports = timed_sync(target, full=True)
        statuses.update(r.status for r in fake.requests)
        fetched = fetched_pages(fake)
        per_page = Counter(fetched)
        counts = totals(reports)
        results["faults"] = {
            "mode": args.fault_run,
            "seconds": round(seconds, 2),
            "responses": dict(sorted(statuses.items())),
            "expected_pages_evidences": list(expected),
            "pages_indexed": len(target.index.page_states()),
            "evidences": target.index.count(),
            "pages_missing": sorted(set(fake.pages) - set(per_page)),
            "pages_fetched_twice": sorted(p for p, n in per_page.items() if n > 1),
            **counts,
        }
        print(
            f"20% faults ({args.fault_run}): {seconds:.1f}s; responses {dict(sorted(statuses.items()))}; "
            f"{len(target.index.page_states())} pages / {target.index.count()} evidences indexed "
            f"(before: {expected[0]} / {expected[1]}); {counts['failed']} failed; "
            f"missing {results['faults']['pages_missing']}; fetched twice {results['faults']['pages_fetched_twice']}"
        )

    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
