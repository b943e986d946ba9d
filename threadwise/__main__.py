"""`python -m threadwise …` runs the CLI, with its exit code."""

from threadwise.cli import run

raise SystemExit(run())
