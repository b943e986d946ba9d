"""The Teams front end's settings, in a module of their own so that `serve`, `doctor` and `teams package`
can read them without importing the Teams SDK."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from threadwise.chat.identity import DEFAULT_TTL_MINUTES, identity_ttl_seconds
from threadwise.settings import env_flag, env_list


@dataclass(frozen=True)
class TeamsSettings:
    """What the Teams front end needs; `from_env` reads the names the README documents."""

    client_id: str = ""  # the Azure Bot's app registration (Microsoft App ID)
    client_secret: str = ""
    tenant_id: str = ""  # single-tenant bots (Azure's default now); "" for multi-tenant
    admin_ids: tuple[str, ...] = ()  # Entra object ids (aadObjectId) of Threadwise admins
    allow_unauthenticated: bool = False  # local trials only (Agents Playground), never with a client id
    follow_ups_without_mention: bool = True
    answer_workers: int = 8
    identity_ttl: float = DEFAULT_TTL_MINUTES * 60  # seconds a member's e-mail/UPN is kept

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TeamsSettings:
        """TEAMS_CLIENT_ID, TEAMS_CLIENT_SECRET, TEAMS_TENANT_ID, THREADWISE_TEAMS_ADMINS (comma-separated),
        THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED, THREADWISE_TEAMS_FOLLOW_UPS, THREADWISE_TEAMS_WORKERS,
        THREADWISE_IDENTITY_CACHE_MINUTES."""

        return cls(
            client_id=env.get("TEAMS_CLIENT_ID", "").strip(),
            client_secret=env.get("TEAMS_CLIENT_SECRET", "").strip(),
            tenant_id=env.get("TEAMS_TENANT_ID", "").strip(),
            admin_ids=env_list(env, "THREADWISE_TEAMS_ADMINS"),
            allow_unauthenticated=env_flag(env, "THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED", False),
            follow_ups_without_mention=env_flag(env, "THREADWISE_TEAMS_FOLLOW_UPS", True),
            answer_workers=max(1, int(env.get("THREADWISE_TEAMS_WORKERS", "8") or 8)),
            identity_ttl=identity_ttl_seconds(env),
        )

    @property
    def configured(self) -> bool:
        """Whether Teams is set up at all (then `threadwise serve` runs it)."""
        return bool(self.client_id or self.allow_unauthenticated)

    def problem(self) -> str | None:
        """Why the Teams endpoint must not start with these settings; None when it may."""
        if self.client_id and self.allow_unauthenticated:
            return (
                "THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED=1 is refused when TEAMS_CLIENT_ID is set (then every "
                "request's token is checked): unset THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED"
            )
        if self.allow_unauthenticated:
            return None
        if not self.client_id:
            return (
                "Teams is not set up: set TEAMS_CLIENT_ID, TEAMS_CLIENT_SECRET and TEAMS_TENANT_ID (the Azure "
                "Bot's app registration), or THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED=1 for a local trial "
                "with Microsoft 365 Agents Playground"
            )
        if not self.client_secret:
            return (
                "TEAMS_CLIENT_SECRET is not set: the bot needs its app registration's client secret to reply "
                "(Azure portal → the bot's app registration → Certificates & secrets → New client secret)"
            )
        return None
