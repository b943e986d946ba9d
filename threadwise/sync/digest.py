"""Where each platform's weekly knowledge-gap digest goes: one target per platform, chosen by an admin
(`/threadwise digest #channel`, Teams' `admin digest here`), none by default."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from threadwise.db.sync_tables import DigestTargetRow, utcnow


class DigestTargets:
    """The digest's target per platform, in the app's database (so every replica sees the same)."""

    def __init__(self, *, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def get(self, platform: str) -> dict[str, Any] | None:
        """The platform's target (what its front end stored), None when the digest is off."""
        with self.sessions() as s:
            row = s.get(DigestTargetRow, platform)
            return dict(row.target) if row is not None and row.target else None

    def set(self, platform: str, target: dict[str, Any], *, by: str = "") -> None:
        with self.sessions() as s, s.begin():
            row = s.get(DigestTargetRow, platform) or DigestTargetRow(platform=platform)
            row.target, row.set_by, row.set_at = dict(target), by, utcnow()
            s.add(row)

    def clear(self, platform: str) -> bool:
        """Turn the platform's digest off; whether it was on."""
        with self.sessions() as s, s.begin():
            row = s.get(DigestTargetRow, platform)
            if row is not None:
                s.delete(row)
            return row is not None
