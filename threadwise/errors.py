"""Failures a user can act on. The CLI prints them as `threadwise: error: <message>` (the message says what
went wrong and how to fix it) and exits with `exit_code`: 2 for usage and configuration errors, 1 otherwise.

Light on purpose: every layer may raise these without importing anything heavy.
"""

from __future__ import annotations


class ThreadwiseError(Exception):
    """A failure whose message is meant for the user."""

    exit_code = 1


class ConfigError(ThreadwiseError, ValueError):
    """The configuration is missing something or holds a wrong value (exit 2)."""

    exit_code = 2
