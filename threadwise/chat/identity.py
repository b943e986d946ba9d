"""Who is asking: a chat user's e-mail address, looked up on the chat platform and kept for a while.

Slack (`users.info`) and Teams (the conversation member lookup) each hand in their own lookup; this module
keeps what they answer for `ttl` seconds, so a busy thread costs one lookup per person per TTL. A user whose
address cannot be learned (none given, the lookup failed, the token lacks the scope) is `None`: a person
with no Confluence account, never an admin and never "everyone". A failed lookup is kept for a short time
only, so a passing outage does not hide someone's pages for the whole TTL.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from threadwise.chat.pressed import NOT_YOURS as NOT_YOURS  # a refused press (re-exported for the front ends)

log = logging.getLogger(__name__)

DEFAULT_TTL_MINUTES = 15.0
FAILURE_TTL_SECONDS = 60.0
TTL_SETTING = "THREADWISE_IDENTITY_CACHE_MINUTES"


# What an asker is told privately (Slack: an ephemeral message; Teams: their personal chat with the bot)
WITHHELD_HINT = "Some pages only you can read might answer this — ask me in a direct message."
WITHHELD_HINT_TEAMS = (
    "Some pages only you can read might answer what you just asked in a shared conversation — ask me here, "
    "in our personal chat."
)


class Admins(Protocol):
    """Who may change things (`admins(user)`), and whom to ask (`admins.who()`) for a refusal."""

    def __call__(self, user: str) -> bool: ...
    def who(self) -> str: ...


class LookupFailed(Exception):
    """The platform could not say who a user is (refused, unreachable, a missing scope)."""


def identity_ttl_seconds(env: Mapping[str, str]) -> float:
    """THREADWISE_IDENTITY_CACHE_MINUTES (default 15; 0 asks the platform every time), in seconds."""
    raw = env.get(TTL_SETTING, "").strip()
    try:
        minutes = float(raw) if raw else DEFAULT_TTL_MINUTES
    except ValueError:
        raise ValueError(f"{TTL_SETTING}={raw!r} is not a number of minutes") from None
    if minutes < 0:
        raise ValueError(f"{TTL_SETTING}={raw!r} must not be negative")
    return minutes * 60.0


def normalise_email(value: object) -> str | None:
    """An address as the permission service compares it (trimmed, lower case), or None when it is not one."""
    text = str(value or "").strip().lower()
    return text if "@" in text else None


class EmailDirectory:
    """chat user id → e-mail address (or None), asked of `lookup` at most once per `ttl` seconds per user.

    `lookup(user)` returns the address, None when the platform knows the user but gives no address, or raises
    LookupFailed; a call may bring its own (Teams looks a member up in the conversation at hand).
    Thread-safe; two threads asking about one user at once may both look it up (harmless).
    """

    def __init__(
        self,
        *,
        lookup: Callable[[str], str | None] | None = None,
        ttl: float = DEFAULT_TTL_MINUTES * 60.0,
        failure_ttl: float = FAILURE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lookup = lookup
        self.ttl = ttl
        self.failure_ttl = min(failure_ttl, ttl)
        self.clock = clock
        self._known: dict[str, tuple[float, str | None]] = {}  # user -> (expires at, address)
        self._lock = threading.Lock()

    def email(self, user: str, lookup: Callable[[], str | None] | None = None) -> str | None:
        """The user's address, or None for someone who cannot be mapped (logged once per lookup)."""
        if not user:
            return None
        now = self.clock()
        with self._lock:
            known = self._known.get(user)
        if known is not None and now < known[0]:
            return known[1]
        try:
            if lookup is None:
                assert self.lookup is not None, "no lookup for this directory"
                found = self.lookup(user)
            else:
                found = lookup()
            address, keep = normalise_email(found), self.ttl
            if address is None:
                log.info("chat user %s has no e-mail address: answered as a person without Confluence", user)
        except LookupFailed as err:
            log.warning(
                "could not learn who chat user %s is (%s): answered as a person without Confluence", user, err
            )
            address, keep = None, self.failure_ttl
        with self._lock:
            if keep > 0:
                self._known[user] = (now + keep, address)
            if len(self._known) > 10_000:  # a long-running bot in a huge workspace: drop what expired
                self._known = {u: k for u, k in self._known.items() if k[0] > now}
        return address
