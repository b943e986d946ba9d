"""The admin's mapping of Confluence accounts to chat e-mail addresses (THREADWISE_CONFLUENCE_EMAILS).

Confluence Cloud returns `email: ""` for every user whose profile hides the address, even to site and org
admins (CONFCLOUD-72205); the endpoint that ignores the setting is for Atlassian-approved apps only. Such a
user cannot be matched to a chat user by what Confluence says. An org admin can export the users of the
organization (admin.atlassian.com → Directory → Users → Export users: a CSV with each account's id and
e-mail) and point THREADWISE_CONFLUENCE_EMAILS at it; any CSV with a header works:

- the account column: `User id`, `Account id`, `accountId`, `Atlassian id`; on Data Center `User key`,
  `userKey` or `Username`;
- the address column: `Chat email` when the chat address differs, else `Email` / `E-mail` / `Email address`.

The file is read again when it changes (no restart). A file that cannot be read maps nobody and says why
(doctor shows it): never a guess.
"""

from __future__ import annotations

import csv
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

SETTING = "THREADWISE_CONFLUENCE_EMAILS"
ID_COLUMNS = (
    "user id",
    "account id",
    "accountid",
    "account_id",
    "atlassian id",
    "user key",
    "userkey",
    "username",
)
EMAIL_COLUMNS = ("chat email", "chat_email", "email", "e-mail", "email address")


@dataclass(frozen=True)
class EmailMap:
    """Confluence account (account id, user key or username) → chat e-mail (lower case); or why it is empty."""

    source: str = ""
    emails: dict[str, str] = field(default_factory=dict)
    error: str = ""

    def accounts_of(self, email: str) -> set[str]:
        return {account for account, mapped in self.emails.items() if mapped == email}


def parse_email_map(text: str, *, source: str) -> EmailMap:
    """The mapping in a CSV's text; rows without both values are skipped, a missing column is an error."""
    rows = csv.reader(text.splitlines())
    header = [h.strip().lower() for h in next(rows, [])]
    id_col = next((header.index(c) for c in ID_COLUMNS if c in header), None)
    email_col = next((header.index(c) for c in EMAIL_COLUMNS if c in header), None)
    if id_col is None or email_col is None:
        return EmailMap(
            source,
            error=f"{source} needs a header with an account column ({', '.join(ID_COLUMNS)}) and an "
            f"e-mail column ({', '.join(EMAIL_COLUMNS)}); it has {', '.join(header) or 'none'}",
        )
    emails = {}
    for row in rows:
        if len(row) > max(id_col, email_col):
            account, email = row[id_col].strip(), row[email_col].strip().lower()
            if account and "@" in email:
                emails[account] = email
    return EmailMap(source, emails)


class EmailMapFile:
    """THREADWISE_CONFLUENCE_EMAILS, read when its modification time changes (thread-safe)."""

    def __init__(self, *, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._seen: tuple[float, EmailMap] | None = None

    @classmethod
    def from_setting(cls, value: str) -> EmailMapFile | None:
        value = value.strip()
        return cls(path=Path(value).expanduser()) if value else None

    def current(self) -> EmailMap:
        try:
            mtime = os.stat(self.path).st_mtime
        except OSError as e:
            return EmailMap(str(self.path), error=f"{SETTING}={self.path} cannot be read ({e.strerror})")
        with self._lock:
            if self._seen is None or self._seen[0] != mtime:
                try:
                    text = self.path.read_text(encoding="utf-8-sig")
                except (OSError, UnicodeDecodeError) as e:
                    return EmailMap(str(self.path), error=f"{SETTING}={self.path} cannot be read ({e})")
                self._seen = (mtime, parse_email_map(text, source=f"{SETTING}={self.path}"))
            return self._seen[1]
