"""A configured space as the admin set it up: its scope and the admin's declarations."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from threadwise.connectors.scope import SpaceScope
from threadwise.db.sync_tables import SyncedSpaceRow, as_utc


@dataclass(frozen=True)
class SpaceConfig:
    key: str
    name: str
    parent_id: str | None
    exclude_labels: tuple[str, ...]
    added_at: datetime | None
    enabled: bool
    everyone_may_view: bool = False  # the admin's declaration (per-user: its open pages answer in channels)

    @property
    def scope(self) -> SpaceScope:
        return SpaceScope.of(self.key, self.parent_id, self.exclude_labels)


def space_config(row: SyncedSpaceRow) -> SpaceConfig:
    return SpaceConfig(
        key=row.key,
        name=row.name or row.key,
        parent_id=row.parent_id,
        exclude_labels=tuple(row.exclude_labels or ()),
        added_at=as_utc(row.added_at),
        enabled=row.enabled,
        everyone_may_view=bool(row.everyone_may_view),
    )
