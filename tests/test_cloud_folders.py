"""Confluence Cloud folders and archived pages, end to end against the independent fake (../shared/fakes): a
read restriction above a folder hides every page below it (`threadwise sync`, then `ask` neither cites nor
quotes them, per-user only its readers get them), and a page archived in Confluence leaves the index at the
next sync (the sync service), on Cloud and Data Center."""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.cli import threadwise_cli_batch
from tests.support.sync_env import SyncEnv, make_env
from threadwise.connectors.scope import SpaceScope

TOKEN = "cloud-api-token"
SECRET = "The launch code for Project Nightjar is 48151623."


class SharedConfluence:
    """The shared fake, started on 127.0.0.1; `control` drives its /__control API."""

    def __init__(self, module: ModuleType, *, cloud: bool) -> None:
        self.server, self.url = module.start(token=TOKEN, pat=None if cloud else "dc-pat", cloud=cloud)
        self.site = self.url.removesuffix("/wiki")

    def control(self, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.site}/__control/{path}", data=data, method="POST" if data else "GET"
        )
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read() or b"null")

    def page(self, title: str, *, parent: str | None = None, **spec: Any) -> str:
        made = self.control("pages", {"space": "ENG", "title": title, "parent_id": parent, **spec})
        return str(made["id"])


@pytest.fixture
def cloud(shared_fakes: Callable[[str], ModuleType]) -> Iterator[SharedConfluence]:
    fake = SharedConfluence(shared_fakes("fake_confluence"), cloud=True)
    yield fake
    fake.server.shutdown()


def cli_env(tmp_path: Path, fake: SharedConfluence, *, cloud: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "CONFLUENCE_", "SLACK_"))}
    env |= {"THREADWISE_DATA_DIR": str(tmp_path / "data"), "THREADWISE_EMBEDDER": "hashing"}
    if cloud:
        return env | {
            "CONFLUENCE_URL": fake.url,
            "CONFLUENCE_CLOUD": "true",
            "CONFLUENCE_USERNAME": "sync-bot@example.com",
            "CONFLUENCE_API_TOKEN": TOKEN,
        }
    return env | {"CONFLUENCE_URL": fake.url, "CONFLUENCE_PERSONAL_TOKEN": "dc-pat"}


def run(env: dict[str, str], *commands: tuple[str, ...]) -> list[str]:
    """Each command's output; every one of them succeeds (one process runs them all, one after another)."""
    outputs = []
    for done in threadwise_cli_batch(env, *commands):
        assert done.returncode == 0, done.stdout + done.stderr
        outputs.append(done.stdout)
    return outputs


def test_a_restriction_above_a_folder_hides_every_page_below_it(
    cloud: SharedConfluence, tmp_path: Path
) -> None:
    secret = cloud.page(
        "Leadership", body="<p>Leadership notes.</p>", restrictions={"read": {"users": ["fakeadmin"]}}
    )
    plans = cloud.page("Plans", parent=secret, type="folder")
    inner = cloud.page("Nightjar launch", parent=plans, body=f"<p>{SECRET}</p>")
    deeper = cloud.page("Nightjar rollout", parent=inner, body="<p>The Nightjar rollout starts in May.</p>")
    shared = cloud.page("Handbook", type="folder")
    open_page = cloud.page("Office hours", parent=shared, body="<p>The office opens at 8:30 on weekdays.</p>")
    env = cli_env(tmp_path, cloud, cloud=True)

    question, hours = (
        "What is the launch code for Project Nightjar?",
        "When does the office open on weekdays?",
    )
    _, synced, status_json, launch, office_hours = run(
        env,
        ("spaces", "add", "ENG"),
        ("sync", "ENG"),
        ("status", "--json"),
        ("ask", question, "--json"),
        ("ask", hours, "--json"),
    )
    assert "left out" in synced or "restricted" in synced, synced

    status = json.loads(status_json)
    eng = next(s for s in status if s["kind"] == "space" and s["key"] == "ENG")
    left_out = {r["page_id"]: r["reason"] for r in eng["left_out"]}
    assert left_out.keys() == {secret, inner, deeper}  # the page above the folder, and all below it
    assert "'Leadership'" in left_out[inner] and "'Leadership'" in left_out[deeper]
    assert eng["pages"] >= 2  # the homepage and the page in the open folder are indexed

    text = json.dumps(json.loads(launch))
    assert "48151623" not in text and "Nightjar launch" not in text and f"/{inner}/" not in text
    office = json.loads(office_hours)
    assert "8:30" in json.dumps(office) and open_page in json.dumps(office)


def test_per_user_a_reader_must_pass_the_restriction_above_the_folder(
    cloud: SharedConfluence, tmp_path: Path
) -> None:
    for name in ("carol", "bob"):  # both may view the space (confluence-users); e-mails shown to apps
        cloud.control(
            "users",
            {
                "username": name,
                "email": f"{name}@example.com",
                "email_visible": True,
                "groups": ["confluence-users"],
            },
        )
    secret = cloud.page(
        "Leadership", body="<p>Leadership notes.</p>", restrictions={"read": {"users": ["carol"]}}
    )
    plans = cloud.page("Plans", parent=secret, type="folder")
    inner = cloud.page("Nightjar launch", parent=plans, body=f"<p>{SECRET}</p>")
    env = cli_env(tmp_path, cloud, cloud=True) | {"THREADWISE_PERMISSIONS": "per-user"}
    question = "What is the launch code for Project Nightjar?"
    *_, as_carol, as_bob = run(
        env,
        ("spaces", "add", "ENG"),
        ("sync", "ENG"),
        ("ask", question, "--json", "--as", "carol@example.com"),
        ("ask", question, "--json", "--as", "bob@example.com"),
    )

    carol = json.loads(as_carol)
    assert inner in {s["page_id"] for s in carol["sources"]} and "48151623" in carol["answer"]
    bob = json.loads(as_bob)
    assert inner not in {s["page_id"] for s in bob["sources"]} and "48151623" not in json.dumps(bob)


def test_an_archived_cloud_page_is_not_synced_and_leaves_the_index(
    cloud: SharedConfluence, tmp_path: Path
) -> None:
    cloud.page("Runbook", body="<p>Restart the queue with the blue button.</p>")
    gone = cloud.page("Old runbook", body="<p>Restart the queue with the red lever.</p>")
    cloud.page("Ancient runbook", body="<p>Restart the queue by phoning Bob.</p>", status="archived")
    service = make_env(tmp_path / "data", cloud.url, cloud=True, api_token=TOKEN)
    assert service.syncer.sync(SpaceScope.of("ENG")).status == "ok"
    titles = indexed_titles(service)
    assert {"Runbook", "Old runbook"} <= titles and "Ancient runbook" not in titles

    cloud.control(f"pages/{gone}", {"status": "archived"})
    report = service.syncer.sync(SpaceScope.of("ENG"))
    assert report.status == "ok" and report.counts.deleted == 1
    assert "Old runbook" not in indexed_titles(service) and "Runbook" in indexed_titles(service)


def test_an_archived_data_center_page_leaves_the_index(
    shared_fakes: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    fake = SharedConfluence(shared_fakes("fake_confluence"), cloud=False)
    try:
        fake.page("Runbook", body="<p>Restart the queue with the blue button.</p>")
        gone = fake.page("Old runbook", body="<p>Restart the queue with the red lever.</p>")
        service = make_env(tmp_path / "data", fake.url, personal_token="dc-pat")
        assert service.syncer.sync(SpaceScope.of("ENG")).status == "ok"
        assert {"Runbook", "Old runbook"} <= indexed_titles(service)
        fake.control(f"pages/{gone}", {"status": "archived"})
        assert service.syncer.sync(SpaceScope.of("ENG")).status == "ok"
        assert "Old runbook" not in indexed_titles(service) and "Runbook" in indexed_titles(service)
    finally:
        fake.server.shutdown()


def indexed_titles(service: SyncEnv) -> set[str]:
    return {state.title for state in service.index.page_states("ENG").values()}
