"""Where a Confluence Cloud page sits: the chain of its ancestors, folders included.

REST v2 page listings name each page's parent (`parentId`, `parentType`) but carry no breadcrumb, and never
hold folders (v2 OpenAPI: a parent may be a page, whiteboard, database, embed or folder). The chain of listed
parents therefore stops at the first folder; above it, `/{type}s/{id}/ancestors` gives the rest, folders and
pages, top to bottom. Read restrictions above a folder apply below it, so the whole chain is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from threadwise.connectors.confluence_rest import ConfluenceError, RestSession
from threadwise.core.types import PageRef

PAGE_SIZE = 250  # v2's largest `limit`
# Cloud v2 content that may hold pages (ParentContentType, AncestorType) -> its path: each has `/ancestors`
V2_CONTAINERS = {
    "page": "pages",
    "folder": "folders",
    "whiteboard": "whiteboards",
    "database": "databases",
    "embed": "embeds",
}

Chain = tuple[tuple[str, str], ...]  # (id, title) of each ancestor, root first


def refs_from_parents(rows: list[dict[str, Any]], outside: Callable[[str, str], Chain]) -> list[PageRef]:
    """Cloud v2 listings name each page's parent; the breadcrumb is the chain of listed parents, topped by
    `outside(id, type)`: the chain down to and including the first parent that is not a listed page."""
    by_id = {str(r["id"]): r for r in rows}
    refs = []
    for r in rows:
        chain: list[dict[str, Any]] = []
        top = r
        parent = by_id.get(str(r.get("parentId") or ""))
        while parent is not None and parent not in chain and parent is not r:
            chain.insert(0, parent)
            top = parent
            parent = by_id.get(str(parent.get("parentId") or ""))
        above: Chain = ()
        if parent is None and top.get("parentId"):
            above = outside(str(top["parentId"]), str(top.get("parentType") or "page"))
        ids = tuple(pid for pid, _ in above) + tuple(str(a["id"]) for a in chain)
        refs.append(
            PageRef(
                id=str(r["id"]),
                title=r.get("title", ""),
                version=int((r.get("version") or {}).get("number", 0)),
                ancestor_ids=ids,
                ancestors=tuple(t for _, t in above) + tuple(a.get("title", "") for a in chain),
            )
        )
    return refs


class CloudTree:
    """What lies above the listed pages of a Cloud space: folders (never in a page listing) and anything else
    a page may sit in. Each such parent's chain is asked once, from `/{type}s/{id}/ancestors` (top to bottom,
    the nearest `limit`: asked again from the topmost until the root), and each title once."""

    def __init__(self, rest: RestSession, space: str, rows: list[dict[str, Any]]) -> None:
        self.rest, self.space = rest, space
        self.titles = {str(r["id"]): str(r.get("title", "")) for r in rows}
        self.chains: dict[str, Chain] = {}

    def chain(self, node_id: str, node_type: str) -> Chain:
        """The ancestors of `node_id` and itself, root first; raises ConfluenceError when they cannot be read:
        a page whose ancestors are unknown must not be taken as unrestricted."""
        if node_id not in self.chains:
            nodes = [*self._ancestors(node_id, node_type), (node_id, node_type)]
            self.chains[node_id] = tuple((nid, self._title(nid, kind)) for nid, kind in nodes)
        return self.chains[node_id]

    def _ancestors(self, node_id: str, node_type: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        while True:
            path = f"api/v2/{_container(node_type, node_id)}/{node_id}/ancestors"
            what = f"the ancestors of {node_type} {node_id}"
            reply = self.rest.get_json(path, {"limit": PAGE_SIZE}, what=what, space=self.space)
            batch = [(str(a["id"]), str(a.get("type") or "page")) for a in reply.get("results", [])]
            if {nid for nid, _ in batch} & {nid for nid, _ in found}:  # a loop: never ask forever
                raise ConfluenceError(
                    f"Confluence gave a circular chain of ancestors for {node_type} {node_id}"
                )
            found = batch + found
            if len(batch) < PAGE_SIZE:
                return found
            node_id, node_type = batch[0]

    def _title(self, node_id: str, node_type: str) -> str:
        if node_id not in self.titles:
            path = f"api/v2/{_container(node_type, node_id)}/{node_id}"
            r = self.rest.get_json(path, {}, what=f"{node_type} {node_id}", space=self.space)
            self.titles[node_id] = str(r.get("title") or "")
        return self.titles[node_id]


def _container(node_type: str, node_id: str) -> str:
    path = V2_CONTAINERS.get(node_type)
    if path is None:
        raise ConfluenceError(
            f"Confluence put content under {node_type} {node_id}, a kind Threadwise does not know: its "
            "restrictions cannot be checked, so the space is not synced"
        )
    return path
