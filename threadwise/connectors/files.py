"""Load a folder of page files (JSON) into Pages: the shipped sample wiki, or the ConfQuestions benchmark.

Two shapes are read, both one JSON object per file:

- ConfQuestions: `id`, `title`, `url`, `space`, `date`, `content` (storage format).
- Threadwise's sample wiki: the same keys plus optional `version`, `ancestors` (breadcrumb titles, root
  first), `labels`, `last_modified` (ISO 8601) and `last_editor` (a name; or the REST API's `version.by`).

The page id is Confluence's numeric id taken from the URL (`/pages/<digits>/`) when there is one, so it
matches the ids of a live Confluence and the gold URLs of the benchmark; otherwise the file's `id`. A file
that cannot be read becomes a PageFailure, never an exception.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from threadwise.core.types import Page, PageFailure

SAMPLE_WIKI_DIR = Path(__file__).resolve().parent.parent / "sample_wiki"  # the pages shipped with the package

_PAGE_ID_IN_URL = re.compile(r"/pages/(\d+)(?:[/?#]|$)")
_PAGE_ID_PARAM = re.compile(r"[?&]pageId=(\d+)")


def page_id_from_url(url: str) -> str | None:
    """Confluence's page id inside a page URL (".../pages/36503555/Title" or "...?pageId=36503555")."""
    match = _PAGE_ID_IN_URL.search(url) or _PAGE_ID_PARAM.search(url)
    return match.group(1) if match else None


def load_pages(folder: Path | str) -> tuple[list[Page], list[PageFailure]]:
    """Read every `*.json` file in `folder` (sorted by name) into a Page; bad files are reported, not raised.

    A missing folder is the caller's error and raises FileNotFoundError.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no such folder of pages: {folder}")
    pages: list[Page] = []
    failures: list[PageFailure] = []
    seen: dict[str, str] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            page = page_from_json(json.loads(path.read_text(encoding="utf-8")), fallback_id=path.stem)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as error:
            failures.append(
                PageFailure(page_id=path.stem, title=path.name, reason=f"unreadable page file: {error}")
            )
            continue
        if page.id in seen:
            reason = f"duplicate page id {page.id} (already read from {seen[page.id]})"
            failures.append(PageFailure(page_id=page.id, title=page.title, reason=reason))
            continue
        seen[page.id] = path.name
        pages.append(page)
    return pages, failures


def page_from_json(data: Any, *, fallback_id: str = "") -> Page:
    """Build a Page from one decoded JSON object of either shape; raise ValueError if it is not a page."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    body = data.get("content", data.get("body"))
    if not isinstance(body, str):
        raise ValueError("no 'content' string (the page body in storage format)")
    url = _text(data, "url")
    page_id = page_id_from_url(url) or _text(data, "id") or fallback_id
    if not page_id:
        raise ValueError("no page id: neither a /pages/<id>/ URL nor an 'id'")
    version = data.get("version", 1)
    editor = _text(data, "last_editor")
    if isinstance(version, dict):  # the REST API's {"number": 7, "by": {"displayName": ...}, ...}
        editor = editor or user_name(version.get("by"))
        version = version.get("number", 1)
    try:
        version = int(version)
    except (TypeError, ValueError) as error:
        raise ValueError(f"'version' is not a number: {version!r}") from error
    return Page(
        id=page_id,
        space=_text(data, "space"),
        title=_text(data, "title") or page_id,
        url=url,
        body=body,
        version=version,
        last_modified=_text(data, "last_modified") or _text(data, "date"),
        ancestors=_titles(data.get("ancestors")),
        labels=_titles(data.get("labels")),
        last_editor=editor,
    )


def user_name(user: Any) -> str:
    """The name a v1 user object shows: `displayName` (Data Center and Cloud), else Cloud's `publicName`, else
    Data Center's `username`; "" when there is none."""
    if not isinstance(user, dict):
        return ""
    return str(user.get("displayName") or user.get("publicName") or user.get("username") or "").strip()


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return str(value).strip() if value is not None else ""


def _titles(value: Any) -> tuple[str, ...]:
    """A list of strings, or of objects with a 'title'/'name' (as the REST API gives ancestors and labels)."""
    if not isinstance(value, list):
        return ()
    out = []
    for item in value:
        text = (item.get("title") or item.get("name")) if isinstance(item, dict) else item
        if text:
            out.append(str(text))
    return tuple(out)
