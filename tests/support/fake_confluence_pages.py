"""The pages the local Confluence serves: loaded from a folder of JSON files, or a small tree for tests."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


@dataclass
class FakePage:
    id: str
    space: str
    title: str
    body: str
    version: int = 1
    parent_id: str | None = None
    labels: list[str] = field(default_factory=list)
    last_modified: datetime = field(default_factory=lambda: datetime(2024, 11, 15, tzinfo=UTC))
    url: str = ""  # the page's web URL; derived from the public base when empty
    ancestor_titles: list[str] = field(default_factory=list)  # a breadcrumb without pages behind it
    # the page's own read restriction (users by username, groups by name); both empty: none, it inherits
    read_users: list[str] = field(default_factory=list)
    read_groups: list[str] = field(default_factory=list)
    status: str = "current"  # or "archived" (listed by Cloud v2 unless asked for current only), "draft"
    kind: str = "page"  # or "folder" (Cloud): in the page tree, never in a page listing, without a body
    last_editor: str = ""  # who saved the current version (a username); "": v1 replies carry no `version.by`


# ----- a small wiki for tests -----
def tree_wiki(space: str = "DOCS", *, extra_pages: int = 0) -> list[FakePage]:
    """Home > Team > (Meeting notes, Policies > On-call), plus `extra_pages` more under Home."""

    def page(
        pid: str, title: str, text: str, parent: str | None, labels: list[str] | None = None
    ) -> FakePage:
        body = f"<h2>{title}</h2><p>{text}</p>"
        return FakePage(id=pid, space=space, title=title, body=body, parent_id=parent, labels=labels or [])

    pages = [
        page("100", "Home", "Welcome to the team wiki.", None),
        page("110", "Team", "Who we are and how we work.", "100"),
        page("111", "Meeting notes", "We meet every Monday at 10:00 in room Kepler.", "110"),
        page("112", "Policies", "Rules everyone follows.", "110"),
        page("113", "On-call", "The on-call engineer answers pages within 15 minutes.", "112", ["policy"]),
        page("120", "Draft ideas", "Half-baked plans for next year.", "100", ["draft"]),
    ]
    pages += [
        page(str(1000 + i), f"Note {i}", f"Note number {i} talks about topic {i}.", "100")
        for i in range(extra_pages)
    ]
    return pages


# ----- loading page files -----
def load_pages(folder: Path) -> list[FakePage]:
    """Pages from every *.json file in `folder` (ConfQuestions' shape or ours)."""
    pages = []
    for path in sorted(Path(folder).glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for item in doc if isinstance(doc, list) else [doc]:
            pages.append(_page_from_doc(item, path))
    return pages


def _page_from_doc(doc: dict[str, Any], path: Path) -> FakePage:
    body = doc.get("body") or doc.get("content")
    if body is None and path.with_suffix(".xml").exists():
        body = path.with_suffix(".xml").read_text(encoding="utf-8")
    when = doc.get("last_modified") or doc.get("date") or "2024-11-15"
    modified = datetime.fromisoformat(str(when).replace("Z", "+00:00"))
    url_id = re.search(r"/pages/(\d+)", str(doc.get("url", "")))  # Confluence ids are numbers, as in the URL
    return FakePage(
        id=url_id.group(1) if url_id else str(doc.get("id", path.stem)),
        space=str(doc.get("space", "DOCS")),
        title=str(doc["title"]),
        body=body or "",
        version=int(doc.get("version", 1)),
        parent_id=str(doc["parent_id"]) if doc.get("parent_id") else None,
        labels=list(doc.get("labels", [])),
        last_modified=modified if modified.tzinfo else modified.replace(tzinfo=UTC),
        url=str(doc.get("url", "")),
        ancestor_titles=[str(t) for t in doc.get("ancestors", [])],
        read_users=[str(u) for u in doc.get("read_users", [])],
        read_groups=[str(g) for g in doc.get("read_groups", [])],
        last_editor=str(doc.get("last_editor", "")),
    )


# ----- the CQL subset the client uses -----
def cql_matches(
    pages: list[FakePage],
    cql: str,
    *,
    ancestors: Callable[[FakePage], list[FakePage]],
    user_utc_offset: timedelta,
) -> list[FakePage]:
    """Pages matching `clause and clause ...`; raises ValueError on anything outside the subset.

    Dates are read in the user's zone (`user_utc_offset`), as Confluence reads them in the token user's.
    """
    clauses = re.split(r"\s+and\s+", cql.strip(), flags=re.I)
    tests = [_cql_clause(c.strip(), ancestors, user_utc_offset) for c in clauses]
    return [p for p in pages if all(t(p) for t in tests)]


def _cql_clause(
    clause: str, ancestors: Callable[[FakePage], list[FakePage]], offset: timedelta
) -> Callable[[FakePage], bool]:
    m = re.fullmatch(r"(\w+)\s*(=|>=|>|<=|<|in)\s*(.+)", clause, flags=re.I)
    if not m:
        raise ValueError(f"cannot parse CQL clause {clause!r}")
    name, op, raw = m.group(1).lower(), m.group(2).lower(), m.group(3).strip()
    values = [v.strip().strip('"') for v in raw.strip("()").split(",")] if op == "in" else [raw.strip('"')]
    if name == "space" and op in ("=", "in"):
        return lambda p: p.space in values
    if name == "type" and op == "=":
        return lambda p: values[0] == "page"
    if name == "label" and op in ("=", "in"):
        return lambda p: bool(set(values) & set(p.labels))
    if name == "id" and op in ("=", "in"):
        return lambda p: p.id in values
    if name == "ancestor" and op in ("=", "in"):
        return lambda p: any(a.id in values for a in ancestors(p))
    if name == "lastmodified" and op in (">=", ">"):
        since = _cql_date(values[0], offset)
        return (lambda p: p.last_modified >= since) if op == ">=" else (lambda p: p.last_modified > since)
    raise ValueError(f"unsupported CQL clause {clause!r}")


def _cql_date(text: str, offset: timedelta) -> datetime:
    for fmt in ("%Y/%m/%d %H:%M", "%Y-%m-%d %H:%M", "%Y/%m/%d", "%Y-%m-%d"):
        try:
            local = datetime.strptime(text, fmt)
        except ValueError:
            continue
        return local.replace(tzinfo=UTC) - offset
    raise ValueError(f"cannot parse CQL date {text!r}")
