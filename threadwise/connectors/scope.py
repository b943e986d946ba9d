"""What part of a space is synced: the whole space or the pages under one parent, minus excluded labels."""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass

from threadwise.core.types import PageRef


@dataclass(frozen=True)
class SpaceScope:
    space: str
    parent_id: str | None = None  # the parent page itself is included
    exclude_labels: frozenset[str] = frozenset()

    @classmethod
    def of(cls, space: str, parent_id: str | None = None, exclude_labels: Iterable[str] = ()) -> SpaceScope:
        return cls(space=space, parent_id=parent_id or None, exclude_labels=frozenset(exclude_labels))

    def includes(self, page: PageRef, *, labelled: Set[str] = frozenset()) -> bool:
        """`labelled`: ids of the pages that carry an excluded label (a page's own labels; not inherited)."""
        under_parent = (
            self.parent_id is None or self.parent_id == page.id or self.parent_id in page.ancestor_ids
        )
        return under_parent and page.id not in labelled

    def describe(self) -> str:
        """'DOCS', 'DOCS under page 123', 'DOCS without labels draft, obsolete'."""
        text = self.space + (f" under page {self.parent_id}" if self.parent_id else "")
        if self.exclude_labels:
            text += " without labels " + ", ".join(sorted(self.exclude_labels))
        return text
