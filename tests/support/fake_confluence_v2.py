"""Confluence Cloud's REST API v2 for the local fake (`FakeConfluence(flavor="cloud")`), in the shapes of
Atlassian's OpenAPI spec (tests/fixtures/confluence_cloud/ holds the documented replies, SOURCES.md says where
each comes from):
  GET {ctx}/api/v2/spaces?keys=                 SpaceBulk, cursor paged
  GET {ctx}/api/v2/spaces/{id}                  one space
  GET {ctx}/api/v2/spaces/{id}/pages?status=    PageBulk, current and archived unless `status` says; never
                                                folders; `parentType` page or folder
  GET {ctx}/api/v2/pages/{id}?status=           PageSingle (current and archived unless `status` says)
  GET {ctx}/api/v2/pages/{id}/ancestors         [{id, type}] top to bottom, the `limit` nearest
  GET {ctx}/api/v2/folders/{id}[/ancestors]     FolderSingle / its ancestors
Errors as v2 sends them: {"errors": [{"status", "code", "title", "detail"}]}.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.fake_confluence import FakeConfluence, FakePage

Reply = tuple[int, Any]


def space_v2(fake: FakeConfluence, key: str) -> dict[str, Any]:
    return {
        "id": fake.space_id(key),
        "key": key,
        "name": fake.space_names.get(key, key),
        "type": "personal" if key.startswith("~") else "global",
        "status": "current",
        "_links": {"webui": f"/spaces/{key}"},
    }


def page_v2(fake: FakeConfluence, page: FakePage, query: dict[str, str], *, single: bool) -> dict[str, Any]:
    """PageBulk, or PageSingle (`single`: `_links.base` too); a folder as FolderSingle."""
    parent = fake.pages.get(page.parent_id or "")
    r: dict[str, Any] = {
        "id": page.id,
        "type": page.kind,
        "status": page.status,
        "title": page.title,
        "spaceId": fake.space_id(page.space),
        "parentId": page.parent_id,
        "parentType": parent.kind if parent else ("page" if page.parent_id else None),
        "version": {
            "number": page.version,
            "createdAt": page.last_modified.isoformat(),
            "minorEdit": False,
        },
        "_links": {"webui": fake.webui(page)},
    }
    if page.last_editor:  # v2 names people by account id only; the fake's editor is author and owner too
        editor = fake.people.user_json(page.last_editor, cloud=True, with_email=False)["accountId"]
        r["version"]["authorId"] = r["authorId"] = r["ownerId"] = editor
    if page.kind == "page":
        del r["type"]  # PageBulk and PageSingle carry no type; FolderSingle does
        r["_links"]["editui"] = f"/pages/resumedraft.action?draftId={page.id}"
    if query.get("body-format") == "storage" and page.kind == "page":
        r["body"] = {"storage": {"value": page.body, "representation": "storage"}}
    if query.get("include-labels") == "true":
        results = [{"id": str(i), "name": n, "prefix": "global"} for i, n in enumerate(page.labels)]
        r["labels"] = {"results": results, "meta": {"hasMore": False}}
    if single:
        r["_links"]["base"] = fake.base
    return r


def _statuses(query: dict[str, str]) -> set[str]:
    """`status` of the page reads: current and archived when not given, as the spec says."""
    return set(filter(None, query.get("status", "").split(","))) or {"current", "archived"}


def answer_v2(fake: FakeConfluence, path: str, query: dict[str, str]) -> Reply:
    ids = {fake.space_id(k): k for k in fake.spaces()}
    if path == "/api/v2/spaces":
        keys = [k for k in query.get("keys", "").split(",") if k] or fake.spaces()
        return 200, fake.cursor_paged(path, query, [space_v2(fake, k) for k in keys if k in fake.spaces()])
    m = re.fullmatch(r"/api/v2/spaces/([^/]+)(/pages)?", path)
    if m:
        key = ids.get(m.group(1))
        if key is None:
            return _error(404, "NOT_FOUND", "Space not found")
        if key in fake.faults.forbidden_spaces:
            return _error(403, "FORBIDDEN", f"No permission to view space {key}")
        if not m.group(2):
            return 200, space_v2(fake, key)
        statuses = _statuses(query)
        pages = [
            page_v2(fake, p, query, single=False)
            for p in fake.sorted_pages(kind="page")
            if p.space == key and p.status in statuses
        ]
        return 200, fake.cursor_paged(path, query, pages)
    m = re.fullmatch(r"/api/v2/(pages|folders)/([^/]+)(/ancestors)?", path)
    if m:
        kind = "page" if m.group(1) == "pages" else "folder"
        page = fake.pages.get(m.group(2))
        statuses = _statuses(query) if kind == "page" and not m.group(3) else {"current", "archived"}
        if page is None or page.kind != kind or page.status not in statuses:
            return _error(404, "NOT_FOUND", f"No content found with id : {m.group(2)}")
        if page.space in fake.faults.forbidden_spaces:
            return _error(403, "FORBIDDEN", "No permission")
        if m.group(3):
            limit = max(1, min(int(query.get("limit", 25)), 250))
            chain = fake.ancestors(page)[-limit:]
            return 200, {"results": [{"id": a.id, "type": a.kind} for a in chain], "_links": {}}
        if page.id in fake.faults.broken_pages:
            return _error(500, "INTERNAL_SERVER_ERROR", "Internal server error")
        return 200, page_v2(fake, page, query, single=True)
    return _error(404, "NOT_FOUND", f"null for uri: {path}")


def _error(status: int, code: str, title: str) -> Reply:
    return status, {"errors": [{"status": status, "code": code, "title": title, "detail": None}]}
