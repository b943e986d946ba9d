"""`python -m threadwise …` in a fresh process, as an admin or a script runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def threadwise_cli(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the CLI with exactly `env`; its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "threadwise", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
