"""Confluence Cloud and Server/Data Center as `Page`s: the few reads Threadwise needs, one narrow client.

Data Center (and Server) speak REST API v1 under the context path: `/rest/api/space`, `/rest/api/content`
with `expand`. Confluence Cloud has deprecated those v1 reads in favour of API v2, so on Cloud spaces, page
listings and pages come from `/wiki/api/v2/...` (cursor paging). v2 pages carry no breadcrumb: ancestors come
from the listing's parent ids, and where a parent is not a listed page (a folder, which the page listing never
holds, or a whiteboard, database, embed) from that parent's `/ancestors` (folders and pages, top to bottom),
so restrictions above a folder are seen. Only current pages are listed or fetched: archived ones are left
out (Cloud lists current and archived by default). CQL search exists only in v1 and serves both. A page's
last editor is v1's `version.by` (its display name); v2 names people only by account id (`version.authorId`),
whose display name Cloud's v1 `rest/api/user` gives, read once per id. Neither names a page's owner by name.
`Confluence(cloud=True)` in atlassian-python-api 5.0.5 is a different class without `get_page_by_id`; we do
not depend on either class's helpers, only on the authenticated GETs of `RestSession`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from threadwise.connectors.confluence_cloud_tree import CloudTree, refs_from_parents
from threadwise.connectors.confluence_permissions import Directory, PermissionReader
from threadwise.connectors.confluence_rest import (
    NOT_CONFIGURED,
    ConfluenceAccessError,
    ConfluenceConfigError,
    ConfluenceError,
    ConfluenceNotFound,
    ConfluenceReplyError,
    ConfluenceSettings,
    ConfluenceUnavailableError,
    RestSession,
)
from threadwise.connectors.files import user_name
from threadwise.core.types import Page, PageFailure, PageRef, RestrictedPage

__all__ = [
    "NOT_CONFIGURED",
    "PAGE_ARCHIVED",
    "PAGE_NOT_FOUND",
    "ConfluenceAccessError",
    "ConfluenceClient",
    "ConfluenceConfigError",
    "ConfluenceError",
    "ConfluenceSettings",
    "ConfluenceUnavailableError",
    "PageRef",
    "RestrictedPage",
    "SpaceInfo",
]

PAGE_NOT_FOUND = "not found (deleted, or no permission)"  # the reason of a PageFailure for a 404
V1_PAGE_SIZE = 100  # Data Center caps v1 listings at 100 (or less) per request anyway
V2_PAGE_SIZE = 250  # Cloud v2 allows up to 250
PAGE_ARCHIVED = "archived (or no longer current) since the listing"  # a PageFailure's reason: drop it


@dataclass(frozen=True)
class SpaceInfo:
    key: str
    name: str
    type: str = "global"  # or "personal"
    id: str = ""  # Cloud v2's numeric space id


class ConfluenceClient:
    """Spaces, page listings, changes and pages, with bounded retries; Cloud and Server/DC alike. A `PageSource`."""

    def __init__(self, *, settings: ConfluenceSettings) -> None:
        self.settings = settings
        self._rest = RestSession(settings)
        self._cloud_spaces: dict[str, SpaceInfo] = {}  # key -> space, and id -> space (Cloud needs the id)
        self._names: dict[str, str] = {}  # Cloud account id -> display name ("" when it cannot be read)

    def __repr__(self) -> str:
        return f"ConfluenceClient({self.settings.shown_url!r}, cloud={self.settings.is_cloud})"

    def close(self) -> None:
        self._rest.close()

    # ----- spaces -----
    def list_spaces(self) -> list[SpaceInfo]:
        """Every space the credentials can see."""
        if self.settings.is_cloud:
            rows = self._rest.paged("api/v2/spaces", {"limit": V2_PAGE_SIZE}, what="the list of spaces")
            return [self._remember(_space(r)) for r in rows]
        rows = self._rest.paged("rest/api/space", {"limit": V1_PAGE_SIZE}, what="the list of spaces")
        return [_space(r) for r in rows]

    def get_space(self, key: str) -> SpaceInfo | None:
        """The space, or None when it does not exist (or the credentials cannot see it)."""
        what = f"space {key}"
        if self.settings.is_cloud:
            rows = list(self._rest.paged("api/v2/spaces", {"keys": key}, what=what, space=key))
            found = [r for r in rows if r.get("key") == key]
            return self._remember(_space(found[0])) if found else None
        try:
            return _space(self._rest.get_json(f"rest/api/space/{key}", {}, what=what, space=key))
        except ConfluenceNotFound:
            return None

    def _remember(self, space: SpaceInfo) -> SpaceInfo:
        self._cloud_spaces[space.key] = self._cloud_spaces[space.id] = space
        return space

    def _cloud_space(self, key: str) -> SpaceInfo:
        space = self._cloud_spaces.get(key) or self.get_space(key)
        if space is None:
            raise ConfluenceNotFound(f"Confluence has no space {key}")
        return space

    # ----- listings -----
    def list_pages(self, space: str) -> list[PageRef]:
        """All current pages of a space, without bodies: ids, titles, versions, breadcrumbs."""
        what = f"pages of {space}"
        if self.settings.is_cloud:
            path = f"api/v2/spaces/{self._cloud_space(space).id}/pages"
            params = {"limit": V2_PAGE_SIZE, "status": "current"}
            rows = self._rest.paged(path, params, what=what, space=space)
            listed = [r for r in rows if r.get("status", "current") == "current"]  # never archived ones
            return refs_from_parents(listed, CloudTree(self._rest, space, listed).chain)
        params = {"spaceKey": space, "type": "page", "status": "current", "expand": "version,ancestors"}
        rows = self._rest.paged("rest/api/content", {**params, "limit": V1_PAGE_SIZE}, what=what, space=space)
        return [_v1_ref(r) for r in rows if r.get("status", "current") == "current"]

    def pages_modified_since(self, space: str, since: datetime, *, overlap: timedelta) -> list[PageRef]:
        """Pages of `space` modified at or after `since - overlap` (ids and versions), through CQL.

        CQL reads dates in the token user's time zone, not UTC, so `overlap` must cover the largest
        UTC offset (14 h) plus clock skew; the caller compares versions, so an overlap costs little.
        """
        start = (since - overlap).strftime("%Y/%m/%d %H:%M")
        rows = self._cql(f'space = "{space}" and type = page and lastmodified >= "{start}"', space, "changes")
        return [_v1_ref(r) for r in rows]

    def pages_with_labels(self, space: str, labels: Iterable[str]) -> set[str]:
        """Ids of the pages of `space` that carry any of `labels` (labels change without a new version)."""
        wanted = sorted(set(labels))
        if not wanted:
            return set()
        quoted = ", ".join(f'"{label}"' for label in wanted)
        rows = self._cql(
            f'space = "{space}" and type = page and label in ({quoted})', space, "labelled pages"
        )
        return {str(r["id"]) for r in rows}

    def _cql(self, cql: str, space: str, what: str) -> list[dict[str, Any]]:
        path = "rest/api/content/search"
        params = {"cql": cql, "expand": "version", "limit": V1_PAGE_SIZE}
        rows = self._rest.paged(path, params, what=f"{what} in {space}", space=space)
        return [r for r in rows if r.get("type", "page") == "page"]

    # ----- read restrictions -----
    def restricted_pages(
        self, refs: Sequence[PageRef], *, space: str, workers: int = 4
    ) -> list[RestrictedPage]:
        """The pages of `refs` with a read restriction on themselves or on any ancestor, in `refs` order.

        A page is readable only by those who pass every restricted level, so one restricted level is enough.
        A level whose restrictions cannot be read (403, 500, any error) counts as restricted, never as open.
        Each page and ancestor is asked once, by `workers` threads (REST v1 on Data Center and Cloud alike).
        """
        readers = self.permissions.page_readers(refs, space=space, directory=Directory(), workers=workers)
        titles = {
            pid: title for ref in refs for pid, title in zip(ref.ancestor_ids, ref.ancestors, strict=False)
        }
        found = []
        for r in readers:
            if r.levels:
                level = r.levels[0]
                why = level.error or "read restriction"
                where = (
                    "the page itself"
                    if level.page_id == r.page_id
                    else f"its ancestor {titles.get(level.page_id, level.page_id)!r}"
                )
                found.append(RestrictedPage(r.page_id, r.title, f"{why} on {where}"))
        return found

    @property
    def permissions(self) -> PermissionReader:
        """Who may read what: restrictions with their users and groups, space permissions, group members."""
        return PermissionReader(rest=self._rest, cloud=self.settings.is_cloud)

    def space_id(self, key: str) -> str:
        """Cloud's numeric id of a space (v2 paths name spaces by id); "" on Data Center."""
        return self._cloud_space(key).id if self.settings.is_cloud else ""

    # ----- pages -----
    def get_page(
        self, page_id: str, *, space: str = "", ancestors: Sequence[str] | None = None
    ) -> Page | PageFailure:
        """One page with its storage body, or a failure value (deleted, keeps failing, unusable reply).

        On Cloud, v2 pages carry no breadcrumb: pass `ancestors` from the listing (Data Center reads its own).
        """
        what = f"page {page_id}" + (f" in space {space}" if space else "")
        cloud = self.settings.is_cloud
        if cloud:
            path = f"api/v2/pages/{page_id}"
            params = {"body-format": "storage", "include-labels": "true", "status": "current"}
        else:
            path, params = (
                f"rest/api/content/{page_id}",
                {"expand": "body.storage,version,ancestors,metadata.labels,space"},
            )
        try:
            r = self._rest.get_json(path, params, what=what, space=space)
            if r.get("status", "current") != "current":
                return PageFailure(page_id=page_id, title=str(r.get("title", "")), reason=PAGE_ARCHIVED)
            return self._v2_page(r, space, ancestors) if cloud else self._v1_page(r, space)
        except ConfluenceNotFound:
            return PageFailure(page_id=page_id, title="", reason=PAGE_NOT_FOUND)
        except (ConfluenceUnavailableError, ConfluenceReplyError) as e:
            return PageFailure(page_id=page_id, title="", reason=str(e))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            return PageFailure(page_id=page_id, title="", reason=f"unexpected reply from Confluence: {e!r}")

    def _v1_page(self, r: dict[str, Any], space: str) -> Page:
        version = r.get("version", {})
        labels = r.get("metadata", {}).get("labels", {}).get("results", [])
        return Page(
            id=str(r["id"]),
            space=r.get("space", {}).get("key") or space,
            title=r["title"],
            url=self._web_url(r),
            body=r["body"]["storage"]["value"],
            version=int(version.get("number", 1)),
            last_modified=version.get("when", ""),
            ancestors=tuple(a["title"] for a in r.get("ancestors", [])),
            labels=tuple(lbl["name"] for lbl in labels),
            last_editor=user_name(version.get("by")),
        )

    def _v2_page(self, r: dict[str, Any], space: str, ancestors: Sequence[str] | None) -> Page:
        version = r.get("version", {})
        space_id = str(r.get("spaceId", ""))
        if not space and space_id:
            known = self._cloud_spaces.get(space_id)
            space = known.key if known else self._space_key_by_id(space_id)
        return Page(
            id=str(r["id"]),
            space=space,
            title=r["title"],
            url=self._web_url(r),
            body=r["body"]["storage"]["value"],
            version=int(version.get("number", 1)),
            last_modified=version.get("createdAt", ""),
            ancestors=tuple(ancestors or ()),
            labels=tuple(lbl["name"] for lbl in r.get("labels", {}).get("results", [])),
            last_editor=self._display_name(str(version.get("authorId") or "")),
        )

    def _display_name(self, account_id: str) -> str:
        """Cloud v2 names people by account id only: the display name from v1's user read, once per id;
        "" when the user cannot be read (deactivated, no permission, Confluence failing)."""
        if account_id and account_id not in self._names:
            try:
                r = self._rest.get_json("rest/api/user", {"accountId": account_id}, what=f"user {account_id}")
                self._names[account_id] = user_name(r)
            except ConfluenceError:
                self._names[account_id] = ""
        return self._names.get(account_id, "")

    def _space_key_by_id(self, space_id: str) -> str:
        r = self._rest.get_json(f"api/v2/spaces/{space_id}", {}, what=f"space {space_id}")
        return self._remember(_space(r)).key

    def _web_url(self, r: dict[str, Any]) -> str:
        links = r.get("_links", {})
        base = links.get("base") or self.settings.web_base
        return base.rstrip("/") + (links.get("webui") or f"/pages/viewpage.action?pageId={r['id']}")


def _space(r: dict[str, Any]) -> SpaceInfo:
    return SpaceInfo(
        key=r["key"], name=r.get("name") or r["key"], type=r.get("type", "global"), id=str(r.get("id", ""))
    )


def _v1_ref(r: dict[str, Any]) -> PageRef:
    ancestors = r.get("ancestors", [])
    return PageRef(
        id=str(r["id"]),
        title=r.get("title", ""),
        version=int(r.get("version", {}).get("number", 0)),
        ancestor_ids=tuple(str(a["id"]) for a in ancestors),
        ancestors=tuple(a.get("title", "") for a in ancestors),
    )
