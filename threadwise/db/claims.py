"""Claims of questions in progress, in the shared database: who answers each, until when, and what to resume.

A claim is the unique `processed_events` row of a platform event (db/conversations.py): the first replica to
insert it answers. While it answers it renews `lease_until`; when it is done the lease is cleared. A claim whose
lease ran out with no answer posted belongs to a replica that died: another takes it over with one
conditional UPDATE (only one can win) and answers from the `payload` stored with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from threadwise.db.conversations import ProcessedEventRow
from threadwise.db.sync_tables import as_utc, utcnow


@dataclass(frozen=True)
class Claim:
    key: str
    holder: str
    attempts: int  # how many replicas have started answering it, this one included
    payload: dict[str, Any]
    created_at: datetime


class ClaimStore:
    def __init__(self, *, sessions: sessionmaker[Session], clock: Callable[[], datetime] = utcnow) -> None:
        self._sessions = sessions
        self._clock = clock

    def now(self) -> datetime:
        return self._clock()

    def claim(self, key: str, holder: str, ttl_s: float, payload: dict[str, Any]) -> bool:
        """True the first time `key` is claimed (then `holder` answers it), False for every repeat."""
        now = self._clock()
        row = ProcessedEventRow(
            event_key=key[:128],
            created_at=now,
            holder=holder,
            lease_until=now + timedelta(seconds=ttl_s),
            attempts=1,
            payload=payload,
        )
        try:
            with self._sessions() as s, s.begin():
                s.add(row)
            return True
        except IntegrityError:
            return False

    def note(self, key: str, **fields: Any) -> None:
        """Add to a claim's payload what another replica would need (e.g. where the placeholder is)."""
        with self._sessions() as s, s.begin():
            row = s.get(ProcessedEventRow, key[:128])
            if row is not None and row.lease_until is not None:
                row.payload = {**(row.payload or {}), **fields}

    def renew(self, holder: str, ttl_s: float) -> int:
        """Extend every open claim of `holder` (one statement, however many); returns how many."""
        with self._sessions() as s, s.begin():
            done = s.execute(
                update(ProcessedEventRow)
                .where(ProcessedEventRow.holder == holder, ProcessedEventRow.lease_until.is_not(None))
                .values(lease_until=self._clock() + timedelta(seconds=ttl_s))
                .execution_options(synchronize_session=False)
            )
            return int(done.rowcount)  # type: ignore[attr-defined]

    def finish(self, key: str) -> None:
        """The question was answered (or told why not): nobody needs to take it over."""
        with self._sessions() as s, s.begin():
            s.execute(
                update(ProcessedEventRow)
                .where(ProcessedEventRow.event_key == key[:128])
                .values(lease_until=None)
                .execution_options(synchronize_session=False)
            )

    def orphans(self, prefix: str, *, limit: int = 20) -> list[Claim]:
        """Claims starting with `prefix` whose holder stopped renewing before they were answered."""
        with self._sessions() as s:
            rows = s.scalars(
                select(ProcessedEventRow)
                .where(
                    ProcessedEventRow.lease_until < self._clock(),
                    ProcessedEventRow.event_key.startswith(prefix, autoescape=True),
                )
                .order_by(ProcessedEventRow.created_at)
                .limit(limit)
            ).all()
            return [_claim(r) for r in rows]

    def take_over(self, claim: Claim, holder: str, ttl_s: float) -> Claim | None:
        """Make `holder` answer an orphaned claim; None when another replica took it first (or it was
        answered meanwhile)."""
        now = self._clock()
        with self._sessions() as s, s.begin():
            won = s.execute(
                update(ProcessedEventRow)
                .where(ProcessedEventRow.event_key == claim.key, ProcessedEventRow.lease_until < now)
                .values(
                    holder=holder,
                    lease_until=now + timedelta(seconds=ttl_s),
                    attempts=ProcessedEventRow.attempts + 1,
                )
                .execution_options(synchronize_session=False)
            )
            if won.rowcount != 1:  # type: ignore[attr-defined]
                return None
        return Claim(claim.key, holder, claim.attempts + 1, claim.payload, claim.created_at)


def _claim(row: ProcessedEventRow) -> Claim:
    created = as_utc(row.created_at)
    assert created is not None
    return Claim(row.event_key, row.holder or "", row.attempts or 1, dict(row.payload or {}), created)
