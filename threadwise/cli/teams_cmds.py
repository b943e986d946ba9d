"""`threadwise teams package [--out FILE]`: the Teams app package to upload in Teams (Apps → Manage your apps)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from threadwise.wiring import Threadwise

Build = Callable[[], Threadwise]


def register(subparsers: Any, build: Build) -> None:
    p = subparsers.add_parser("teams", help="Microsoft Teams: write the app package")
    sub = p.add_subparsers(dest="teams_command", required=True, metavar="COMMAND")
    pkg = sub.add_parser("package", help="write the Teams app package (manifest.json and icons) as a zip")
    pkg.add_argument("--out", type=Path, default=Path("threadwise-teams.zip"), help="the zip to write")
    pkg.add_argument(
        "--domain",
        action="append",
        default=[],
        metavar="HOST",
        help="the bot's public host (its messaging endpoint); env THREADWISE_TEAMS_DOMAIN; repeatable",
    )
    pkg.set_defaults(func=lambda args: _package(build(), args))


def _package(tw: Threadwise, args: argparse.Namespace) -> int:
    from threadwise.teams.package import domain_of, package

    settings = tw.front_ends.teams_settings
    hosts = [*args.domain, *tw.settings.get("THREADWISE_TEAMS_DOMAIN").split(",")]
    confluence = tw.settings.get("CONFLUENCE_URL")
    domains = [domain_of(h) for h in [*hosts, confluence] if h.strip()]
    data = package(bot_id=settings.client_id, domains=domains)
    args.out.write_bytes(data)
    print(
        f"Wrote {args.out} ({len(data)} bytes) for bot {settings.client_id}; valid domains: {', '.join(domains) or 'none'}."
    )
    print("Upload it in Teams: Apps → Manage your apps → Upload an app → Upload a custom app.")
    return 0
