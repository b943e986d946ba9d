"""Keeping secrets and internal addresses out of what people see: logs, `doctor`, status, Slack replies."""

from __future__ import annotations

import logging
import re

# scheme://user:password@host → scheme://user:***@host; scheme://token@host → scheme://***@host. The user
# info runs to the last "@" before the path: a user name that is an e-mail address, or a password with "@" in it,
# is covered whole
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s]*)@")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s)\]>'\"]+")
_HOST_PORT = re.compile(r"\b(?:\d{1,3}(?:\.\d{1,3}){3}|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+):\d{2,5}\b")


def redact_credentials(text: str) -> str:
    """`text` with the credentials inside URLs replaced by ***."""

    def hide(m: re.Match[str]) -> str:
        user, colon, _ = m["userinfo"].partition(":")
        return f"{m['scheme']}{user}:***@" if colon else f"{m['scheme']}***@"

    return _USERINFO.sub(hide, text)


def redact_endpoints(text: str) -> str:
    """`text` without URLs and host:port pairs, for messages users see (the LLM failed: not where it runs)."""
    return _HOST_PORT.sub("[endpoint]", _URL.sub("[endpoint]", text))


class RedactingFilter(logging.Filter):
    """A log filter that removes credentials in URLs from every record (message and arguments, formatted)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_credentials(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True
