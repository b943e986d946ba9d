"""`threadwise serve [--http PORT] [--teams PORT]` runs every configured front end (Slack, Teams) and the sync
scheduler in one process; `threadwise doctor` checks the set-up.

`register(subparsers, build)` adds both; `build()` returns the composition root (threadwise.wiring.Threadwise).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from threadwise.cli.errors import print_error
from threadwise.errors import ThreadwiseError
from threadwise.wiring import Threadwise

if TYPE_CHECKING:
    from threadwise.chat.doctor import Check

Build = Callable[[], Threadwise]


def register(subparsers: Any, build: Build) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run every configured front end (Slack: Socket Mode or --http; Teams: --teams) and the sync scheduler",
    )
    p.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve the Events API on PORT at /slack/events instead of Socket Mode",
    )
    p.add_argument(
        "--teams",
        type=int,
        metavar="PORT",
        help="serve the Teams messaging endpoint /api/messages on PORT (default 3978 when Teams is set up)",
    )
    p.add_argument(
        "--host", default="0.0.0.0", help="address to listen on with --http and --teams (default 0.0.0.0)"
    )
    p.add_argument("--no-sync", action="store_true", help="do not run the sync scheduler in this process")
    # exit_at_once: once drained (THREADWISE_DRAIN_SECONDS), answers still running are another replica's to finish
    p.set_defaults(func=lambda args: _serve(build(), args), exit_at_once=True)

    p = subparsers.add_parser(
        "doctor",
        help="check the Slack tokens, the Teams settings, Confluence, the LLM endpoint and the index",
    )
    p.add_argument(
        "--http", action="store_true", help="check for HTTP mode (signing secret) instead of Socket Mode"
    )
    p.set_defaults(func=lambda args: _doctor(build(), args))


def _serve(tw: Threadwise, args: argparse.Namespace) -> int:
    from urllib.error import URLError

    from threadwise.front_ends import Serving

    serving = Serving(http_port=args.http, teams_port=args.teams, host=args.host, sync=not args.no_sync)
    try:
        tw.front_ends.serve(serving)
    except URLError as err:  # Bolt checks the token with Slack; Socket Mode opens its connection through it
        raise ThreadwiseError(
            f"cannot reach Slack at {tw.front_ends.slack_settings.api_url} ({err.reason}): check the network "
            "(and SLACK_API_URL, if set)"
        ) from None
    return 0


def _doctor(tw: Threadwise, args: argparse.Namespace) -> int:
    from threadwise.chat.doctor import Check, all_ok, render, run_check
    from threadwise.cli.backend_checks import backend_checks
    from threadwise.slack.doctor import slack_checks

    slack, teams = tw.front_ends.slack_settings, tw.front_ends.teams_settings
    if slack.bot_token or not teams.configured:
        checks = slack_checks(slack, http=args.http, per_user=tw.settings.permissions == "per-user")
    else:
        checks = [Check("Slack", True, "not configured (Teams only)", skipped=True)]
    if teams.configured or not slack.bot_token:
        from threadwise.teams.doctor import teams_checks

        checks.extend(teams_checks(teams))
    checks.append(_confluence_check(tw))
    checks.append(_permissions_check(tw))
    checks.extend(_llm_checks(tw))
    checks.extend(backend_checks(tw))
    checks.append(run_check("Index", lambda: _index_summary(tw)))
    print(render(checks))
    if all_ok(checks):
        return 0
    failed = [c.name for c in checks if not (c.ok or c.skipped)]
    return print_error(f"{len(failed)} of {len(checks)} checks failed ({', '.join(failed)}): see ✘ above", 1)


def _confluence_check(tw: Threadwise) -> Check:
    from threadwise.chat.doctor import Check, run_check

    try:
        client = tw.confluence
    except Exception as err:  # e.g. a malformed CONFLUENCE_URL
        return Check("Confluence", False, str(err))
    if client is None:
        return Check(
            "Confluence",
            True,
            "not configured (set CONFLUENCE_URL and credentials to sync spaces); answering from what is indexed",
            skipped=True,
        )

    def reach() -> str:
        visible = {s.key for s in client.list_spaces()}
        configured = [c.key for c in tw.admin.list_spaces()]
        missing = [k for k in configured if k not in visible]
        if missing:
            raise ValueError(
                f"reached {client.settings.base_url}, but these credentials cannot see the configured spaces "
                f"{', '.join(missing)} (they see {len(visible)} spaces)"
            )
        return (
            f"reached {client.settings.base_url}: {len(visible)} spaces visible, {len(configured)} configured"
        )

    return run_check("Confluence", reach)


def _permissions_check(tw: Threadwise) -> Check:
    from threadwise.chat.doctor import Check

    if tw.settings.permissions == "off":
        return Check(
            "Permissions",
            True,
            "THREADWISE_PERMISSIONS=off: restricted Confluence pages are indexed too, and anyone who can reach "
            "the bot may get answers from them; keep it only for a wiki that is entirely public",
            warning=True,
        )
    if tw.settings.permissions == "per-user":
        return _per_user_check(tw)
    left_out = sum(s.restricted_pages for s in tw.admin.status())
    return Check(
        "Permissions",
        True,
        f"open-pages: pages with a read restriction on themselves or an ancestor are not indexed "
        f"({left_out} left out as restricted)",
    )


def _per_user_check(tw: Threadwise) -> Check:
    """per-user: what channels get, how chat users are matched to Confluence accounts, and what an unmapped
    person may read (the fallback), so an admin sees which applies."""
    from threadwise.chat.doctor import Check
    from threadwise.permissions.email_map import SETTING
    from threadwise.permissions.service import FALLBACK

    permissions = tw.permissions
    unmapped, mapping = permissions.unmapped_users(), permissions.mapping()
    declared = [c.key for c in tw.admin.list_spaces() if c.everyone_may_view]
    text = (
        "per-user: each asker gets the pages Confluence lets them read; channels only unrestricted pages "
        f"of spaces declared 'everyone may view' ({', '.join(declared) or 'none declared'}); chat users are "
        "matched by the e-mail Confluence shows"
    )
    if mapping.source:
        text += f", and by {mapping.source} ({len(mapping.emails)} accounts)"
    if mapping.error:
        return Check("Permissions", False, f"{text}; {mapping.error}: it maps nobody until fixed")
    if unmapped:
        names = ", ".join(unmapped[:5]) + (" …" if len(unmapped) > 5 else "")
        word = "user cannot" if len(unmapped) == 1 else "users cannot"
        text += (
            f"; {len(unmapped)} Confluence {word} be mapped to a chat user, as Confluence shows no e-mail "
            "address (Cloud: the user's privacy settings, CONFCLOUD-72205; Data Center: neither the mobile "
            f"profile nor JSON-RPC gave one): {names}. They read only {FALLBACK}, and are "
            f"told why; map them in {SETTING} (a CSV of account id and e-mail, e.g. the users export of "
            "admin.atlassian.com)"
        )
    else:
        text += f"; an asker no account matches reads only {FALLBACK}"
    return Check("Permissions", True, text, warning=bool(unmapped))


def _llm_checks(tw: Threadwise) -> list[Check]:
    from threadwise.chat.doctor import Check, run_check
    from threadwise.models.llm_settings import make_chat

    roles = tw.llm
    if roles is None:
        return [Check("LLM", True, "not configured: answers are extractive (offline mode)", skipped=True)]
    checks, seen = [], {}
    for role, settings in roles.items():
        key = (settings.model, settings.base_url, settings.azure_api_version)
        if key in seen:
            continue
        seen[key] = role

        def ping(settings: Any = settings) -> str:
            chat = make_chat(settings)
            reply = chat.chat([{"role": "user", "content": "Reply with the word OK."}], max_tokens=5)
            return f"{chat.model} at {chat.endpoint} answered ({reply[:20]!r})"

        checks.append(run_check(f"LLM ({role})", ping))
    return checks


def _index_summary(tw: Threadwise) -> str:
    statuses = tw.admin.status()
    evidences = sum(s.evidences for s in statuses)
    if evidences == 0:
        raise ValueError(
            "the index is empty: add a space (`threadwise spaces add KEY`), then `threadwise sync`"
        )
    pages = sum(s.pages for s in statuses)
    never = [s.key for s in statuses if s.configured and s.last_run is None]
    text = f"{evidences} evidences from {pages} pages in {', '.join(s.key for s in statuses)}"
    return text + (f"; never synced: {', '.join(never)}" if never else "")
