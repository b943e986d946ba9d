"""`python -m threadwise …` in a fresh process, as an admin or a script runs it.

`threadwise_cli_batch` runs several commands one after another in one fresh process (`python -m
tests.support.cli COMMANDS_JSON RESULTS_FILE`), each through `threadwise.cli.main` with its own stdout, stderr,
logging and exit code: for tests of what commands print and store, where a process start (about two seconds of
imports) per command buys nothing. A test of the process itself (signals, pipes, tracebacks reaching the
terminal) runs `threadwise_cli`.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def threadwise_cli(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the CLI with exactly `env`; its output captured as text."""
    return _python(env, "-m", "threadwise", *args, timeout=timeout)


def _python(env: dict[str, str], *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def threadwise_cli_batch(
    env: dict[str, str], *commands: Sequence[str], timeout: float = 300
) -> list[subprocess.CompletedProcess[str]]:
    """Run each of `commands` (argument lists), in order, in one fresh process with exactly `env`; each one's
    exit code and output, as `threadwise_cli` gives them."""
    with tempfile.TemporaryDirectory() as folder:
        results = Path(folder) / "results.json"
        batch = json.dumps([list(c) for c in commands])
        done = _python(env, "-m", "tests.support.cli", batch, str(results), timeout=timeout)
        assert done.returncode == 0 and results.exists(), done.stdout + done.stderr
        return [
            subprocess.CompletedProcess(
                [sys.executable, "-m", "threadwise", *r["args"]], r["returncode"], r["stdout"], r["stderr"]
            )
            for r in json.loads(results.read_text())
        ]


def _run_each(commands: list[list[str]]) -> list[dict[str, object]]:
    from threadwise.cli import main

    results: list[dict[str, object]] = []
    for args in commands:
        out, err = io.StringIO(), io.StringIO()
        logging.root.handlers.clear()  # each command sets up its own log handler, on its own stderr
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else 1
            except Exception:
                traceback.print_exc()  # as the interpreter would print it, and exit 1
                code = 1
        results.append({"args": args, "returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
    return results


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(json.dumps(_run_each(json.loads(sys.argv[1]))))
