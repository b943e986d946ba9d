"""`threadwise doctor`'s Slack checks: auth.test with the bot token (and its scopes), apps.connections.open
with the app token, the signing secret. The checks themselves and their rendering are `threadwise.chat.doctor`.
"""

from __future__ import annotations

import re

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.chat.doctor import Check, run_check
from threadwise.slack.settings import BOT_SCOPES, SlackSettings

EMAIL_SCOPE = "users:read.email"
REINSTALL = "update the app from manifest.yml (App Manifest), then reinstall it to the workspace and copy the new token"
_SLACK_ERRORS = {
    "invalid_auth": "the token is not valid (copied wrongly, or from another app)",
    "not_authed": "no token was sent",
    "account_inactive": "the token belongs to a deleted app or a deactivated user",
    "token_revoked": "the token was revoked; reinstall the app to get a new one",
    "not_allowed_token_type": "this is the wrong kind of token",
}


def _slack_error(err: SlackApiError, variable: str) -> str:
    code = str(err.response.get("error", "unknown_error"))
    why = _SLACK_ERRORS.get(code, "Slack refused it")
    return f"{variable} was refused by Slack ({code}): {why}"


def _email_scope_missing(per_user: bool) -> Check:
    """users:read.email is what maps askers to Confluence accounts: a failure under per-user, else a warning."""
    detail = (
        f"the bot token lacks {EMAIL_SCOPE}, so Slack gives no e-mail addresses and nobody can be matched to a "
        "Confluence account"
    )
    if per_user:
        return Check(
            "Slack e-mail scope",
            False,
            f"{detail}: under THREADWISE_PERMISSIONS=per-user everyone is answered as a person without one; "
            + REINSTALL,
        )
    return Check(
        "Slack e-mail scope", True, f"{detail} (needed for THREADWISE_PERMISSIONS=per-user)", warning=True
    )


def slack_checks(
    settings: SlackSettings, *, http: bool, client: WebClient | None = None, per_user: bool = False
) -> list[Check]:
    """The bot token (auth.test) and its scopes, the app token (Socket Mode) or the signing secret (HTTP).
    `per_user`: THREADWISE_PERMISSIONS=per-user, under which the e-mail scope is required."""
    client = client or WebClient(token=settings.bot_token, base_url=settings.api_url, timeout=15)

    def bot_token() -> str:
        if not settings.bot_token:
            raise ValueError(
                "SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-…) from OAuth & Permissions"
            )
        if not settings.bot_token.startswith("xoxb-"):
            raise ValueError("SLACK_BOT_TOKEN should be the Bot User OAuth Token, which starts with xoxb-")
        try:
            reply = client.auth_test()
        except SlackApiError as err:
            raise ValueError(_slack_error(err, "SLACK_BOT_TOKEN")) from err
        except OSError as err:
            raise ValueError(f"cannot reach the Slack Web API at {settings.api_url}: {err}") from err
        headers = {k.lower(): v for k, v in (reply.headers or {}).items()}
        granted = {s.strip() for s in str(headers.get("x-oauth-scopes", "")).split(",") if s.strip()}
        scopes.update(granted)
        missing = sorted(BOT_SCOPES - granted - {EMAIL_SCOPE}) if granted else []
        if missing:
            raise ValueError(f"the bot token lacks the scopes {', '.join(missing)}: {REINSTALL}")
        return f"signed in as @{reply.get('user')} (user {reply.get('user_id')}) in {reply.get('team')} via {settings.api_url}"

    def app_token() -> str:
        if not settings.app_token:
            raise ValueError(
                "SLACK_APP_TOKEN is not set: Socket Mode needs an app-level token (xapp-…) with connections:write (Basic Information → App-Level Tokens)"
            )
        if not settings.app_token.startswith("xapp-"):
            raise ValueError("SLACK_APP_TOKEN should be an app-level token, which starts with xapp-")
        try:
            client.apps_connections_open(app_token=settings.app_token)
        except SlackApiError as err:
            raise ValueError(
                _slack_error(err, "SLACK_APP_TOKEN") + "; is Socket Mode enabled for the app?"
            ) from err
        return "Socket Mode connections can be opened"

    def signing_secret() -> str:
        if not settings.signing_secret:
            raise ValueError(
                "SLACK_SIGNING_SECRET is not set: copy the Signing Secret from Basic Information → App Credentials"
            )
        if not re.fullmatch(r"[0-9a-f]{32}", settings.signing_secret):
            raise ValueError("SLACK_SIGNING_SECRET does not look like a signing secret (32 hex characters)")
        return "set (Slack's requests will be checked against it)"

    scopes: set[str] = set()  # what auth.test says the token has
    checks = [run_check("Slack bot token", bot_token)]
    if scopes and EMAIL_SCOPE not in scopes:
        checks.append(_email_scope_missing(per_user))
    checks.append(
        run_check("Slack signing secret", signing_secret) if http else run_check("Slack app token", app_token)
    )
    return checks
