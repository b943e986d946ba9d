"""`threadwise doctor`'s Teams checks: the settings, and whether Entra gives the bot a token to reply with."""

from __future__ import annotations

import asyncio
import re

from threadwise.chat.doctor import Check, run_check
from threadwise.teams.settings import TeamsSettings

_GUID = re.compile(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def teams_checks(settings: TeamsSettings) -> list[Check]:
    """One line for the settings, one for the token; skipped when Teams is not set up."""
    if not settings.configured:
        return [
            Check(
                "Teams",
                True,
                "not configured (set TEAMS_CLIENT_ID, TEAMS_CLIENT_SECRET and TEAMS_TENANT_ID to serve Teams)",
                skipped=True,
            )
        ]

    def configured() -> str:
        problem = settings.problem()
        if problem:
            raise ValueError(problem)
        if settings.allow_unauthenticated:
            return (
                "THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED=1: requests are NOT authenticated (local trials with "
                "Agents Playground only)"
            )
        if not _GUID.fullmatch(settings.client_id):
            raise ValueError(
                "TEAMS_CLIENT_ID does not look like an app id (a GUID): copy the Microsoft App ID from the "
                "Azure Bot's Configuration page"
            )
        if settings.tenant_id and not _GUID.fullmatch(settings.tenant_id):
            raise ValueError(
                "TEAMS_TENANT_ID does not look like a tenant id (a GUID): copy the App Tenant ID"
            )
        tenancy = (
            f"single-tenant ({settings.tenant_id})"
            if settings.tenant_id
            else "multi-tenant (TEAMS_TENANT_ID unset; Azure creates single-tenant bots now: set it if yours is one)"
        )
        admins = (
            f"{len(settings.admin_ids)} admins"
            if settings.admin_ids
            else "no admins (THREADWISE_TEAMS_ADMINS)"
        )
        return f"app {settings.client_id}, {tenancy}, {admins}"

    checks = [run_check("Teams settings", configured)]
    if checks[0].ok:
        checks.append(run_check("Teams package", lambda: package_permissions(settings)))
    if checks[0].ok and settings.client_id:
        checks.append(run_check("Teams bot token", lambda: _bot_token(settings)))
    return checks


def package_permissions(settings: TeamsSettings) -> str:
    """Which resource-specific permissions the bot uses and whether the package it builds asks for each."""
    from threadwise.teams import package

    built = package.manifest(bot_id=settings.client_id or "00000000-0000-0000-0000-000000000000")
    missing = package.missing_permissions(package.declared_permissions(built))
    if missing:
        raise ValueError(f"the app package lacks {', '.join(missing)}: auto mode and follow-ups need them")
    uses = "; ".join(f"{name} ({use})" for name, use in package.RSC_USES.items())
    return (
        f"`threadwise teams package` builds version {package.VERSION} with {uses}; a team that installed an "
        "older package grants less: upload the new one (Teams asks the team owner to consent again)"
    )


def _bot_token(settings: TeamsSettings) -> str:
    """Ask Entra for the token the bot replies with, through the Teams SDK's own token manager."""
    from microsoft_teams.api.auth.credentials import ClientCredentials
    from microsoft_teams.apps.token_manager import TokenManager

    credentials = ClientCredentials(
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        tenant_id=settings.tenant_id or None,
    )
    try:
        token = asyncio.run(TokenManager(credentials=credentials).get_bot_token())
    except Exception as err:
        raise ValueError(
            f"Entra refused or could not be reached ({type(err).__name__}: {str(err)[:300]}): check "
            "TEAMS_CLIENT_SECRET (not expired?) and TEAMS_TENANT_ID"
        ) from err
    if token is None:
        raise ValueError(
            "Entra gave no token: check TEAMS_CLIENT_ID, TEAMS_CLIENT_SECRET and TEAMS_TENANT_ID"
        )
    return "Entra issued a Bot Framework token for the app"
