"""The independent fakes in `../shared/fakes/` (beside this checkout): servers for Slack, Confluence (Data
Center and Cloud), the Bot Framework connector and an OpenAI-shaped inference server, written from the
vendors' documentation by another hand. End-to-end tests run against them as well as against our own fakes
in tests/support/; where the two disagree, the vendor's documentation decides.

`load("fake_slack")` imports one of them under a name of its own (so it never shadows ours);
`SHARED_FAKES_MISSING` says why they cannot be used (a clone elsewhere, without `../shared`), or is None.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

FAKES_DIR = Path(
    os.environ.get("THREADWISE_SHARED_FAKES", Path(__file__).resolve().parents[2].parent / "shared" / "fakes")
)
NAMES = ("fake_slack", "fake_confluence", "fake_teams", "fake_inference")

SHARED_FAKES_MISSING: str | None = (
    None
    if all((FAKES_DIR / f"{name}.py").is_file() for name in NAMES)
    else f"the independent vendor fakes are not here ({FAKES_DIR} is missing; they sit in ../shared/fakes beside "
    "the project's checkout)"
)


def load(name: str) -> ModuleType:
    """Import `../shared/fakes/<name>.py` once, as `shared_fakes_<name>`."""
    if name not in NAMES:
        raise ValueError(f"no shared fake called {name!r}; there are {', '.join(NAMES)}")
    if SHARED_FAKES_MISSING:
        raise RuntimeError(SHARED_FAKES_MISSING)
    qualified = f"shared_fakes_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, FAKES_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module
