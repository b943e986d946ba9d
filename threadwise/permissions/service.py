"""Scopes for askers under each policy (see `PermissionService.scope_for`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from threadwise.core.types import Scope
from threadwise.db.permission_tables import (
    ConfluenceGroupRow,
    ConfluenceUserRow,
    PageReadersRow,
    SpaceViewersRow,
)
from threadwise.db.sync_tables import SyncedSpaceRow
from threadwise.permissions.email_map import SETTING as EMAIL_MAP_SETTING
from threadwise.permissions.email_map import EmailMap, EmailMapFile


@dataclass(frozen=True)
class Asker:
    """Who asks: their chat e-mail (None when unknown), and whether the conversation is private (a Slack DM or
    Teams personal chat: nobody else sees the answer)."""

    email: str | None
    private: bool


@dataclass(frozen=True)
class Reader:
    """A Confluence account as permissions name it: its ids (one, normally) and the groups it is in."""

    user_ids: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def passes(self, level: dict[str, Any]) -> bool:
        """Whether this reader passes one restricted level (a level that could not be read: nobody does)."""
        if level.get("error"):
            return False
        return bool(
            self.user_ids & set(level.get("users") or ()) or self.groups & set(level.get("groups") or ())
        )


NOBODY = Reader()

# What an unmapped asker may read (the fallback), and what they are told when that found nothing
FALLBACK = "pages anonymous users may read and the open pages of spaces an admin declared 'everyone may view'"
UNMAPPED_NOTE = (
    "I couldn't match you to a Confluence account ({why}), so I only looked in what anyone may read here. "
    "If you have a Confluence account, ask an admin to map it (" + EMAIL_MAP_SETTING + ")."
)


class PermissionService:
    """The scope each asker may read, from the readers stored in the database.

    - `open-pages` and `off`: the asker changes nothing (restricted pages were never indexed, or the wiki is
      public): the scope is the conversation's spaces.
    - `per-user`, private conversation: every page the asker can read (spaces they may view, restricted pages
      whose every restricted level names them or one of their groups), plus the spaces the admin declared
      "everyone with access to the bot may view" (their unrestricted pages). An unknown or unmapped asker
      (no chat e-mail, or one no Confluence account has: Cloud hides addresses, CONFCLOUD-72205, unless the
      admin's THREADWISE_CONFLUENCE_EMAILS file maps it) reads what anonymous users may, plus those declared
      spaces: what anyone in a channel gets, so mapping nobody never shows more than a channel would.
    - `per-user`, any other conversation: only unrestricted pages of the declared spaces.
    What cannot be read from Confluence (an error stored instead of readers) is readable by nobody here.
    """

    def __init__(
        self, *, policy: str, sessions: sessionmaker[Session], email_map: EmailMapFile | None = None
    ) -> None:
        self.policy = policy
        self.sessions = sessions
        self.email_map = email_map

    def mapping(self) -> EmailMap:
        """The admin's account → e-mail file as it reads now (empty without THREADWISE_CONFLUENCE_EMAILS)."""
        return self.email_map.current() if self.email_map is not None else EmailMap()

    @property
    def per_user(self) -> bool:
        return self.policy == "per-user"

    def scope_for(self, asker: Asker | None, spaces: Sequence[str] | None = None) -> Scope:
        """What `asker` may read among `spaces` (None: every synced space). None as asker: unknown person in
        a conversation that is not private."""
        if not self.per_user:
            return Scope.of(spaces)
        private = asker is not None and asker.private
        with self.sessions() as s:
            viewers = {r.space: r for r in s.scalars(select(SpaceViewersRow))}
            declared = set(
                s.scalars(select(SyncedSpaceRow.key).where(SyncedSpaceRow.everyone_may_view.is_(True)))
            )
            restricted = s.execute(
                select(PageReadersRow.page_id, PageReadersRow.space, PageReadersRow.levels).where(
                    PageReadersRow.restricted.is_(True)
                )
            ).all()
            reader = self._reader(s, asker.email if asker else None) if private else NOBODY
        public = {sp for sp in declared if sp in viewers and not viewers[sp].error}
        allowed = set(public)
        if private:
            allowed |= {sp for sp, row in viewers.items() if _may_view(reader, row)}
        if spaces is not None:
            allowed &= set(spaces)
        hidden = (
            pid
            for pid, space, levels in restricted
            if space in allowed and not (private and all(reader.passes(lv) for lv in levels or ()))
        )
        ordered = [sp for sp in spaces] if spaces is not None else sorted(allowed)
        return Scope.of([sp for sp in ordered if sp in allowed], hidden)

    def may_read(self, asker: Asker | None, page_ids: Iterable[str]) -> bool:
        """Whether `asker` may read every one of these pages here (a cached answer's sources, say)."""
        ids = set(page_ids)
        if not self.per_user or not ids:
            return True
        with self.sessions() as s:
            spaces = dict(
                s.execute(
                    select(PageReadersRow.page_id, PageReadersRow.space).where(
                        PageReadersRow.page_id.in_(ids)
                    )
                ).all()
            )
        if set(spaces) != ids:  # a page without stored readers: nobody may read it here
            return False
        scope = self.scope_for(asker, sorted(set(spaces.values())))
        return all(scope.allows(space, pid) for pid, space in spaces.items())

    def reader(self, email: str | None) -> Reader:
        """The Confluence account behind a chat e-mail and its groups; NOBODY when it cannot be mapped."""
        with self.sessions() as s:
            return self._reader(s, email)

    def _reader(self, s: Session, email: str | None) -> Reader:
        address = (email or "").strip().lower()
        if not address:
            return NOBODY
        ids = set(s.scalars(select(ConfluenceUserRow.user_id).where(ConfluenceUserRow.email == address)))
        accounts = self.mapping().accounts_of(address)
        if accounts:  # account ids or user keys as they are; Data Center usernames through the stored users
            ids |= accounts
            ids |= set(
                s.scalars(select(ConfluenceUserRow.user_id).where(ConfluenceUserRow.username.in_(accounts)))
            )
        if not ids:
            return NOBODY
        groups = frozenset(
            g.group_id
            for g in s.scalars(select(ConfluenceGroupRow))
            if not g.error and ids & set(g.members or ())
        )
        return Reader(frozenset(ids), groups)

    def unmapped_note(self, asker: Asker | None) -> str | None:
        """Why a private asker got only the fallback (per-user, and no Confluence account matched); None when
        they were matched, or the conversation is not private (a channel reads the same for everyone)."""
        if not self.per_user or asker is None or not asker.private:
            return None
        address = (asker.email or "").strip()
        if not address:
            return UNMAPPED_NOTE.format(why="the chat did not tell me your e-mail address")
        if self.reader(address) is NOBODY:
            return UNMAPPED_NOTE.format(why=f"no Confluence account shows the address {address}")
        return None

    def unmapped_users(self) -> list[str]:
        """Confluence users named in permissions whose e-mail Confluence did not show and the admin's file
        does not map: they cannot be matched to a chat user (Cloud hides addresses by privacy settings)."""
        mapped = set(self.mapping().emails)
        with self.sessions() as s:
            rows = s.scalars(select(ConfluenceUserRow).where(ConfluenceUserRow.email.is_(None)))
            return sorted(
                r.display_name or r.username or r.user_id
                for r in rows
                if r.user_id not in mapped and r.username not in mapped
            )


def _may_view(reader: Reader, row: SpaceViewersRow) -> bool:
    if row.error:
        return False
    return bool(
        row.anonymous or reader.user_ids & set(row.users or ()) or reader.groups & set(row.groups or ())
    )
