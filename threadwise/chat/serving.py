"""What every front end's `serve` shares: the scheduler it starts, and the drain on shutdown.

On SIGTERM a front end stops taking requests, then the answers in progress and queued get the drain's seconds
(THREADWISE_DRAIN_SECONDS, Settings.drain_seconds); what is
left is handed over (its claim, no longer renewed, lapses to another replica). compose.yaml's
stop_grace_period leaves room for both (tests/test_compose.py).
"""

from __future__ import annotations

import logging
from typing import Protocol

log = logging.getLogger(__name__)


class Scheduler(Protocol):
    def start(self) -> None: ...
    def shutdown(self, *, wait: bool = True) -> None: ...


class Drains(Protocol):
    def wait_idle(self, timeout: float = ...) -> bool: ...
    def close(self, *, wait: bool = ...) -> None: ...


def drain(bot: Drains, *, seconds: float) -> None:
    """Let the answers in progress finish for at most `seconds`, then close the bot: what is still open is left
    to another replica."""
    if not bot.wait_idle(timeout=seconds):
        log.warning("stopping with answers still in progress after %.0f s: left to another replica", seconds)
    bot.close(wait=False)
