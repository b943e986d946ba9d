"""Many `python -m threadwise …` runs without paying Python's start-up and the heavy imports (chromadb, sklearn,
SQLAlchemy, …) for each: this script imports them once, then forks one process per command, which sets its own
environment, working folder and stdin/stdout/stderr files and runs the `threadwise` package as `__main__`,
exactly as `python -m threadwise` does (the interpreter's own exit: its code, an uncaught traceback, the
threads joined, atexit). Each command is still a process of its own, with its own data folder and exit code.

    python tests/support/cli_forks.py JOBS.json WORKERS

A job is {"argv", "env", "cwd", "stdin", "stdout", "stderr"} (the last three: file paths). JOBS.json is a list
of them, run WORKERS at a time; the script prints their exit codes as one JSON list (a process killed by a
signal: minus the signal; one still running after LIMIT_S is killed)."""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import time

# What `chat`, `ask`, `index`, `status`, `report` and `doctor` import when they run; a name that is no longer
# there only costs its child the import.
PREIMPORT = (
    "threadwise.cli",
    "threadwise.wiring",
    "threadwise.chat.conversations",
    "threadwise.chat.trace_render",
    "threadwise.chat.turn_views",
    "threadwise.core.attribute.attribution",
    "threadwise.core.pipeline",
    "threadwise.index.store",
    "threadwise.index.chroma_store",
    "threadwise.index.indexer",
    "threadwise.db.schema",
    "threadwise.sync.store",
    "chromadb",
    "sklearn",
)


LIMIT_S = 240  # one command's time at most (the batch's); as subprocess.run's timeout for a fresh process
started: dict[int, float] = {}  # job index -> when its process was forked


def preimport() -> None:
    for name in PREIMPORT:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # a fork copies only the forking thread: a thread started by an import could leave a lock held in the child
    assert threading.active_count() == 1, threading.enumerate()


def child(job: dict[str, object]) -> None:
    """Become `python -m threadwise *argv` (returns only by raising SystemExit, like the real thing)."""
    import runpy

    os.chdir(str(job["cwd"]))
    env = job["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    for fd, key, flags in (
        (0, "stdin", os.O_RDONLY),
        (1, "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(str(job[key]), flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    # fresh text streams on the new descriptors, as the interpreter makes them for a file or pipe
    streams = {
        "stdin": open(0, encoding="utf-8", closefd=False),  # noqa: SIM115
        "stdout": open(1, "w", encoding="utf-8", closefd=False),  # noqa: SIM115
        "stderr": open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False),  # noqa: SIM115
    }
    for name, stream in streams.items():
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    argv = job["argv"]
    assert isinstance(argv, list)
    sys.argv = ["threadwise", *map(str, argv)]
    runpy.run_module("threadwise", run_name="__main__", alter_sys=True)
    raise SystemExit(0)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        jobs = json.load(fh)
    workers = int(sys.argv[2])
    preimport()
    sys.stdout.flush()
    sys.stderr.flush()
    codes: list[int | None] = [None] * len(jobs)
    running: dict[int, int] = {}
    for i, job in enumerate(jobs):
        while len(running) >= workers:
            reap(running, codes)
        started[i] = time.monotonic()
        pid = os.fork()
        if pid == 0:
            child(job)  # no try/finally above: the child's SystemExit ends it as the interpreter would
        running[pid] = i
    while running:
        reap(running, codes)
    print(json.dumps(codes))


def reap(running: dict[int, int], codes: list[int | None]) -> None:
    """Wait for one of the `running` processes to end; one running longer than LIMIT_S is killed (SIGKILL)."""
    while True:
        for pid, i in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
                return
            if time.monotonic() - started[i] > LIMIT_S:
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


if __name__ == "__main__":
    main()
