"""kill -9 matrix: `threadwise index --docs` and `threadwise sync` killed at several points of a run.

Each case starts from an index of version 1 of a small wiki (ConfQuestions pages, the hashing embedder), runs
the command that brings version 2 (every page edited), and sends SIGKILL when the run reaches its kill point:
- `start`: its run is recorded, no page switched yet;
- `first`: the first page switched to version 2;
- `half`: half of the pages switched;
- `last`: every page switched (the kill lands in the sweep, BM25's update or the run's record; if the process
  finished first, the table says so).
Then it checks, from another process's view of the folder: every page is at version 1 or 2 with all rows of
that version in Chroma (never half a page), questions are answered, and `status` calls the run interrupted.
The same command run again must exit 0 and leave every page at version 2, no leftover rows, status ok, and
BM25 scores equal to those of a clean index of version 2 built in a fresh folder (within float error).

    .venv/bin/python bench/crash_matrix.py --pages 24
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.cli import threadwise_cli  # noqa: E402
from tests.support.fake_confluence import FakeConfluence  # noqa: E402
from threadwise.connectors.files import load_pages  # noqa: E402
from threadwise.db.base import make_engine, make_sessions  # noqa: E402
from threadwise.index.manifest import IndexManifest  # noqa: E402
from threadwise.index.store import EvidenceIndex  # noqa: E402
from threadwise.models.embedders import HashingEmbedder  # noqa: E402
from threadwise.sync.store import SyncStore  # noqa: E402

SHARED = ROOT.parent / "shared" / "confquestions"
POINTS = ("start", "first", "half", "last")
QUERIES = ["How do I build OpenXT?", "What is the release schedule?", "Which TPM version is required?"]


@dataclass
class Case:
    command: str
    point: str
    killed_at: str = ""  # pages at version 2 when the kill was sent, or "finished first"
    consistent: bool = False
    answered: bool = False
    status_after_kill: str = ""
    rerun_exit: int = -1
    rerun_s: float = 0.0
    all_current: bool = False
    no_leftovers: bool = False
    status_after_rerun: str = ""
    bm25_equal: bool = False


def write_folder(pages: list[Any], folder: Path, version: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for p in pages:
        body = p.body if version == 1 else p.body + f"<p>Version {version} of {p.title}: revised.</p>"
        data = {
            "id": p.id,
            "title": p.title,
            "url": p.url,
            "space": p.space,
            "content": body,
            "version": version,
        }
        (folder / f"{p.id}.json").write_text(json.dumps(data, ensure_ascii=False))


_ENGINES: dict[Path, Any] = {}


def manifest_of(data_dir: Path) -> IndexManifest:
    """The index manifest as the CLI keeps it: in the data folder's state database."""
    if data_dir not in _ENGINES:
        _ENGINES[data_dir] = make_engine(f"sqlite:///{data_dir / 'threadwise.sqlite'}")
    return IndexManifest(engine=_ENGINES[data_dir], collection="evidence")


def open_index(data_dir: Path) -> EvidenceIndex:
    """Another process's view of the index (as `serve` would have it)."""
    return EvidenceIndex(
        directory=data_dir / "index", embedder=HashingEmbedder(), manifest=manifest_of(data_dir)
    )


def versions(data_dir: Path) -> dict[str, int]:
    """Each indexed page's version, read from the manifest without taking the index's write lock."""
    return {s.page_id: s.version for batch in manifest_of(data_dir).states() for s in batch}


def runs_of(data_dir: Path) -> list[Any]:
    """The run history in the data folder's state database (every sync and index --docs run)."""
    manifest_of(data_dir)
    return SyncStore(sessions=make_sessions(_ENGINES[data_dir])).runs(limit=100)


def run_status(env: dict[str, str]) -> list[dict[str, Any]]:
    done = threadwise_cli(env, "status", "--json")
    return json.loads(done.stdout) if done.returncode == 0 else []


def run_killed(
    env: dict[str, str], args: list[str], reached: Callable[[], bool], timeout_s: float
) -> tuple[bool, int]:
    """Start the command, SIGKILL it once `reached()`; returns whether it was killed and pages at version 2."""
    data_dir = Path(env["THREADWISE_DATA_DIR"])
    proc = subprocess.Popen(
        [sys.executable, "-m", "threadwise", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout_s
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if reached():
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(30)
                return True, sum(v == 2 for v in versions(data_dir).values())
            time.sleep(0.02)
        return False, sum(v == 2 for v in versions(data_dir).values())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def check_consistent(data_dir: Path) -> tuple[bool, bool]:
    """Every indexed page has all rows of its active version in Chroma; questions get lexical hits."""
    index = open_index(data_dir)
    complete = True
    for pid, state in index.page_states().items():
        rows = index.chroma.get(where={"$and": [{"page_id": pid}, {"page_hash": state.content_hash}]})
        complete &= len(rows) == state.evidence_count
    answered = all(index.search_lexical(q, 5) for q in QUERIES)
    return complete, answered


def lexical_scores(data_dir: Path) -> list[list[tuple[str, float]]]:
    index = open_index(data_dir)
    return [[(h.evidence.id, round(h.score, 4)) for h in index.search_lexical(q, 10)] for q in QUERIES]


def last_status(entries: list[dict[str, Any]], folder: Path | None) -> str:
    """The killed run's status: the folder's (index --docs), or each space's last sync counted (sync)."""
    if folder is not None:
        runs = [e["last_run"]["status"] for e in entries if e.get("folder") == str(folder.resolve())]
        return runs[0] if runs else "none"
    counts = Counter(
        e["last_run"]["status"] for e in entries if e.get("kind") == "space" and e.get("last_run")
    )
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=SHARED / "documents")
    ap.add_argument("--pages", type=int, default=24, help="the first N ConfQuestions pages (bounded)")
    ap.add_argument("--timeout", type=float, default=240, help="seconds one killed run may take at most")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    pages = load_pages(args.docs)[0][: args.pages]
    work = Path(tempfile.mkdtemp(prefix="crash-matrix-"))
    base_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "CONFLUENCE_", "SLACK_"))
    }
    base_env["THREADWISE_EMBEDDER"] = "hashing"
    write_folder(pages, work / "v1", 1)
    write_folder(pages, work / "v2", 2)
    total = len(pages)
    targets: dict[str, Callable[[int], bool]] = {
        "first": lambda n: n >= 1,
        "half": lambda n: n >= total // 2,
        "last": lambda n: n >= total,
    }

    clean: dict[str, list[list[tuple[str, float]]]] = {}  # BM25 scores after a clean run, per command

    cases: list[Case] = []
    with FakeConfluence.from_folder(work / "v1", context_path="/confluence") as fake:
        spaces = sorted({p.space for p in pages})
        for command in ("index", "sync"):
            for point in POINTS:
                case = Case(command, point)
                data_dir = work / f"{command}-{point}"
                env = {**base_env, "THREADWISE_DATA_DIR": str(data_dir)}
                if command == "sync":
                    env |= {"CONFLUENCE_URL": fake.url, "CONFLUENCE_PERSONAL_TOKEN": "pat-secret"}
                    for pid, page in fake.pages.items():  # back to version 1 for this case
                        page.body, page.version = next(p.body for p in pages if p.id == pid), 1
                    for key in spaces:
                        assert threadwise_cli(env, "spaces", "add", key).returncode == 0
                    assert threadwise_cli(env, "sync").returncode == 0
                    for p in pages:  # version 2 in Confluence
                        fake.edit_page(p.id, body=p.body + f"<p>Version 2 of {p.title}: revised.</p>")
                    run = ["sync"]
                else:
                    assert threadwise_cli(env, "index", "--docs", str(work / "v1")).returncode == 0
                    run = ["index", "--docs", str(work / "v2")]

                runs_before = len(runs_of(data_dir))

                def reached(point: str = point, data_dir: Path = data_dir, before: int = runs_before) -> bool:
                    if point == "start":  # its run is recorded
                        return len(runs_of(data_dir)) > before
                    return targets[point](sum(v == 2 for v in versions(data_dir).values()))

                killed, at = run_killed(env, run, reached, args.timeout)
                case.killed_at = f"{at}/{total}" if killed else "finished first"
                case.consistent, case.answered = check_consistent(data_dir)
                folder = work / "v2" if command == "index" else None
                case.status_after_kill = last_status(run_status(env), folder)
                t = time.perf_counter()
                case.rerun_exit = threadwise_cli(env, *run).returncode
                case.rerun_s = round(time.perf_counter() - t, 1)
                now = versions(data_dir)
                case.all_current = len(now) == total and all(v == 2 for v in now.values())
                index = open_index(data_dir)
                case.no_leftovers = index.chroma.count() == index.count()
                case.status_after_rerun = last_status(run_status(env), folder)
                if command not in clean:  # a clean run of the same command into a fresh folder
                    clean_env = {**env, "THREADWISE_DATA_DIR": str(work / f"clean-{command}")}
                    for key in spaces if command == "sync" else ():
                        assert threadwise_cli(clean_env, "spaces", "add", key).returncode == 0
                    assert threadwise_cli(clean_env, *run).returncode == 0
                    clean[command] = lexical_scores(work / f"clean-{command}")
                case.bm25_equal = lexical_scores(data_dir) == clean[command]
                cases.append(case)
                print(json.dumps(case.__dict__), flush=True)
                _ENGINES.pop(data_dir).dispose()
                shutil.rmtree(data_dir, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    print(
        "\n| command | kill point | killed at (pages at v2) | consistent | answers | status after kill "
        "| rerun exit / s | all current, no leftovers | status after rerun | BM25 = clean |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in cases:
        print(
            f"| {c.command} | {c.point} | {c.killed_at} | {c.consistent} | {c.answered} | {c.status_after_kill} "
            f"| {c.rerun_exit} / {c.rerun_s} | {c.all_current and c.no_leftovers} | {c.status_after_rerun} "
            f"| {c.bm25_equal} |"
        )
    if args.json:
        args.json.write_text(json.dumps([c.__dict__ for c in cases], indent=2))


if __name__ == "__main__":
    main()
