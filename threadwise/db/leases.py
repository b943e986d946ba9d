"""Leases in the shared database: a named row (holder, expires_at) that one holder at a time keeps by renewing it.

Replicas use them for what must run in one place at a time (the sync leader, a sync in progress). The same
code runs on SQLite and PostgreSQL: taking a lease is one conditional UPDATE (or the INSERT of its first
row), so the database decides who wins. Times are the replicas' UTC clocks: they must agree to well within a
lease's TTL (NTP does).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import DateTime, String, case, or_, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from threadwise.db.base import Base
from threadwise.db.sync_tables import as_utc, utcnow


class LeaseRow(Base):
    """Who holds the lease `name`, until when, and since when (a renewal keeps `acquired_at`)."""

    __tablename__ = "leases"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(255))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    acquired_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


@dataclass(frozen=True)
class Lease:
    name: str
    holder: str
    expires_at: datetime
    acquired_at: datetime

    def live(self, now: datetime) -> bool:
        return self.expires_at > now


class Leases:
    """Take, renew, release and read leases."""

    def __init__(self, *, sessions: sessionmaker[Session], clock: Callable[[], datetime] = utcnow) -> None:
        self._sessions = sessions
        self._clock = clock

    def acquire(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take or renew `name` for `ttl_s` seconds: True when `holder` holds it now (it was free, expired, or
        already its own), False when someone else's lease is still live."""
        now = self._clock()
        until = now + timedelta(seconds=ttl_s)
        with self._sessions() as s, s.begin():
            taken = s.execute(
                update(LeaseRow)
                .where(LeaseRow.name == name, or_(LeaseRow.holder == holder, LeaseRow.expires_at <= now))
                .values(
                    holder=holder,
                    expires_at=until,
                    acquired_at=case((LeaseRow.holder == holder, LeaseRow.acquired_at), else_=now),
                )
                .execution_options(synchronize_session=False)
            )
            if taken.rowcount == 1:  # type: ignore[attr-defined]
                return True
        try:
            with self._sessions() as s, s.begin():
                s.add(LeaseRow(name=name, holder=holder, expires_at=until, acquired_at=now))
            return True
        except IntegrityError:  # the row exists: another holder's lease is live
            return False

    def release(self, name: str, holder: str) -> None:
        """Give the lease up at once (if `holder` still holds it), so another may take it without waiting."""
        with self._sessions() as s, s.begin():
            s.execute(
                update(LeaseRow)
                .where(LeaseRow.name == name, LeaseRow.holder == holder)
                .values(expires_at=self._clock())
                .execution_options(synchronize_session=False)
            )

    def current(self, name: str) -> Lease | None:
        """The lease as stored (live or expired), or None if it was never taken."""
        with self._sessions() as s:
            row = s.get(LeaseRow, name)
            if row is None:
                return None
            expires, acquired = as_utc(row.expires_at), as_utc(row.acquired_at)
            assert expires is not None and acquired is not None
            return Lease(row.name, row.holder, expires, acquired)

    def now(self) -> datetime:
        return self._clock()
