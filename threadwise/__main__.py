"""`python -m threadwise …` runs the CLI, with its exit code."""

from threadwise.cli import main

raise SystemExit(main())
