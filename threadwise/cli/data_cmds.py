"""`threadwise purge` and `threadwise forget-user USER`: what is stored about conversations, kept no longer than
THREADWISE_RETENTION_DAYS and removed for one person on request (`serve`'s scheduler purges once a day by itself)."""

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
