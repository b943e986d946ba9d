"""Settings from the environment and an optional TOML config file; read once, by the composition root.

The config file (`--config FILE` or THREADWISE_CONFIG) is a flat TOML table using the same names as the
environment, e.g. `SLACK_BOT_TOKEN = "xoxb-…"`; the environment wins over the file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from threadwise.errors import ConfigError


def default_data_dir(env: Mapping[str, str]) -> Path:
    """Per-user data folder: $XDG_DATA_HOME/threadwise or ~/.local/share/threadwise."""
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "threadwise"


DRAIN_SECONDS = (
    15  # `serve` on SIGTERM: the answers in progress get this long unless THREADWISE_DRAIN_SECONDS
)


@dataclass(frozen=True)
class Settings:
    env: Mapping[str, str] = field(repr=False)  # the merged variables (file, then environment)
    data_dir: Path
    database_url: str
    embedder: str  # retrieval: e5 | use | minilm | bge-m3 | hashing
    embedder_model: str | None  # BGE-M3 hub id or local directory
    # comparing texts (Explain's clusters and answer changes, the extractive answerer); None: the retrieval
    # embedder if it is symmetric, else USE (decided by the composition root, which knows the model)
    similarity_embedder: str | None
    reranker_model: str | None  # bge-reranker hub id or local directory; None: no re-ranking
    top_k: int
    permissions: str = (
        "open-pages"  # THREADWISE_PERMISSIONS: open-pages | per-user | off (`permissions_policy`)
    )
    # the gap report (`threadwise report`): a page not modified for longer than this is stale
    # (THREADWISE_STALE_AFTER_DAYS), and whether it names who asked (THREADWISE_REPORT_SHOWS_ASKERS, off)
    stale_after_days: int = 730
    report_shows_askers: bool = False
    # `serve` on SIGTERM: how long the answers in progress may finish before the rest is left to another replica
    # (THREADWISE_DRAIN_SECONDS); the orchestrator's grace period must exceed it plus 10 s (docs/operations.md)
    drain_seconds: int = DRAIN_SECONDS

    def get(self, name: str, default: str = "") -> str:
        return self.env.get(name, default)

    def flag(self, name: str, default: bool) -> bool:
        return env_flag(self.env, name, default)


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def env_flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """The one reading of a yes/no setting: unset or empty gives `default`; 1/true/yes/on and 0/false/no/off
    in any case; anything else is refused with the variable's name (a typo must not flip a setting)."""
    value = env.get(name, "").strip().lower()
    if not value:
        return default
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise ValueError(
        f"{name}={env[name]!r} is not a yes/no value: use one of {', '.join(TRUE_WORDS + FALSE_WORDS)}"
    )


def env_list(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """The one reading of a comma-separated setting: items stripped, empty ones dropped."""
    return tuple(item.strip() for item in env.get(name, "").split(",") if item.strip())


PERMISSION_POLICIES = ("open-pages", "per-user", "off")


def permissions_policy(env: Mapping[str, str]) -> str:
    """THREADWISE_PERMISSIONS: `open-pages` (the default: pages with a read restriction on themselves or an
    ancestor are never indexed), `per-user` (every page is indexed with its readers; each asker gets what
    Confluence lets them read, a channel what everyone there may) or `off` (every page, for everyone: for a
    wiki that is entirely public)."""
    value = env.get("THREADWISE_PERMISSIONS", "").strip().lower() or "open-pages"
    if value not in PERMISSION_POLICIES:
        raise ConfigError(
            f"THREADWISE_PERMISSIONS={env['THREADWISE_PERMISSIONS']!r} is not a policy: use "
            f"{', '.join(PERMISSION_POLICIES)}"
        )
    return value


def load_settings(
    *, env: Mapping[str, str] | None = None, config_file: Path | None = None, data_dir: Path | None = None
) -> Settings:
    environ = dict(os.environ if env is None else env)
    merged: dict[str, str] = {}
    path = config_file or (Path(environ["THREADWISE_CONFIG"]) if environ.get("THREADWISE_CONFIG") else None)
    if path is not None:
        merged.update(read_config_file(path))
    merged.update(environ)
    folder = data_dir or (Path(merged["THREADWISE_DATA_DIR"]) if merged.get("THREADWISE_DATA_DIR") else None)
    folder = (folder or default_data_dir(merged)).expanduser()
    embedder_model = merged.get("THREADWISE_EMBEDDER_MODEL") or None
    embedder = merged.get("THREADWISE_EMBEDDER") or ("bge-m3" if embedder_model else "e5")
    return Settings(
        env=merged,
        data_dir=folder,
        database_url=merged.get("THREADWISE_DATABASE_URL") or f"sqlite:///{folder / 'threadwise.sqlite'}",
        embedder=embedder,
        embedder_model=embedder_model,
        similarity_embedder=merged.get("THREADWISE_SIMILARITY_EMBEDDER") or None,
        reranker_model=merged.get("THREADWISE_RERANKER_MODEL") or None,
        top_k=_int(merged, "THREADWISE_TOP_K", 10),
        permissions=permissions_policy(merged),
        stale_after_days=_int(merged, "THREADWISE_STALE_AFTER_DAYS", 730),
        report_shows_askers=env_flag(merged, "THREADWISE_REPORT_SHOWS_ASKERS", False),
        drain_seconds=_seconds(merged, "THREADWISE_DRAIN_SECONDS", DRAIN_SECONDS),
    )


def read_config_file(path: Path) -> dict[str, str]:
    """The flat TOML table in `path`; a ConfigError that names the file when it cannot be used."""
    where = "set by --config or THREADWISE_CONFIG"
    try:
        with path.open("rb") as fh:
            table = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist ({where})") from None
    except OSError as err:
        raise ConfigError(f"config file {path} cannot be read: {err.strerror} ({where})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(
            f"config file {path} is not valid TOML: {err}. It is a flat table of the same names as the "
            'environment variables, e.g. SLACK_BOT_TOKEN = "xoxb-…" (strings in quotes)'
        ) from None
    nested = [key for key, value in table.items() if isinstance(value, dict | list)]
    if nested:
        raise ConfigError(
            f"config file {path}: {', '.join(nested)} must be plain values (a flat table, no sections or lists)"
        )
    return {key: str(value) for key, value in table.items()}


def _seconds(env: Mapping[str, str], name: str, default: int) -> int:
    value = _int(env, name, default)
    if value < 0:
        raise ConfigError(f"{name}={value} is a negative number of seconds")
    return value


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not a whole number") from None
