"""What `threadwise doctor` reports, for every front end and back end: one check per thing that must work.

Each check is a callable that returns a one-line description of what works or raises with what does not;
the Slack and Teams front ends and the composition root hand theirs in, and `render` prints them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from threadwise.redact import redact_credentials


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str  # what works, or exactly what is wrong and how to fix it
    skipped: bool = False
    warning: bool = False  # works, but the admin should know (e.g. THREADWISE_PERMISSIONS=off)


def run_check(name: str, check: Callable[[], str]) -> Check:
    """Run one check; its exception's message becomes the diagnosis."""
    try:
        return Check(name, True, check())
    except Exception as err:  # a check's failure is the result, not a crash
        message = str(err) or type(err).__name__
        return Check(name, False, message)


def render(checks: Iterable[Check]) -> str:
    """One line per check: ✔ / ✘ / ! (a warning) / – name: detail (credentials inside URLs, e.g. in
    CONFLUENCE_URL, as ***)."""
    lines = []
    for c in checks:
        mark = "–" if c.skipped else ("✘" if not c.ok else ("!" if c.warning else "✔"))
        lines.append(f"{mark} {c.name}: {redact_credentials(c.detail)}")
    return "\n".join(lines)


def all_ok(checks: Iterable[Check]) -> bool:
    return all(c.ok or c.skipped for c in checks)
