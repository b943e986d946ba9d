"""`threadwise purge` and `threadwise forget-user USER`: what is stored about conversations, kept no longer than
THREADWISE_RETENTION_DAYS and removed for one person on request (`serve` purges once a day by itself)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from threadwise.wiring import Threadwise

Build = Callable[[], Threadwise]


def register(subparsers: Any, build: Build) -> None:
    p = subparsers.add_parser(
        "purge",
        help="remove conversations, answers, traces, votes and explanations past the retention period",
    )
    p.add_argument(
        "--days", type=int, help="this many days instead of THREADWISE_RETENTION_DAYS (default 90)"
    )
    p.set_defaults(func=lambda args: _purge(build(), args))
    p = subparsers.add_parser(
        "forget-user",
        help="remove one user's questions, answers, votes, comments and the threads they started",
    )
    p.add_argument("user", help="the user id (Slack: U…; Teams: the AAD object id; the CLI: your login)")
    p.set_defaults(func=lambda args: _forget(build(), args))


def _purge(tw: Threadwise, args: argparse.Namespace) -> int:
    from threadwise.db.retention import purge_older_than, retention_days

    days = args.days if args.days is not None else retention_days(tw.settings.env)
    if days <= 0:
        print("Retention is 0 days: everything is kept (set THREADWISE_RETENTION_DAYS, or --days).")
        return 0
    print(f"Removed what was older than {days} days: {purge_older_than(tw.sessions, days)}.")
    return 0


def _forget(tw: Threadwise, args: argparse.Namespace) -> int:
    from threadwise.db.retention import forget_user

    print(f"Removed for {args.user}: {forget_user(tw.sessions, args.user)}.")
    return 0


def start_daily_purge(tw: Threadwise) -> None:
    """In `serve`: purge past the retention period now and then once a day (a daemon thread; errors logged)."""
    import logging
    import threading

    from threadwise.db.retention import purge_older_than, retention_days

    days = retention_days(tw.settings.env)
    if days <= 0:
        return
    log = logging.getLogger(__name__)

    def loop() -> None:
        while True:
            try:
                log.info("retention: removed %s", purge_older_than(tw.sessions, days))
            except Exception as err:  # a locked or unreachable database: try again tomorrow
                log.warning("retention purge failed: %s", err)
            threading.Event().wait(24 * 3600)

    threading.Thread(target=loop, name="threadwise-retention", daemon=True).start()
