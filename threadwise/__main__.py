"""`python -m threadwise …` runs the CLI."""

from threadwise.cli import main

raise SystemExit(main())
