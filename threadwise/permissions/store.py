"""Writing the readers Confluence reported (sync and permission sync) into the database: no re-embedding."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from threadwise.connectors.confluence_permissions import (
    ConfluenceUser,
    GroupMembers,
    PageReaders,
    SpaceViewers,
)
from threadwise.db.permission_tables import (
    ConfluenceGroupRow,
    ConfluenceUserRow,
    PageReadersRow,
    SpaceViewersRow,
)
from threadwise.db.sync_tables import utcnow


class PermissionStore:
    def __init__(self, *, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def page_ids(self, space: str) -> set[str]:
        """The pages of `space` whose readers are stored."""
        with self.sessions() as s:
            return set(s.scalars(select(PageReadersRow.page_id).where(PageReadersRow.space == space)))

    def save(
        self,
        space: str,
        readers: Sequence[PageReaders],
        viewers: SpaceViewers,
        groups: Sequence[GroupMembers],
        users: Iterable[ConfluenceUser],
        *,
        every_page: bool,
        duration_s: float | None = None,
    ) -> int:
        """Store what was read for `space`; `every_page`: `readers` covers the whole space, so the readers of
        pages not in it go. Returns how many pages' readers changed (new pages included)."""
        now = utcnow()
        changed = 0
        with self.sessions() as s, s.begin():
            stored = {
                r.page_id: r for r in s.scalars(select(PageReadersRow).where(PageReadersRow.space == space))
            }
            for r in readers:
                levels = [
                    asdict(lv) | {"users": list(lv.users), "groups": list(lv.groups)} for lv in r.levels
                ]
                row = stored.get(r.page_id) or s.get(PageReadersRow, r.page_id)
                if row is None:
                    row = PageReadersRow(page_id=r.page_id, space=space)
                    s.add(row)
                    changed += 1
                elif row.levels != levels or row.space != space:
                    changed += 1
                row.space, row.title, row.levels, row.restricted, row.checked_at = (
                    space,
                    r.title,
                    levels,
                    bool(levels),
                    now,
                )
            if every_page:
                gone = set(stored) - {r.page_id for r in readers}
                if gone:
                    s.execute(delete(PageReadersRow).where(PageReadersRow.page_id.in_(gone)))
            row_v = s.get(SpaceViewersRow, space) or SpaceViewersRow(space=space)
            row_v.anonymous, row_v.users, row_v.groups = (
                viewers.anonymous,
                list(viewers.users),
                list(viewers.groups),
            )
            row_v.error, row_v.checked_at = viewers.error or None, now
            if every_page:
                row_v.last_changed, row_v.last_duration_s = changed, duration_s
            s.add(row_v)
            for g in groups:
                row_g = s.get(ConfluenceGroupRow, g.id) or ConfluenceGroupRow(group_id=g.id)
                row_g.name, row_g.members, row_g.error, row_g.checked_at = (
                    g.name,
                    list(g.members),
                    g.error or None,
                    now,
                )
                s.add(row_g)
            for u in users:
                row_u = s.get(ConfluenceUserRow, u.id) or ConfluenceUserRow(user_id=u.id)
                row_u.username, row_u.display_name = u.username, u.display_name
                row_u.email, row_u.checked_at = u.email or None, now
                s.add(row_u)
        return changed

    def forget_pages(self, page_ids: Sequence[str]) -> None:
        if page_ids:
            with self.sessions() as s, s.begin():
                s.execute(delete(PageReadersRow).where(PageReadersRow.page_id.in_(list(page_ids))))

    def forget_space(self, space: str) -> None:
        with self.sessions() as s, s.begin():
            s.execute(delete(PageReadersRow).where(PageReadersRow.space == space))
            s.execute(delete(SpaceViewersRow).where(SpaceViewersRow.space == space))
