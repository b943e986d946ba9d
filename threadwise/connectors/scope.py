"""What part of a space is synced: the whole space or the pages under one parent, minus excluded labels."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from threadwise.connectors.confluence import PageRef


@dataclass(frozen=True)
class SpaceScope:
    space: str
    parent_id: str | None = None  # the parent page itself is included
    exclude_labels: frozenset[str] = frozenset()

    @classmethod
    def of(cls, space: str, parent_id: str | None = None, exclude_labels: Iterable[str] = ()) -> SpaceScope:
        return cls(space=space, parent_id=parent_id or None, exclude_labels=frozenset(exclude_labels))

    def includes(self, page: PageRef) -> bool:
        if (
            self.parent_id is not None
            and self.parent_id != page.id
            and self.parent_id not in page.ancestor_ids
        ):
            return False
        return not (self.exclude_labels & set(page.labels))

    def describe(self) -> str:
        """'DOCS', 'DOCS under page 123', 'DOCS without labels draft, obsolete'."""
        text = self.space + (f" under page {self.parent_id}" if self.parent_id else "")
        if self.exclude_labels:
            text += " without labels " + ", ".join(sorted(self.exclude_labels))
        return text
