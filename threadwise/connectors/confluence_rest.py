"""Talking to Confluence over HTTP: settings, errors, authenticated GETs with bounded retries, and paging.

Built on atlassian-python-api's authenticated session, using only its `get`, with explicit paths. Two
pitfalls of version 5.0.5 are avoided on purpose:
- its `_get_paged` joins a relative `_links.next` onto the site root, dropping a context path such as
  `/confluence` (page two of a listing 404s); `RestSession.paged` resolves `next` against our base URL;
- its 429 handling sleeps as long as Retry-After says (up to 30 minutes), once; our loop honours
  Retry-After with a cap, backs off exponentially on 5xx and timeouts, and gives up after a bounded number
  of retries. 401/403 raise at once, with a message that names the space.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import requests

from threadwise.errors import ConfigError, ThreadwiseError
from threadwise.redact import redact_credentials
from threadwise.settings import env_flag

log = logging.getLogger(__name__)

NOT_CONFIGURED = (
    "Confluence is not configured: set CONFLUENCE_URL and either CONFLUENCE_USERNAME + CONFLUENCE_API_TOKEN "
    "(Cloud) or CONFLUENCE_PERSONAL_TOKEN (Server/Data Center)"
)


class ConfluenceError(ThreadwiseError, RuntimeError):
    """Confluence could not be used: the message says why, in words an admin can act on."""


class ConfluenceConfigError(ConfluenceError, ConfigError):
    """The CONFLUENCE_* settings are incomplete or wrong (e.g. CONFLUENCE_URL without credentials)."""


class ConfluenceAccessError(ConfluenceError):
    """401/403: the credentials are wrong, or they give no access to the space."""


class ConfluenceUnavailableError(ConfluenceError):
    """Confluence kept failing (429, 5xx, timeouts) beyond the bounded retries."""


class ConfluenceNotFound(ConfluenceError):
    """404 for one object (a page, a space)."""


class ConfluenceReplyError(ConfluenceError):
    """A reply that is not what Confluence sends (not JSON: a proxy's or a login page, say)."""


@dataclass(frozen=True)
class ConfluenceSettings:
    """Where Confluence is and how to sign in. Cloud: username + API token; Data Center: a personal token."""

    url: str  # site URL, with the context path if any: https://acme.atlassian.net, https://host/confluence
    username: str = ""
    api_token: str = field(default="", repr=False)
    personal_token: str = field(default="", repr=False)
    cloud: bool | None = None  # None: Cloud when the host is *.atlassian.net
    timeout: float = 30.0  # seconds to wait for a reply
    connect_timeout: float = 10.0  # seconds to wait for a connection: an unreachable host fails within ~10 s
    verify: bool = True
    max_retries: int = 5
    backoff_s: float = 1.0  # first wait after a 5xx or timeout; doubles on each retry
    max_wait_s: float = 60.0  # no single wait (Retry-After included) is longer than this

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ConfluenceConfigError(
                f"CONFLUENCE_URL must start with http:// or https:// (got {redact_credentials(self.url)!r})"
            )
        if not self.personal_token and not (self.username and self.api_token):
            raise ConfluenceConfigError(
                f"Confluence credentials missing for CONFLUENCE_URL={redact_credentials(self.url)}: set "
                "CONFLUENCE_USERNAME and CONFLUENCE_API_TOKEN (Cloud) or CONFLUENCE_PERSONAL_TOKEN (Server/Data "
                "Center)"
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

    @property
    def shown_url(self) -> str:
        """`base_url` as messages show it: a password inside the URL replaced by *** (messages are printed,
        stored with sync runs and shown in `status`, the App Home and admin replies)."""
        return redact_credentials(self.base_url)

    @property
    def web_base(self) -> str:
        """`base_url` without any user name or password in it: the base of the web links people follow."""
        parts = urlparse(self.base_url)
        return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ConfluenceSettings | None:
        """Settings from CONFLUENCE_* variables; None when CONFLUENCE_URL is not set."""
        url = env.get("CONFLUENCE_URL", "").strip()
        if not url:
            return None
        cloud_set = bool(env.get("CONFLUENCE_CLOUD", "").strip())
        return cls(
            url=url,
            username=env.get("CONFLUENCE_USERNAME", "").strip(),
            api_token=env.get("CONFLUENCE_API_TOKEN", "").strip(),
            personal_token=env.get("CONFLUENCE_PERSONAL_TOKEN", "").strip(),
            cloud=env_flag(env, "CONFLUENCE_CLOUD", False) if cloud_set else None,  # unset: from the URL
            timeout=_seconds(env, "CONFLUENCE_TIMEOUT", 30.0),
            connect_timeout=_seconds(env, "CONFLUENCE_CONNECT_TIMEOUT", 10.0),
            verify=env_flag(env, "CONFLUENCE_VERIFY_SSL", True),
        )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfluenceConfigError(f"{name}={text!r} must be a number of seconds above 0")
    return value


class RestSession:
    """Authenticated JSON GETs below `settings.base_url`, retried within bounds."""

    def __init__(self, settings: ConfluenceSettings) -> None:
        self.settings = s = settings
        common: dict[str, Any] = {
            "timeout": s.timeout,
            "verify_ssl": s.verify,
            "retry_with_header": False,  # our loop honours Retry-After, with a cap
            "backoff_and_retry": False,
        }
        if s.personal_token:
            common["token"] = s.personal_token
        else:
            common.update(username=s.username, password=s.api_token)
        from atlassian.confluence import ConfluenceCloud, ConfluenceServer

        api_class = ConfluenceCloud if s.is_cloud else ConfluenceServer
        self._api = api_class(s.base_url, cloud=s.is_cloud, **common)
        # the constructor rounds the timeout down to whole seconds (0.5 would become 0, an error); requests
        # takes (connect, read): a host that never answers fails after the connect timeout, not the read one
        self._api.timeout = (min(s.connect_timeout, s.timeout), s.timeout)  # type: ignore[assignment]

    def close(self) -> None:
        self._api.close()

    def paged(
        self, path: str, params: dict[str, Any], *, what: str, space: str = ""
    ) -> Iterator[dict[str, Any]]:
        """Yield every result of a listing, following `_links.next` (offset or cursor paging alike)."""
        url, query = path, params
        while True:
            try:
                reply = self.get_json(url, query, what=what, space=space)
            except ConfluenceNotFound:
                raise ConfluenceError(
                    f"Confluence answered 404 for {what}: check CONFLUENCE_URL ({self.settings.shown_url}), "
                    "including its context path"
                ) from None
            results = reply.get("results", [])
            yield from results
            next_link = reply.get("_links", {}).get("next")
            if not next_link or not results:
                return
            url, query = self._next_url(next_link), {}

    def _next_url(self, link: str) -> str:
        """`next` is absolute, relative to the site root (Cloud v2: `/wiki/api/v2/...`), or relative to the
        context path (v1: `/rest/api/...`, which atlassian-python-api wrongly puts at the site root)."""
        if urlparse(link).scheme:
            return link
        base = urlparse(self.settings.base_url)
        context = base.path.rstrip("/")
        if context and (link == context or link.startswith(context + "/")):
            return f"{base.scheme}://{base.netloc}{link}"
        return self.settings.base_url + "/" + link.lstrip("/")

    def post_json(self, path: str, body: dict[str, Any], *, what: str, space: str = "") -> Any:
        """POST a JSON body that only reads (Data Center's JSON-RPC), retried like `get_json`."""
        return self.get_json(path, {}, what=what, space=space, body=body)

    def get_json(
        self, path: str, params: dict[str, Any], *, what: str, space: str = "", body: Any = None
    ) -> Any:
        """GET `path` (below the base URL, or absolute) and decode it; raises a ConfluenceError subclass.
        `body`: POST it as JSON instead (a read through JSON-RPC)."""
        s = self.settings
        absolute = bool(urlparse(path).scheme)
        connect_deadline = time.monotonic() + s.connect_timeout
        for attempt in range(s.max_retries + 1):
            try:
                if body is not None:
                    resp = self._api.post(path, json=body, absolute=absolute, advanced_mode=True)
                else:
                    resp = self._api.get(path, params=params or None, absolute=absolute, advanced_mode=True)
            except requests.ConnectionError as e:
                if _never_connected(e):
                    # nobody answers at that address: retried only until the connect timeout is spent
                    left = connect_deadline - time.monotonic()
                    if left <= 0 or attempt == s.max_retries:
                        raise ConfluenceUnavailableError(
                            f"cannot connect to Confluence at {s.shown_url} ({_reason(e)}): check CONFLUENCE_URL "
                            "and that the server is up and reachable from here"
                        ) from None
                    time.sleep(min(s.backoff_s * 2**attempt, left))
                    continue
                wait, problem = s.backoff_s * 2**attempt, f"no reply ({type(e).__name__})"
            except requests.Timeout as e:
                wait, problem = s.backoff_s * 2**attempt, f"no reply ({type(e).__name__})"
            else:
                status = resp.status_code
                if status < 400:
                    return _json(resp, what)
                if status in (401, 403):
                    raise ConfluenceAccessError(_access_message(status, what, space))
                if status == 404:
                    raise ConfluenceNotFound(f"Confluence has no {what}")
                if status != 429 and status < 500:
                    raise ConfluenceError(f"Confluence refused the request for {what}: HTTP {status}")
                problem = f"HTTP {status}"
                told = _retry_after(resp) if status == 429 else None
                wait = told if told is not None else s.backoff_s * 2**attempt
            if attempt == s.max_retries:
                break
            wait = min(wait, s.max_wait_s)
            log.info(
                "Confluence: %s for %s; retry in %.2fs (%d/%d)",
                problem,
                what,
                wait,
                attempt + 1,
                s.max_retries,
            )
            time.sleep(wait)
        raise ConfluenceUnavailableError(
            f"Confluence at {s.shown_url} kept failing for {what} ({problem}, {s.max_retries} retries)"
        )


def _json(resp: requests.Response, what: str) -> Any:
    try:
        return resp.json()
    except ValueError:
        kind = resp.headers.get("Content-Type", "no content type")
        raise ConfluenceReplyError(
            f"Confluence answered the request for {what} with something other than JSON (HTTP "
            f"{resp.status_code}, {kind}): check CONFLUENCE_URL and any proxy or single sign-on in front of it"
        ) from None


def _never_connected(err: requests.ConnectionError) -> bool:
    """No connection was made (refused, unknown host, connect timeout), as opposed to one that broke."""
    text = str(err)
    return isinstance(err, requests.ConnectTimeout) or any(
        marker in text for marker in ("NewConnectionError", "NameResolutionError", "Connection refused")
    )


def _reason(err: Exception) -> str:
    """The innermost reason of a connection error, e.g. "Connection refused", without urllib3's noise."""
    if isinstance(err, requests.ConnectTimeout):
        return "no answer within the connect timeout"
    text = str(err)
    for marker in ("Connection refused", "Name or service not known", "No route to host", "timed out"):
        if marker in text:
            return marker
    return type(err).__name__


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
