"""CLI start-up and end-to-end times, each command in a fresh process as a user runs it.

    python bench/cli_bench.py [--runs 5] [--embedder e5]

- `threadwise --help`
- `threadwise status` on an empty data folder
- `threadwise ask QUESTION` on a warm index: the sample wiki indexed by a first ask (not timed), then each run is
  a new process that loads the models, retrieves and answers

Prints wall time and CPU time (user + system of the child) per command: median, min and max over the runs.
Targets (issue 11): --help and status <= 1 s, ask <= 3 s, on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "What is Alice's action item from the October 14 meeting?"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one `python -m threadwise ARGV` process; fails loudly on an error."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "threadwise", *argv], env=env, cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"threadwise {' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def report(name: str, samples: list[tuple[float, float]], target: float) -> None:
    walls, cpus = [w for w, _ in samples], [c for _, c in samples]
    print(
        f"{name:<28} wall median {statistics.median(walls):5.2f} s (min {min(walls):.2f}, max {max(walls):.2f})"
        f"   CPU median {statistics.median(cpus):5.2f} s   target <= {target:g} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--embedder", default="", help="THREADWISE_EMBEDDER for ask (default: the default, E5)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "CONFLUENCE_", "SLACK_"))
        }
        env = {k: v for k, v in env.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_", "TEAMS_"))}
        env.update(THREADWISE_DATA_DIR=str(Path(tmp) / "empty"), PYTHONPATH=str(ROOT))
        report("threadwise --help", [timed(["--help"], env) for _ in range(args.runs)], 1.0)
        report("threadwise status (empty)", [timed(["status"], env) for _ in range(args.runs)], 1.0)
        env["THREADWISE_DATA_DIR"] = str(Path(tmp) / "warm")
        if args.embedder:
            env["THREADWISE_EMBEDDER"] = args.embedder
        first = timed(["ask", QUESTION], env)  # indexes the sample wiki
        print(f"{'ask, first (indexes)':<28} wall {first[0]:5.2f} s   CPU {first[1]:5.2f} s")
        report("threadwise ask (warm index)", [timed(["ask", QUESTION], env) for _ in range(args.runs)], 3.0)
        print(f"({os.cpu_count()} cores; load average {', '.join(f'{x:.1f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
