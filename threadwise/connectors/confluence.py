"""Confluence Cloud and Server/Data Center over REST API v1, through atlassian-python-api, as `Page`s.

One narrow client with explicit methods. Two pitfalls of atlassian-python-api 5.0.5 are avoided on purpose:
- its `_get_paged` joins a relative `_links.next` onto the site root, dropping a context path such as
  `/confluence` (page two of a listing 404s); we follow `_links.next` against our own base URL instead;
- `Confluence(cloud=True)` is a different class (Cloud v2 paths) without `get_page_by_id`; we only use the
  library's authenticated `get` with explicit v1 paths, which both set-ups share.
Retries are ours too (the library's 429 handling sleeps up to 30 minutes, once): 429 honours `Retry-After`,
5xx and timeouts back off exponentially, both bounded; 401/403 raise an error that names the space.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlparse

import requests
from atlassian.confluence import ConfluenceCloud, ConfluenceServer

from threadwise.core.page import Page, PageFailure

log = logging.getLogger(__name__)

PAGE_SIZE = 100  # Confluence caps listings at 100 results (or fewer) per request anyway
PAGE_NOT_FOUND = "not found (deleted, or no permission)"  # the reason of a PageFailure for a 404
NOT_CONFIGURED = (
    "Confluence is not configured: set CONFLUENCE_URL and either CONFLUENCE_USERNAME + CONFLUENCE_API_TOKEN "
    "(Cloud) or CONFLUENCE_PERSONAL_TOKEN (Server/Data Center)"
)
LISTING_EXPAND = "version,ancestors,metadata.labels"
PAGE_EXPAND = "body.storage,version,ancestors,metadata.labels,space"


class ConfluenceError(RuntimeError):
    """Confluence could not be used: the message says why, in words an admin can act on."""


class ConfluenceAccessError(ConfluenceError):
    """401/403: the credentials are wrong, or they give no access to the space."""


class ConfluenceUnavailableError(ConfluenceError):
    """Confluence kept failing (429, 5xx, timeouts) beyond the bounded retries."""


class _NotFound(Exception):
    pass


@dataclass(frozen=True)
class ConfluenceSettings:
    """Where Confluence is and how to sign in. Cloud: username + API token; Data Center: a personal token."""

    url: str  # site URL, with the context path if any: https://acme.atlassian.net, https://host/confluence
    username: str = ""
    api_token: str = field(default="", repr=False)
    personal_token: str = field(default="", repr=False)
    cloud: bool | None = None  # None: Cloud when the host is *.atlassian.net
    timeout: float = 30.0
    verify: bool = True
    max_retries: int = 5
    backoff_s: float = 1.0  # first wait after a 5xx or timeout; doubles on each retry
    max_wait_s: float = 60.0  # no single wait (Retry-After included) is longer than this

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ConfluenceError(f"CONFLUENCE_URL must start with http:// or https:// (got {self.url!r})")
        if not self.personal_token and not (self.username and self.api_token):
            raise ConfluenceError(
                "Confluence credentials missing: set CONFLUENCE_USERNAME and CONFLUENCE_API_TOKEN (Cloud) "
                "or CONFLUENCE_PERSONAL_TOKEN (Server/Data Center)"
            )

    @property
    def is_cloud(self) -> bool:
        if self.cloud is not None:
            return self.cloud
        host = urlparse(self.url).hostname or ""
        return host == "atlassian.net" or host.endswith(".atlassian.net")

    @property
    def base_url(self) -> str:
        """The URL the REST paths hang off: Cloud's `/wiki` is added when missing."""
        url = self.url.rstrip("/")
        if self.is_cloud and not url.endswith("/wiki"):
            url += "/wiki"
        return url

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ConfluenceSettings | None:
        """Settings from CONFLUENCE_* variables; None when CONFLUENCE_URL is not set."""
        url = env.get("CONFLUENCE_URL", "").strip()
        if not url:
            return None
        cloud_flag = env.get("CONFLUENCE_CLOUD", "").strip().lower()
        return cls(
            url=url,
            username=env.get("CONFLUENCE_USERNAME", "").strip(),
            api_token=env.get("CONFLUENCE_API_TOKEN", "").strip(),
            personal_token=env.get("CONFLUENCE_PERSONAL_TOKEN", "").strip(),
            cloud=None if not cloud_flag else cloud_flag in ("1", "true", "yes"),
            timeout=float(env.get("CONFLUENCE_TIMEOUT", "30")),
            verify=env.get("CONFLUENCE_VERIFY_SSL", "true").strip().lower() not in ("0", "false", "no"),
        )


@dataclass(frozen=True)
class SpaceInfo:
    key: str
    name: str
    type: str = "global"  # or "personal"


@dataclass(frozen=True)
class PageRef:
    """A page as a listing shows it: enough to decide scope and what changed, without the body."""

    id: str
    title: str
    version: int = 0  # 0 when the listing did not say
    ancestor_ids: tuple[str, ...] = ()  # root first
    ancestors: tuple[str, ...] = ()  # breadcrumb titles, root first
    labels: tuple[str, ...] = ()


class ConfluenceClient:
    """The few Confluence reads Threadwise needs, with bounded retries; Cloud and Server/DC alike."""

    def __init__(self, *, settings: ConfluenceSettings) -> None:
        self.settings = settings
        s = settings
        common: dict[str, Any] = {
            "timeout": s.timeout,
            "verify_ssl": s.verify,
            "retry_with_header": False,  # our retry loop honours Retry-After, with a cap
            "backoff_and_retry": False,
        }
        if s.personal_token:
            common["token"] = s.personal_token
        else:
            common.update(username=s.username, password=s.api_token)
        api_class = ConfluenceCloud if s.is_cloud else ConfluenceServer
        self._api = api_class(s.base_url, cloud=s.is_cloud, **common)
        # the constructor rounds the timeout down to whole seconds (0.5 would become 0, an error)
        self._api.timeout = s.timeout  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ConfluenceClient({self.settings.base_url!r}, cloud={self.settings.is_cloud})"

    def close(self) -> None:
        self._api.close()

    # ----- spaces -----
    def list_spaces(self) -> list[SpaceInfo]:
        """Every space the credentials can see."""
        rows = self._paged("rest/api/space", {"limit": PAGE_SIZE}, what="the list of spaces")
        return [
            SpaceInfo(key=r["key"], name=r.get("name", r["key"]), type=r.get("type", "global")) for r in rows
        ]

    def get_space(self, key: str) -> SpaceInfo | None:
        """The space, or None when it does not exist (or the credentials cannot see it)."""
        try:
            r = self._get_json(f"rest/api/space/{key}", {}, what=f"space {key}", space=key)
        except _NotFound:
            return None
        return SpaceInfo(key=r["key"], name=r.get("name", r["key"]), type=r.get("type", "global"))

    # ----- listings -----
    def list_pages(self, space: str) -> list[PageRef]:
        """All current pages of a space, without bodies: ids, titles, versions, ancestors, labels."""
        params = {"spaceKey": space, "type": "page", "status": "current", "expand": LISTING_EXPAND}
        rows = self._paged(
            "rest/api/content", {**params, "limit": PAGE_SIZE}, what=f"pages of {space}", space=space
        )
        return [_page_ref(r) for r in rows]

    def pages_modified_since(self, space: str, since: datetime, *, overlap: timedelta) -> list[PageRef]:
        """Pages of `space` modified at or after `since - overlap`, through CQL.

        CQL reads dates in the token user's time zone, not UTC, so `overlap` must cover the largest
        UTC offset (14 h) plus clock skew; the caller compares versions, so an overlap costs little.
        """
        start = (since - overlap).strftime("%Y/%m/%d %H:%M")
        cql = f'space = "{space}" and type = page and lastmodified >= "{start}"'
        params = {"cql": cql, "expand": LISTING_EXPAND, "limit": PAGE_SIZE}
        rows = self._paged("rest/api/content/search", params, what=f"changes in {space}", space=space)
        return [_page_ref(r) for r in rows if r.get("type", "page") == "page"]

    # ----- pages -----
    def get_page(self, page_id: str, *, space: str = "") -> Page | PageFailure:
        """One page with its storage body, or a failure value (deleted, keeps failing, unusable reply)."""
        what = f"page {page_id}" + (f" in space {space}" if space else "")
        try:
            r = self._get_json(f"rest/api/content/{page_id}", {"expand": PAGE_EXPAND}, what=what, space=space)
        except _NotFound:
            return PageFailure(page_id=page_id, title="", reason=PAGE_NOT_FOUND)
        except ConfluenceUnavailableError as e:
            return PageFailure(page_id=page_id, title="", reason=str(e))
        try:
            return self._page_from_json(r, space)
        except (KeyError, TypeError, ValueError) as e:
            return PageFailure(
                page_id=page_id, title=str(r.get("title", "")), reason=f"unexpected reply: {e!r}"
            )

    def _page_from_json(self, r: dict[str, Any], space: str) -> Page:
        links = r.get("_links", {})
        base = links.get("base") or self.settings.base_url
        webui = links.get("webui") or f"/pages/viewpage.action?pageId={r['id']}"
        version = r.get("version", {})
        return Page(
            id=str(r["id"]),
            space=r.get("space", {}).get("key") or space,
            title=r["title"],
            url=base.rstrip("/") + webui,
            body=r["body"]["storage"]["value"],
            version=int(version.get("number", 1)),
            last_modified=version.get("when", ""),
            ancestors=tuple(a["title"] for a in r.get("ancestors", [])),
            labels=_labels(r),
        )

    # ----- HTTP with retries -----
    def _paged(
        self, path: str, params: dict[str, Any], *, what: str, space: str = ""
    ) -> Iterator[dict[str, Any]]:
        """Yield every result of a listing, following `_links.next` against our own base URL."""
        url, query = path, params
        while True:
            try:
                reply = self._get_json(url, query, what=what, space=space)
            except _NotFound:
                raise ConfluenceError(
                    f"Confluence answered 404 for {what}: check CONFLUENCE_URL ({self.settings.base_url}), "
                    "including its context path"
                ) from None
            results = reply.get("results", [])
            yield from results
            next_link = reply.get("_links", {}).get("next")
            if not next_link or not results:
                return
            # `next` is relative to the context path (`/rest/api/...`) or, rarely, absolute
            url = (
                next_link
                if urlparse(next_link).scheme
                else self.settings.base_url + "/" + next_link.lstrip("/")
            )
            query = {}

    def _get_json(self, path: str, params: dict[str, Any], *, what: str, space: str = "") -> Any:
        s = self.settings
        absolute = bool(urlparse(path).scheme)
        for attempt in range(s.max_retries + 1):
            try:
                resp = self._api.get(path, params=params or None, absolute=absolute, advanced_mode=True)
            except (requests.Timeout, requests.ConnectionError) as e:
                wait, problem = s.backoff_s * 2**attempt, f"no reply ({type(e).__name__})"
            else:
                status = resp.status_code
                if status < 400:
                    return resp.json()
                if status in (401, 403):
                    raise ConfluenceAccessError(_access_message(status, what, space))
                if status == 404:
                    raise _NotFound(what)
                if status != 429 and status < 500:
                    raise ConfluenceError(f"Confluence refused the request for {what}: HTTP {status}")
                wait, problem = _retry_after(resp) if status == 429 else None, f"HTTP {status}"
                if wait is None:
                    wait = s.backoff_s * 2**attempt
            if attempt == s.max_retries:
                break
            wait = min(wait, s.max_wait_s)
            log.info(
                "Confluence: %s for %s; retrying in %.2fs (%d/%d)",
                problem,
                what,
                wait,
                attempt + 1,
                s.max_retries,
            )
            time.sleep(wait)
        raise ConfluenceUnavailableError(
            f"Confluence kept failing for {what} ({problem}, {s.max_retries} retries)"
        )


def _retry_after(resp: requests.Response) -> float | None:
    """Seconds from a Retry-After header (delta-seconds; fractions accepted), None if absent or a date."""
    try:
        return max(0.0, float(resp.headers.get("Retry-After", "")))
    except ValueError:
        return None


def _access_message(status: int, what: str, space: str) -> str:
    if status == 401:
        return f"Confluence rejected the credentials (HTTP 401) while reading {what}: check the URL and token"
    scope = f"space {space}" if space else what
    return f"The Confluence credentials have no access to {scope} (HTTP 403) while reading {what}"


def _labels(r: dict[str, Any]) -> tuple[str, ...]:
    return tuple(lbl["name"] for lbl in r.get("metadata", {}).get("labels", {}).get("results", []))


def _page_ref(r: dict[str, Any]) -> PageRef:
    ancestors = r.get("ancestors", [])
    return PageRef(
        id=str(r["id"]),
        title=r.get("title", ""),
        version=int(r.get("version", {}).get("number", 0)),
        ancestor_ids=tuple(str(a["id"]) for a in ancestors),
        ancestors=tuple(a.get("title", "") for a in ancestors),
        labels=_labels(r),
    )
