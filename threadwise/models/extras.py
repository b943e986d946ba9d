"""Optional model libraries: torch, FlagEmbedding and sentence-transformers come with the `[bge]` extra, not
the default install (the offline default never imports them)."""

from __future__ import annotations

import importlib
from typing import Any

from threadwise.errors import ConfigError

BGE_EXTRA = "pip install 'threadwise[bge]'"


def import_extra(module: str, *, what: str) -> Any:
    """Import `module` of the [bge] extra; a ConfigError naming the install command when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ConfigError(
            f"{what} needs torch and {module.split('.')[0]} (missing: {err.name}), which the default install "
            f"leaves out: {BGE_EXTRA}"
        ) from err
