"""THREADWISE_PERMISSIONS=open-pages: restricted Confluence pages are never indexed; `off` indexes them all.

Everything goes through the real sync and the real client against the local Confluence, which serves read
restrictions as Confluence does (REST v1 `.../restriction/byOperation/read`, Data Center and Cloud).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_confluence import FakeConfluence, tree_wiki
from tests.support.sync_env import SyncEnv, make_env
from threadwise.chat.status_text import space_line
from threadwise.cli import main
from threadwise.connectors.scope import SpaceScope
from threadwise.settings import load_settings
from threadwise.slack.mrkdwn import SLACK

DOCS = SpaceScope.of("DOCS")
ON_CALL = "The on-call engineer answers pages within 15 minutes."


@pytest.fixture
def fake() -> Iterator[FakeConfluence]:
    with FakeConfluence(pages=tree_wiki(), context_path="/confluence") as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, fake: FakeConfluence) -> SyncEnv:
    return make_env(tmp_path, fake.url)


def indexed(env: SyncEnv) -> set[str]:
    return set(env.index.page_states("DOCS"))


def texts_of(env: SyncEnv, page_id: str) -> list[str]:
    return [
        h.evidence.text
        for h in env.index.search_lexical("on-call engineer 15 minutes", k=20)
        if h.evidence.page_id == page_id
    ]


def test_a_page_restricted_to_a_group_is_never_fetched_nor_stored(env: SyncEnv, fake: FakeConfluence) -> None:
    fake.restrict("113", groups=["hr"])
    report = env.syncer.sync(DOCS)
    assert report.status == "ok", report.summary()
    assert indexed(env) == {"100", "110", "111", "112", "120"}
    assert [(r.page_id, r.title) for r in report.restricted] == [("113", "On-call")]
    assert report.restricted[0].reason == "read restriction on the page itself"
    assert report.counts.pages == 5 and report.counts.added == 5
    assert "1 left out as restricted" in report.summary()
    assert fake.fetch_count("113") == 0  # its body never left Confluence
    assert texts_of(env, "113") == []
    status = {s.key: s for s in env.admin.status()}["DOCS"]
    assert status.restricted_pages == 1 and status.left_out[0].page_id == "113"
    assert "1 restricted page left out" in space_line(status, SLACK)  # App Home's count (no titles there)


def test_a_restriction_on_an_ancestor_leaves_out_its_descendants(env: SyncEnv, fake: FakeConfluence) -> None:
    fake.restrict("110", users=["bob"])  # Team: Meeting notes, Policies and On-call below it
    report = env.syncer.sync(DOCS)
    assert indexed(env) == {"100", "120"}
    reasons = {r.page_id: r.reason for r in report.restricted}
    assert reasons == {
        "110": "read restriction on the page itself",
        "111": "read restriction on its ancestor 'Team'",
        "112": "read restriction on its ancestor 'Team'",
        "113": "read restriction on its ancestor 'Team'",
    }
    # each level's restrictions were read once, though four pages share the ancestor
    reads = [r.path for r in fake.requests if r.path.endswith("/restriction/byOperation/read")]
    assert len(reads) == len(set(reads)) == 6


@pytest.mark.parametrize("status", [403, 500])
def test_unreadable_restrictions_count_as_restricted(env: SyncEnv, fake: FakeConfluence, status: int) -> None:
    fake.faults.restriction_statuses["112"] = status  # Policies; On-call is below it
    report = env.syncer.sync(DOCS)
    assert report.status == "ok"
    assert indexed(env) == {"100", "110", "111", "120"}
    reasons = {r.page_id: r.reason for r in report.restricted}
    assert set(reasons) == {"112", "113"}
    assert reasons["112"].startswith("read restrictions could not be read, so treated as restricted")
    assert (f"HTTP {status}" in reasons["112"]) and "ancestor 'Policies'" in reasons["113"]


def test_a_restriction_added_later_is_seen_by_the_next_full_sync(env: SyncEnv, fake: FakeConfluence) -> None:
    env.syncer.sync(DOCS)
    assert "113" in indexed(env) and texts_of(env, "113")
    fake.restrict("113", groups=["hr"])  # no new version: the incremental sync cannot see it
    assert "113" in indexed(env) and env.syncer.sync(DOCS).restricted == ()
    full = env.syncer.sync(DOCS, full=True)
    assert [r.page_id for r in full.restricted] == ["113"] and full.counts.deleted == 1
    assert "113" not in indexed(env) and texts_of(env, "113") == []
    # a page left out is checked again on every run: lifted, it comes back without a full sync
    fake.restrict("113")
    again = env.syncer.sync(DOCS)
    assert again.restricted == () and again.counts.added == 1 and "113" in indexed(env)
    assert {s.key: s for s in env.admin.status()}["DOCS"].restricted_pages == 0


def test_off_indexes_restricted_pages_and_turning_it_on_removes_them(
    env: SyncEnv, fake: FakeConfluence
) -> None:
    fake.restrict("112", groups=["hr"])
    env.syncer.permissions = "off"
    report = env.syncer.sync(DOCS)
    assert report.restricted == () and "113" in indexed(env) and "112" in indexed(env)
    assert not [r for r in fake.requests if "restriction" in r.path]  # off reads no restrictions
    env.syncer.permissions = "open-pages"  # a policy change re-checks every page, not only changed ones
    report = env.syncer.sync(DOCS)
    assert {r.page_id for r in report.restricted} == {"112", "113"} and report.counts.deleted == 2
    assert indexed(env) == {"100", "110", "111", "120"}


def test_cloud_reads_restrictions_through_v1(tmp_path: Path) -> None:
    with FakeConfluence(pages=tree_wiki(), context_path="/wiki", flavor="cloud") as fake:
        fake.restrict("112", groups=["hr"])
        env = make_env(tmp_path, fake.url, cloud=True)
        report = env.syncer.sync(DOCS)
    assert report.status == "ok", report.summary()
    assert indexed(env) == {"100", "110", "111", "120"}
    assert {r.page_id: r.reason for r in report.restricted}[
        "113"
    ] == "read restriction on its ancestor 'Policies'"


def test_the_policy_setting() -> None:
    assert load_settings(env={}).permissions == "open-pages"
    assert load_settings(env={"THREADWISE_PERMISSIONS": "OFF"}).permissions == "off"
    assert load_settings(env={"THREADWISE_PERMISSIONS": "Per-User"}).permissions == "per-user"
    with pytest.raises(ValueError, match="is not a policy"):
        load_settings(env={"THREADWISE_PERMISSIONS": "everyone"})


def run(capsys: pytest.CaptureFixture[str], data_dir: Path, *argv: str) -> tuple[int, str]:
    code = main(["--data-dir", str(data_dir), *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("policy", ["open-pages", "off"])
def test_cli_sync_status_and_ask(
    tmp_path: Path,
    fake: FakeConfluence,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    hashing_embedder: None,
    policy: str,
) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THREADWISE_LLM_BASE_URL", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CONFLUENCE_URL", fake.url)
    monkeypatch.setenv("CONFLUENCE_PERSONAL_TOKEN", "pat-secret")
    monkeypatch.setenv("THREADWISE_PERMISSIONS", policy)
    fake.restrict("112", groups=["hr"])
    assert run(capsys, tmp_path, "spaces", "add", "DOCS")[0] == 0
    code, out = run(capsys, tmp_path, "sync")
    assert code == 0
    code, out = run(capsys, tmp_path, "status", "--json")
    docs = json.loads(out)[0]
    code, text = run(capsys, tmp_path, "status")
    code, answer = run(
        capsys, tmp_path, "ask", "Within how many minutes does the on-call engineer answer pages?", "--json"
    )
    assert code == 0
    sources = {s["page_id"] for s in json.loads(answer)["sources"]}
    _, doctor = run(capsys, tmp_path, "doctor")
    if policy == "open-pages":
        assert docs["restricted_pages"] == 2 and docs["pages"] == 4
        assert {p["page_id"] for p in docs["left_out"]} == {"112", "113"}
        assert "2 pages left out as restricted" in text
        assert not sources & {"112", "113"} and "15 minutes" not in answer
        assert "✔ Permissions: open-pages" in doctor
    else:
        assert docs["restricted_pages"] == 0 and docs["pages"] == 6
        assert "113" in sources and "15 minutes" in answer  # the same question, answered from the page
        assert "! Permissions: THREADWISE_PERMISSIONS=off" in doctor


def test_the_permission_sync_applies_restrictions_under_open_pages(
    env: SyncEnv, fake: FakeConfluence
) -> None:
    from threadwise.sync.permission_sync import PermissionSyncer

    env.syncer.sync(DOCS)
    fake.restrict("113", groups=["hr"])  # no new version
    fetched = len(fake.served_pages())
    report = PermissionSyncer(syncer=env.syncer).sync(DOCS)
    assert report.status == "ok" and (report.changed, report.dropped, report.reopened) == (1, 1, 0)
    assert "113" not in indexed(env) and texts_of(env, "113") == []
    assert len(fake.served_pages()) == fetched  # nothing fetched, nothing embedded
    assert {s.key: s for s in env.admin.status()}["DOCS"].restricted_pages == 1
    fake.restrict("113")  # lifted: the permission sync says so, the next page sync fetches it
    report = PermissionSyncer(syncer=env.syncer).sync(DOCS)
    assert (report.changed, report.dropped, report.reopened) == (1, 0, 1) and "113" not in indexed(env)
    assert env.syncer.sync(DOCS).counts.added == 1 and "113" in indexed(env)
    env.syncer.permissions = "off"
    assert PermissionSyncer(syncer=env.syncer).sync(DOCS).status == "skipped"


def test_the_scheduler_runs_the_permission_sync(env: SyncEnv, fake: FakeConfluence) -> None:
    from threadwise.sync.scheduler import PERMISSION_JOB_ID, SyncScheduler

    env.admin.add_space("DOCS")
    env.admin.sync()
    fake.restrict("113", groups=["hr"])
    scheduler = SyncScheduler(admin=env.admin, interval_minutes=60, permission_interval_minutes=0.005)
    scheduler.start(run_now=False)
    try:
        deadline = time.monotonic() + 30
        while "113" in indexed(env):  # the page sync is an hour away: only the permission sync removes it
            assert time.monotonic() < deadline, "the permission sync did not run"
            time.sleep(0.05)
    finally:
        scheduler.shutdown()
    assert env.admin.store.last_run("DOCS").trigger != "schedule"  # type: ignore[union-attr]
    never = SyncScheduler(admin=env.admin, permission_interval_minutes=0)
    never.start(run_now=False)
    try:
        assert never._scheduler.get_job(PERMISSION_JOB_ID) is None
    finally:
        never.shutdown()
