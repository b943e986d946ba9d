"""`threadwise spaces|sync|status`: the admin commands, a thin layer over `AdminService`.

`register(subparsers, build)` adds them to the main parser; each sets `func(args) -> exit code`. `build()` is
the composition root's factory: it returns an object whose `admin` attribute is the AdminService.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from threadwise.cli.errors import print_error
from threadwise.errors import ThreadwiseError

if TYPE_CHECKING:
    from threadwise.sync.admin import AdminService, FolderStatus, RunSummary, SpaceStatus
    from threadwise.sync.permission_sync import PermissionReport
    from threadwise.sync.sync import SyncReport


class HasAdmin(Protocol):
    admin: AdminService


Build = Callable[[], HasAdmin]


def register(subparsers: Any, build: Build) -> None:
    def command(
        handler: Callable[[AdminService, argparse.Namespace], int],
    ) -> Callable[[argparse.Namespace], int]:
        def run(args: argparse.Namespace) -> int:
            try:
                return handler(build().admin, args)
            except ThreadwiseError as e:  # refused (unknown space, …), or Confluence unusable
                return print_error(str(e), e.exit_code)

        return run

    spaces = subparsers.add_parser("spaces", help="which Confluence spaces are synced")
    actions = spaces.add_subparsers(dest="spaces_action", required=True)
    p = actions.add_parser("list", help="the configured spaces (--available: those Confluence offers)")
    p.add_argument(
        "--available", action="store_true", help="list the spaces the Confluence credentials can see"
    )
    p.set_defaults(func=command(_spaces_list))
    p = actions.add_parser("add", help="sync a space (checked against Confluence)")
    p.add_argument("key", help="space key, e.g. DOCS or ~jsmith")
    p.add_argument("--parent", metavar="ID", help="only this page and the pages under it")
    p.add_argument(
        "--exclude-label", metavar="L", action="append", default=[], help="skip pages with this label"
    )
    p.add_argument(
        "--everyone-may-view",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="declare that everyone with access to the bot may view this space: under "
        "THREADWISE_PERMISSIONS=per-user its unrestricted pages may answer in channels",
    )
    p.set_defaults(func=command(_spaces_add))
    p = actions.add_parser("remove", help="stop syncing a space and purge its evidence")
    p.add_argument("key")
    p.set_defaults(func=command(_spaces_remove))

    p = subparsers.add_parser("sync", help="sync one space or all configured spaces now")
    p.add_argument("key", nargs="?", help="space key (default: all configured spaces)")
    p.add_argument("--full", action="store_true", help="fetch every page, not only what changed")
    p.add_argument(
        "--permissions",
        action="store_true",
        help="re-read restrictions, space permissions and group members only, and apply them (nothing "
        "is fetched or embedded)",
    )
    p.set_defaults(func=command(_sync), exit_at_once=True)

    p = subparsers.add_parser("status", help="per space: pages, evidences, last sync and its result")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=command(_status))


def _spaces_list(admin: AdminService, args: argparse.Namespace) -> int:
    if args.available:
        for info in admin.available_spaces():
            print(f"{info.key}\t{info.name}\t{info.type}")
        return 0
    configs = admin.list_spaces()
    if not configs:
        print("No spaces configured. Add one with: threadwise spaces add KEY")
    for c in configs:
        state = "" if c.enabled else "  (disabled)"
        view = "\teveryone may view" if c.everyone_may_view else ""
        print(f"{c.key}\t{c.name}\t{c.scope.describe()}{view}{state}")
    return 0


def _spaces_add(admin: AdminService, args: argparse.Namespace) -> int:
    config = admin.add_space(
        args.key,
        parent_id=args.parent,
        exclude_labels=args.exclude_label,
        everyone_may_view=args.everyone_may_view,
    )
    view = "; everyone with access to the bot may view it" if config.everyone_may_view else ""
    print(
        f"Added {config.scope.describe()} ({config.name}){view}. "
        f"Index it now with: threadwise sync {config.key}"
    )
    return 0


def _spaces_remove(admin: AdminService, args: argparse.Namespace) -> int:
    removed = admin.remove_space(args.key)
    print(f"Removed space {args.key}: {removed} pages purged from the index.")
    return 0


def _sync(admin: AdminService, args: argparse.Namespace) -> int:
    from threadwise.cli.progress import ProgressBar

    if args.permissions:
        return _print_reports(admin.sync_permissions(args.key), what="permission sync")
    reports = admin.sync(
        args.key,
        full=args.full,
        trigger="cli",
        progress=lambda space: ProgressBar(f"Syncing {space}"),
        on_wait=lambda who: print(
            f"A sync is running on {who}; this one starts when it has finished.", file=sys.stderr, flush=True
        ),
    )
    code = _print_reports(reports, what="sync")
    partial = [r.space for r in reports if r.status == "partial"]
    if not code and partial:  # a script (cron, CI) must see that some pages are not in the index
        return print_error(f"some pages of {', '.join(partial)} could not be synced (listed above)", 1)
    return code


def _print_reports(reports: Sequence[SyncReport | PermissionReport], *, what: str) -> int:
    """Print each space's report; 1 (and why) when a space's run did not finish."""
    if not reports:
        print("No spaces configured. Add one with: threadwise spaces add KEY")
    for report in reports:
        print(report.summary())
    failed = [r.space for r in reports if r.status in ("failed", "busy")]
    if failed:
        return print_error(f"the {what} of {', '.join(failed)} did not finish (see above)", 1)
    return 0


def _status(admin: AdminService, args: argparse.Namespace) -> int:
    statuses = admin.status()
    folders = admin.folder_status()
    if admin.confluence_problem:  # CONFLUENCE_URL is set, but Confluence is not usable yet (as doctor says)
        print(f"threadwise: note: {admin.confluence_problem}", file=sys.stderr)
    if args.json:  # spaces ("kind": "space"), then the folders indexed with index --docs ("kind": "folder")
        print(json.dumps([s.to_json() for s in statuses] + [f.to_json() for f in folders], indent=2))
        return 0
    if not statuses and not folders:
        print("Nothing indexed and no spaces configured. Add one with: threadwise spaces add KEY")
    for s in statuses:
        print(format_status(s))
    for f in folders:
        print(format_folder(f))
    return 0


def format_status(s: SpaceStatus) -> str:
    """A few readable lines about one space."""
    lines = [f"{s.key} ({s.name}): {s.pages} pages, {s.evidences} evidences; {s.scope}"]
    if s.everyone_may_view:
        lines.append("  everyone with access to the bot may view it (declared by an admin)")
    if s.restricted_pages:
        lines.append(f"  {s.restricted_pages} pages left out as restricted (see status --json for which)")
    if s.permission_error:
        lines.append(f"  nobody reads it through the bot: its {s.permission_error}")
    run = s.last_run
    if run is None:
        lines.append("  never synced")
        return "\n".join(lines)
    when = _ago(run.finished_at or run.started_at)
    counts = (
        f"{run.added} added, {run.updated} updated, {run.deleted} deleted, "
        f"{run.unchanged} unchanged, {run.failed} failed"
    )
    took = f" in {run.duration_s:.1f}s" if run.duration_s is not None else ""
    lines.append(f"  last sync {when}: {run.status}{took}; {counts}")
    return "\n".join(lines + _problems(run, "failed page"))


def format_folder(f: FolderStatus) -> str:
    """The last `index --docs` of a folder: its result, then each file or page it skipped and why."""
    run = f.last_run
    took = f" in {run.duration_s:.1f}s" if run.duration_s is not None else ""
    counts = f"{run.pages} files, {run.updated} embedded, {run.unchanged} unchanged, {run.failed} skipped"
    head = (
        f"folder {f.folder}: last index --docs {_ago(run.finished_at or run.started_at)}: {run.status}{took}"
    )
    return "\n".join([f"{head}; {counts}", *_problems(run, "skipped")])


def _problems(run: RunSummary, label: str, shown: int = 5) -> list[str]:
    """The run's error and its first failures with their reasons."""
    lines = [f"  error: {run.error}"] if run.error else []
    for f in run.failures[:shown]:
        lines.append(f"  {label} {f.get('title') or f.get('page_id')}: {f.get('reason')}")
    if len(run.failures) > shown:
        lines.append(f"  ... and {len(run.failures) - shown} more (see status --json)")
    return lines


def _ago(when: datetime | None) -> str:
    if when is None:
        return "at an unknown time"
    seconds = (datetime.now(UTC) - when).total_seconds()
    stamp = when.strftime("%Y-%m-%d %H:%M UTC")
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{stamp} ({int(seconds // size)} {unit} ago)"
    return f"{stamp} (just now)"
