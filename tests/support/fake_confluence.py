"""A small local Confluence for tests and benchmarks: REST API v1 over a folder of page JSON files.

Serves what atlassian-python-api and our client use, in the JSON shapes the Confluence REST API documents:
  GET {ctx}/rest/api/space                    spaces, paged
  GET {ctx}/rest/api/space/{key}              one space
  GET {ctx}/rest/api/content?spaceKey=&type=page&start=&limit=&expand=   a space's pages, paged
  GET {ctx}/rest/api/content/{id}?expand=     one page (body.storage, version, ancestors, metadata.labels, space)
  GET {ctx}/rest/api/content/{id}/restriction/byOperation/read   the page's own read restriction (users and
                                              groups; empty lists: none, the page inherits its ancestors')
  users, groups and space permissions: see fake_confluence_people.py
  GET {ctx}/rest/api/content/search?cql=      CQL subset: space = / space in (..), type = page,
                                              lastmodified >= "yyyy/MM/dd HH:mm", label in (..), ancestor = ID
and, with flavor="cloud", Cloud's API v2 (fake_confluence_v2.py: cursor paging, folders, ancestors, archived
pages; v1 reads other than CQL search and restrictions, which Cloud still serves only in v1, answer 410 Gone):
  GET {ctx}/api/v2/spaces?keys=   GET {ctx}/api/v2/spaces/{id}[/pages]   GET {ctx}/api/v2/pages/{id}[/ancestors]
  GET {ctx}/api/v2/folders/{id}[/ancestors]
Pages may be archived (`archive_page`: v1 lists and serves current pages unless `status` asks, v2 current and
archived), and on Cloud be folders (`FakePage(kind="folder")`: never in a page listing; their own restrictions
read as empty, CONFCLOUD-82920).
`{ctx}` is an optional context path (`/confluence`, `/wiki`); `_links.next` is relative to it, as on a real
server. Auth: Basic (user + API token) and Bearer (personal access token). Switchable faults (`Faults`), and
pages can be edited, renamed, moved, relabelled, restricted, added and deleted between runs.

Page files: ConfQuestions' shape (`id, title, url, space, content, date`) or the sample wiki's (`id, space,
title, content` or `body`, optional `version, parent_id` or `ancestors` (titles), `labels, last_modified, url,
read_users, read_groups`);
a `.xml` file beside a JSON file without a body is its storage-format body.

By hand:  python -m tests.support.fake_confluence --docs DIR --port 8090 [--context-path /confluence]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import socket
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from tests.support.fake_confluence_pages import FakePage, cql_matches, load_pages, tree_wiki
from tests.support.fake_confluence_people import People
from tests.support.fake_confluence_v2 import answer_v2

__all__ = ["FakeConfluence", "FakePage", "Faults", "load_pages", "tree_wiki"]


@dataclass
class Faults:
    """What goes wrong. Applied to every API request after authentication, in this order."""

    delay_s: float = 0.0  # every reply waits this long (a slow server)
    next_statuses: list[int] = field(default_factory=list)  # the next requests get these statuses, in order
    error_rate: float = 0.0  # then this share of requests fails with 429 or 500, at random (seeded)
    retry_after: str = "0"  # Retry-After of every 429
    forbidden_spaces: set[str] = field(default_factory=set)  # 403 for anything in these spaces
    broken_pages: set[str] = field(default_factory=set)  # 500 for these pages' content, every time
    # page id -> the status every read of its restrictions gets (403: the token lacks the right; 500)
    restriction_statuses: dict[str, int] = field(default_factory=dict)
    seed: int = 7


@dataclass(frozen=True)
class Request:
    path: str  # without the context path
    query: dict[str, str]
    status: int


class FakeConfluence:
    """The server and its data; `start()` serves it on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        *,
        pages: Iterable[FakePage] = (),
        context_path: str = "",
        public_base: str = "",
        users: dict[str, str] | None = None,
        tokens: Iterable[str] = ("pat-secret",),
        max_limit: int = 50,
        user_utc_offset: timedelta = timedelta(0),
        space_names: dict[str, str] | None = None,
        flavor: str = "datacenter",
    ) -> None:
        """flavor "datacenter": REST v1 only; "cloud": v2 for spaces and pages, v1 only for CQL search
        (Cloud's deprecated v1 reads answer 410 Gone, so a client that still uses them fails here)."""
        assert flavor in ("datacenter", "cloud")
        self.flavor = flavor
        self.pages: dict[str, FakePage] = {p.id: p for p in pages}
        self.context_path = "/" + context_path.strip("/") if context_path.strip("/") else ""
        self.public_base = public_base.rstrip("/")
        self.users = {"alice@example.com": "api-token"} if users is None else users
        self.tokens = set(tokens)
        self.max_limit = max_limit
        self.user_utc_offset = user_utc_offset  # CQL dates are read in this zone, like the token user's
        self.space_names = space_names or {}
        self.extra_spaces: set[str] = set()  # spaces without pages
        self.faults = Faults()
        self.people = People()  # users, groups and who may view each space
        self.requests: list[Request] = []
        self._rng = random.Random(self.faults.seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @classmethod
    def from_folder(cls, folder: Path, **kwargs: Any) -> FakeConfluence:
        return cls(pages=load_pages(folder), **kwargs)

    # ----- serving -----
    def start(self, port: int = 0) -> FakeConfluence:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeConfluence:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The URL clients are configured with (context path included)."""
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.context_path}"

    @property
    def base(self) -> str:
        """`_links.base`: the public base URL of web links."""
        return self.public_base or self.url

    # ----- changing the wiki between runs -----
    def _touch(self, page: FakePage) -> None:
        page.version += 1
        page.last_modified = datetime.now(UTC)

    def edit_page(
        self, page_id: str, *, body: str | None = None, title: str | None = None, by: str | None = None
    ) -> FakePage:
        """A new version; `by`: the username who saved it (else the last editor stays)."""
        with self._lock:
            page = self.pages[page_id]
            page.body = page.body if body is None else body
            page.title = page.title if title is None else title
            page.last_editor = page.last_editor if by is None else by
            self._touch(page)
            return page

    def move_page(self, page_id: str, parent_id: str | None) -> None:
        """Moves keep the version (as on Data Center): only the ancestors change."""
        with self._lock:
            self.pages[page_id].parent_id = parent_id

    def set_labels(self, page_id: str, labels: list[str]) -> None:
        """Labels change without a new version, as in Confluence."""
        with self._lock:
            self.pages[page_id].labels = list(labels)

    def restrict(self, page_id: str, *, users: Iterable[str] = (), groups: Iterable[str] = ()) -> None:
        """Set the page's own read restriction (nothing: lift it). No new version, as in Confluence."""
        with self._lock:
            page = self.pages[page_id]
            page.read_users, page.read_groups = list(users), list(groups)

    def add_page(self, page: FakePage) -> None:
        with self._lock:
            page.last_modified = datetime.now(UTC)
            self.pages[page.id] = page

    def archive_page(self, page_id: str) -> None:
        """Archived pages keep their version; listings that ask for current pages no longer show them."""
        with self._lock:
            self.pages[page_id].status = "archived"

    def delete_page(self, page_id: str) -> None:
        with self._lock:
            del self.pages[page_id]

    def served_pages(self) -> list[str]:
        """Ids of the pages whose content was served successfully, in order (v1 and v2 alike)."""
        ids = []
        for r in self.requests:
            m = re.fullmatch(r"/rest/api/content/([^/]+)|/api/v2/pages/([^/]+)", r.path)
            if m and r.status == 200 and m.group(1) != "search":
                ids.append(m.group(1) or m.group(2))
        return ids

    def fetch_count(self, page_id: str) -> int:
        """How many times the page's content was served successfully."""
        return self.served_pages().count(page_id)

    # ----- JSON shapes -----
    def spaces(self) -> list[str]:
        return sorted({p.space for p in self.pages.values()} | self.extra_spaces)

    def space_json(self, key: str) -> dict[str, Any]:
        return {
            "id": zlib.crc32(key.encode()) % 10**6,
            "key": key,
            "name": self.space_names.get(key, key),
            "type": "personal" if key.startswith("~") else "global",
            "_links": {"webui": f"/spaces/{key}", "self": f"{self.url}/rest/api/space/{key}"},
        }

    def ancestors(self, page: FakePage) -> list[FakePage]:
        chain: list[FakePage] = []
        parent = self.pages.get(page.parent_id or "")
        while parent is not None and parent not in chain:
            chain.insert(0, parent)
            parent = self.pages.get(parent.parent_id or "")
        return chain

    def webui(self, page: FakePage) -> str:
        if page.url and self.public_base and page.url.startswith(self.public_base):
            return page.url[len(self.public_base) :]
        return f"/spaces/{page.space}/pages/{page.id}"

    def content_json(self, page: FakePage, expand: set[str]) -> dict[str, Any]:
        r: dict[str, Any] = {
            "id": page.id,
            "type": page.kind,
            "status": page.status,
            "title": page.title,
            "_links": {
                "webui": self.webui(page),
                "self": f"{self.url}/rest/api/content/{page.id}",
                "base": self.base,
                "context": self.context_path,
            },
        }
        if "space" in expand:
            r["space"] = self.space_json(page.space)
        if "version" in expand:
            when = page.last_modified.strftime("%Y-%m-%dT%H:%M:%S.000Z")
            r["version"] = {"number": page.version, "when": when, "minorEdit": False}
            if page.last_editor:
                cloud = self.flavor == "cloud"  # Cloud v1 content: accountId and displayName, as there
                r["version"]["by"] = self.people.user_json(page.last_editor, cloud=cloud, with_email=False)
        if "ancestors" in expand:
            r["ancestors"] = [
                {"id": a.id, "type": "page", "status": "current", "title": a.title}
                for a in self.ancestors(page)
            ]
        if "metadata.labels" in expand:
            results = [{"prefix": "global", "name": n, "id": str(i)} for i, n in enumerate(page.labels)]
            r["metadata"] = {"labels": {"results": results, "start": 0, "limit": 200, "size": len(results)}}
        if "body.storage" in expand:
            r["body"] = {"storage": {"value": page.body, "representation": "storage"}}
        return r

    def read_restriction_json(self, page: FakePage) -> dict[str, Any]:
        """`GET .../restriction/byOperation/read` as Confluence answers it: users and groups named in the
        page's own read restriction; both lists empty when it has none (it inherits, it is not "nobody")."""
        cloud = self.flavor == "cloud"  # Cloud names users by account id only, and groups carry their id
        # a folder's own restrictions never show here (CONFCLOUD-82920): empty, as for a page that inherits
        shown = page.kind == "page"
        users = [self.people.user_json(u, cloud=cloud, with_email=False) for u in page.read_users if shown]
        groups = [self.people.group_json(g, cloud=cloud) for g in page.read_groups if shown]
        self_link = f"{self.url}/rest/api/content/{page.id}/restriction/byOperation/read"
        return {
            "operation": "read",
            "restrictions": {
                "user": {"results": users, "start": 0, "limit": 200, "size": len(users)},
                "group": {"results": groups, "start": 0, "limit": 200, "size": len(groups)},
            },
            "_expandable": {"content": f"/rest/api/content/{page.id}"},
            "_links": {"self": self_link, "base": self.base, "context": self.context_path},
        }

    def paged(self, path: str, query: dict[str, str], items: list[Any]) -> dict[str, Any]:
        start = int(query.get("start", 0))
        limit = min(int(query.get("limit", 25)), self.max_limit)
        chunk = items[start : start + limit]
        links: dict[str, str] = {"base": self.base, "context": self.context_path, "self": f"{self.url}{path}"}
        if start + limit < len(items):
            links["next"] = f"{path}?{urlencode({**query, 'start': start + limit, 'limit': limit})}"
        return {"results": chunk, "start": start, "limit": limit, "size": len(chunk), "_links": links}

    def cql_matches(self, cql: str) -> list[FakePage]:
        current = [p for p in self.sorted_pages(kind="page") if p.status == "current"]
        return cql_matches(current, cql, ancestors=self.ancestors, user_utc_offset=self.user_utc_offset)

    def sorted_pages(self, *, kind: str | None = None) -> list[FakePage]:
        """Every page (and folder) by id; `kind`: only those."""
        return sorted((p for p in self.pages.values() if kind in (None, p.kind)), key=lambda p: p.id)

    # ----- the request pipeline -----
    def authorized(self, header: str) -> bool:
        kind, _, value = header.partition(" ")
        if kind.lower() == "bearer":
            return value.strip() in self.tokens
        if kind.lower() == "basic":
            user, _, secret = base64.b64decode(value).decode("utf-8", "replace").partition(":")
            return self.users.get(user) == secret and bool(secret)
        return False

    def injected_fault(self) -> int | None:
        f = self.faults
        if f.delay_s:
            time.sleep(f.delay_s)
        with self._lock:
            if f.next_statuses:
                return f.next_statuses.pop(0)
            if f.error_rate and self._rng.random() < f.error_rate:
                return self._rng.choice((429, 500))
        return None

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        """Route an authenticated API GET; returns (status, JSON body)."""
        with self._lock:
            people = self.people.answer(self, path, query)
            if people is not None:
                return people
            if self.flavor == "cloud":
                if path.startswith("/api/v2/"):
                    return answer_v2(self, path, query)
                if path != "/rest/api/content/search" and not path.endswith("/restriction/byOperation/read"):
                    return 410, _error(410, "This deprecated endpoint has been removed (use API v2)")
            elif path.startswith("/api/v2/"):
                return 404, _error(404, f"null for uri: {path}")
            return self._answer_v1(path, query)

    def _answer_v1(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        m = re.fullmatch(r"/rest/api/space(?:/([^/]+))?", path)
        if m and m.group(1) is None:
            return 200, self.paged(path, query, [self.space_json(k) for k in self.spaces()])
        if m:
            key = m.group(1)
            if key in self.faults.forbidden_spaces:
                return 403, _error(403, f"No permission to view space {key}")
            return (
                (200, self.space_json(key))
                if key in self.spaces()
                else (404, _error(404, f"No space with key : {key}"))
            )
        expand = set(query.get("expand", "").split(","))
        if path == "/rest/api/content":
            space = query.get("spaceKey", "")
            if space in self.faults.forbidden_spaces:
                return 403, _error(403, f"No permission to view space {space}")
            statuses = set(query.get("status", "current").split(","))  # DC: current unless asked
            pages = [
                p
                for p in self.sorted_pages(kind="page")
                if (not space or p.space == space) and p.status in statuses
            ]
            if query.get("type", "page") != "page":
                pages = []
            return 200, self.paged(path, query, [self.content_json(p, expand) for p in pages])
        if path == "/rest/api/content/search":
            try:
                pages = self.cql_matches(query.get("cql", ""))
            except ValueError as e:
                return 400, _error(400, str(e))
            return 200, self.paged(path, query, [self.content_json(p, expand) for p in pages])
        m = re.fullmatch(r"/rest/api/content/([^/]+)/restriction/byOperation/read", path)
        if m:
            page = self.pages.get(m.group(1))
            if page is None:
                return 404, _error(404, f"No content found with id: {m.group(1)}")
            status = self.faults.restriction_statuses.get(page.id)
            if page.space in self.faults.forbidden_spaces or status == 403:
                return 403, _error(403, "Not permitted to view restrictions")
            if status is not None:
                return status, _error(status, "java.lang.IllegalStateException")
            return 200, self.read_restriction_json(page)
        m = re.fullmatch(r"/rest/api/content/([^/]+)", path)
        if m:
            page = self.pages.get(m.group(1))
            if page is not None and page.status not in query.get("status", "current").split(","):
                page = None
            if page is None:
                return 404, _error(404, f"No content found with id: {m.group(1)}")
            if page.space in self.faults.forbidden_spaces:
                return 403, _error(403, "No permission")
            if page.id in self.faults.broken_pages:
                return 500, _error(500, "java.lang.NullPointerException")
            return 200, self.content_json(page, expand)
        return 404, _error(404, f"null for uri: {path}")

    # ----- Cloud API v2 -----
    def space_id(self, key: str) -> str:
        return str(zlib.crc32(key.encode()) % 10**6)

    def cursor_paged(self, path: str, query: dict[str, str], items: list[Any]) -> dict[str, Any]:
        """Cursor paging as on Cloud: `next` is relative to the site, context path included."""
        cursor = query.get("cursor", "")
        start = int(base64.urlsafe_b64decode(cursor).decode()) if cursor else 0
        limit = min(int(query.get("limit", 25)), self.max_limit)
        links: dict[str, str] = {"base": self.base}
        if start + limit < len(items):
            rest = {k: v for k, v in query.items() if k not in ("cursor", "limit")}
            token = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
            links["next"] = (
                f"{self.context_path}{path}?{urlencode({**rest, 'limit': limit, 'cursor': token})}"
            )
        return {"results": items[start : start + limit], "_links": links}


def _error(status: int, message: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "data": {"authorized": status != 401},
        "message": message,
        "reason": "Error",
    }


def _handler_for(fake: FakeConfluence) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def setup(self) -> None:
            super().setup()
            # headers and body go out in two writes: without this, Nagle + delayed ACK add ~40 ms a request
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:  # noqa: N802
            parsed = urlparse(self.path)
            query = {k: v[-1] for k, v in parse_qs(parsed.query, keep_blank_values=True).items()}
            path = parsed.path
            if fake.context_path:
                if not (path == fake.context_path or path.startswith(fake.context_path + "/")):
                    self._reply(path, query, 404, {"message": f"nothing at {path} (context path missing?)"})
                    return
                path = path[len(fake.context_path) :]
            if not fake.authorized(self.headers.get("Authorization", "")):
                self._reply(path, query, 401, _error(401, "Basic or Bearer authentication required"))
                return
            status = fake.injected_fault()
            if status is not None:
                headers = {"Retry-After": fake.faults.retry_after} if status == 429 else {}
                self._reply(path, query, status, _error(status, "injected fault"), headers)
                return
            status, body = fake.answer(path, query)
            self._reply(path, query, status, body)

        def _reply(
            self,
            path: str,
            query: dict[str, str],
            status: int,
            body: Any,
            headers: dict[str, str] | None = None,
        ) -> None:
            with fake._lock:
                fake.requests.append(Request(path=path, query=query, status=status))
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json;charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, required=True, help="folder of page JSON files")
    ap.add_argument("--port", type=int, default=8090)
    ap.add_argument("--context-path", default="", help="e.g. /confluence (Data Center) or /wiki (Cloud)")
    ap.add_argument("--public-base", default="", help="_links.base for web links (default: this server)")
    ap.add_argument("--user", default="alice@example.com:api-token", help="USER:API_TOKEN for Basic auth")
    ap.add_argument("--token", default="pat-secret", help="personal access token for Bearer auth")
    ap.add_argument("--error-rate", type=float, default=0.0, help="share of requests failing with 429/500")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds every reply waits")
    args = ap.parse_args()
    user, _, secret = args.user.partition(":")
    fake = FakeConfluence.from_folder(
        args.docs,
        context_path=args.context_path,
        public_base=args.public_base,
        users={user: secret},
        tokens=[args.token],
    )
    fake.faults.error_rate, fake.faults.delay_s = args.error_rate, args.delay
    fake.start(args.port)
    print(
        f"Fake Confluence with {len(fake.pages)} pages in {len(fake.spaces())} spaces at {fake.url}",
        flush=True,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
