"""What the Slack app needs from the settings, and what it asks Slack for (scopes and events).

Apart from the app so that `doctor`, `serve`'s checks and the tests read them without importing Bolt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from threadwise.chat.identity import DEFAULT_TTL_MINUTES, identity_ttl_seconds
from threadwise.settings import env_flag, env_list

if TYPE_CHECKING:
    from slack_sdk import WebClient

DEFAULT_API_URL = "https://slack.com/api/"
# What the app asks Slack for (manifest.yml lists the same; tests hold the two together).
BOT_SCOPES = frozenset(
    {
        "app_mentions:read",
        "assistant:write",
        "channels:history",
        "groups:history",
        "im:history",
        "reactions:read",
        "chat:write",
        "commands",
        "users:read",
        "users:read.email",
    }
)
BOT_EVENTS = frozenset(
    {
        "app_mention",
        "app_home_opened",
        "assistant_thread_started",
        "assistant_thread_context_changed",
        "message.channels",
        "message.groups",
        "message.im",
        "reaction_added",
    }
)


@dataclass(frozen=True)
class SlackSettings:
    """What the Slack app needs; the composition root fills it (`from_env` reads Bolt's usual names)."""

    bot_token: str
    signing_secret: str = ""  # HTTP mode only
    app_token: str = ""  # Socket Mode only (xapp-…)
    api_url: str = DEFAULT_API_URL  # the Web API base URL, with its /api/ suffix
    admin_user_ids: tuple[str, ...] = ()
    workspace_admins: bool = True  # workspace admins/owners count as Threadwise admins
    follow_ups_without_mention: bool = True
    answer_workers: int = 8  # questions and explanations worked on at once
    max_question_chars: int = 2000  # longer questions get a polite request to shorten them
    max_questions_per_user: int = 3  # one person's questions waiting or being answered at once
    team_id: str = ""  # the installed workspace; empty: learned from auth.test at start
    app_id: str = ""  # this app; empty: learned from bots.info at start
    allow_external_users: bool = False  # answer Slack Connect users of other organisations
    identity_ttl: float = DEFAULT_TTL_MINUTES * 60  # seconds a user's e-mail (users.info) is kept

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SlackSettings:
        """SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_SIGNING_SECRET, SLACK_API_URL, THREADWISE_SLACK_ADMINS
        (comma-separated user ids), THREADWISE_SLACK_WORKSPACE_ADMINS, THREADWISE_SLACK_FOLLOW_UPS,
        THREADWISE_SLACK_WORKERS, THREADWISE_MAX_QUESTION_CHARS, THREADWISE_MAX_QUESTIONS_PER_USER,
        SLACK_TEAM_ID, SLACK_APP_ID, THREADWISE_SLACK_ALLOW_EXTERNAL_USERS, THREADWISE_IDENTITY_CACHE_MINUTES."""
        url = env.get("SLACK_API_URL", "").strip() or DEFAULT_API_URL
        return cls(
            bot_token=env.get("SLACK_BOT_TOKEN", "").strip(),
            signing_secret=env.get("SLACK_SIGNING_SECRET", "").strip(),
            app_token=env.get("SLACK_APP_TOKEN", "").strip(),
            api_url=url if url.endswith("/") else url + "/",
            admin_user_ids=env_list(env, "THREADWISE_SLACK_ADMINS"),
            workspace_admins=env_flag(env, "THREADWISE_SLACK_WORKSPACE_ADMINS", True),
            follow_ups_without_mention=env_flag(env, "THREADWISE_SLACK_FOLLOW_UPS", True),
            answer_workers=max(1, int(env.get("THREADWISE_SLACK_WORKERS", "8") or 8)),
            max_question_chars=max(1, int(env.get("THREADWISE_MAX_QUESTION_CHARS", "2000") or 2000)),
            max_questions_per_user=max(1, int(env.get("THREADWISE_MAX_QUESTIONS_PER_USER", "3") or 3)),
            team_id=env.get("SLACK_TEAM_ID", "").strip(),
            app_id=env.get("SLACK_APP_ID", "").strip(),
            allow_external_users=env_flag(env, "THREADWISE_SLACK_ALLOW_EXTERNAL_USERS", False),
            identity_ttl=identity_ttl_seconds(env),
        )


def make_client(settings: SlackSettings) -> WebClient:
    """The Web API client: Slack's base URL from the settings; waits out rate limits (HTTP 429, Retry-After)."""
    from slack_sdk import WebClient
    from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

    client = WebClient(token=settings.bot_token, base_url=settings.api_url)
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=3))
    return client
