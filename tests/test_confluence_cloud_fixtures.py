"""Confluence Cloud's documented page-tree replies (tests/fixtures/confluence_cloud/, SOURCES.md) driven through
the real client over HTTP: a page inside a folder gets its whole breadcrumb, folders and pages above the
folder included; and our local fake answers in the same shapes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import requests

from tests.support.fake_confluence import FakeConfluence, FakePage
from threadwise.connectors.confluence import ConfluenceClient, ConfluenceSettings

FIXTURES = Path(__file__).parent / "fixtures" / "confluence_cloud"
ROUTES = {
    "/wiki/api/v2/spaces": "spaces_by_key.json",
    "/wiki/api/v2/spaces/98305/pages": "space_pages_in_folder.json",
    "/wiki/api/v2/folders/65650": "folder.json",
    "/wiki/api/v2/folders/65650/ancestors": "folder_ancestors.json",
    "/wiki/api/v2/pages/65703/ancestors": "page_ancestors.json",
}


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture
def documented_cloud() -> Iterator[tuple[str, list[str]]]:
    """A server that answers each documented path with its fixture; yields its /wiki URL and the paths asked."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            path = urlparse(self.path).path
            asked.append(path)
            name = ROUTES.get(path)
            body = (FIXTURES / name).read_bytes() if name else b'{"errors": [{"status": 404}]}'
            self.send_response(200 if name else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/wiki", asked
    server.shutdown()


def test_a_page_in_a_folder_gets_the_folder_and_everything_above_it(
    documented_cloud: tuple[str, list[str]],
) -> None:
    url, asked = documented_cloud
    settings = ConfluenceSettings(
        url=url, username="bot@example.com", api_token="t", cloud=True, max_retries=0
    )
    client = ConfluenceClient(settings=settings)
    refs = {ref.title: ref for ref in client.list_pages("ENG")}

    assert refs["Leadership"].ancestor_ids == ("65537",)
    assert refs["Nightjar launch"].ancestor_ids == ("65537", "65601", "65650")
    assert refs["Nightjar launch"].ancestors == ("Engineering Home", "Leadership", "Plans")
    assert refs["Nightjar rollout"].ancestor_ids == ("65537", "65601", "65650", "65703")
    assert refs["Nightjar rollout"].ancestors[-2:] == ("Plans", "Nightjar launch")
    assert refs["Engineering Home"].ancestor_ids == ()
    # the folder's chain and title are read once, for every page below it
    assert asked.count("/wiki/api/v2/folders/65650/ancestors") == 1
    assert asked.count("/wiki/api/v2/folders/65650") == 1


def test_our_fake_answers_in_the_documented_shapes() -> None:
    pages = [
        FakePage(id="65537", space="ENG", title="Engineering Home", body="<p>Home</p>"),
        FakePage(id="65601", space="ENG", title="Leadership", body="<p>L</p>", parent_id="65537"),
        FakePage(id="65650", space="ENG", title="Plans", body="", parent_id="65601", kind="folder"),
        FakePage(id="65703", space="ENG", title="Nightjar launch", body="<p>N</p>", parent_id="65650"),
    ]
    with FakeConfluence(pages=pages, context_path="/wiki", flavor="cloud") as fake:
        session = requests.Session()
        session.auth = ("alice@example.com", "api-token")

        def get(path: str) -> Any:
            reply = session.get(fake.url + path, timeout=10)
            assert reply.status_code == 200, reply.text
            return reply.json()

        listing = get(f"/api/v2/spaces/{fake.space_id('ENG')}/pages?status=current")
        folder = get("/api/v2/folders/65650")
        ancestors = get("/api/v2/pages/65703/ancestors")

    documented = fixture("space_pages_in_folder.json")["results"]
    in_folder = next(p for p in listing["results"] if p["id"] == "65703")
    assert (in_folder["parentId"], in_folder["parentType"]) == ("65650", "folder")
    assert "65650" not in {p["id"] for p in listing["results"]}  # folders are not pages
    assert set(in_folder) <= set(documented[2]) and set(in_folder["version"]) <= set(documented[2]["version"])
    assert set(folder) <= set(fixture("folder.json")) and folder["type"] == "folder"
    assert ancestors["results"] == fixture("page_ancestors.json")["results"]
