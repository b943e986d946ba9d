"""Failures recorded where admins look: `status`, `status --json` and the Slack Home tab list the files an
`index --docs` skipped and the pages a sync could not index, with their reasons, and a run killed with
SIGKILL midway shows as interrupted until the next run completes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.cli import threadwise_cli_batch
from tests.support.fake_model_server import FakeModelServer
from threadwise.slack.home import home_view

ROOT = Path(__file__).resolve().parents[1]


def page_json(pid: str, text: str, *, space: str = "DOCS", **extra: Any) -> str:
    return json.dumps(
        {
            "id": pid,
            "title": f"Page {pid}",
            "url": f"https://wiki.example.com/pages/{pid}/",
            "space": space,
            "content": f"<p>{text}</p>",
            **extra,
        },
        ensure_ascii=False,
    )


def write_folder(folder: Path, good: int) -> dict[str, str]:
    """`good` readable pages and one file of each bad kind; returns bad file or page title -> why skipped."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(good):
        (folder / f"p{i:03}.json").write_text(page_json(str(100 + i), f"Page {i} says the code is {i * 7}."))
    (folder / "not-json.json").write_text("{not json")
    (folder / "array.json").write_text("[1, 2]")
    (folder / "no-content.json").write_text(json.dumps({"id": "9", "title": "No body"}))
    (folder / "bad-version.json").write_text(page_json("901", "text", version="seven"))
    (folder / "latin1.json").write_bytes(page_json("902", "Gr\xf6\xdfe").encode("latin-1"))
    (folder / "zz-duplicate.json").write_text(page_json("100", "a second page 100"))
    (folder / "macro-only.json").write_text(
        page_json("903", "").replace("<p></p>", "<ac:structured-macro ac:name='toc'/>")
    )
    return {
        "not-json.json": "unreadable page file",
        "array.json": "expected a JSON object",
        "no-content.json": "no 'content' string",
        "bad-version.json": "'version' is not a number",
        "latin1.json": "unreadable page file",
        "Page 100": "duplicate page id 100",
        "Page 903": "no text left after parsing",
    }


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "CONFLUENCE_", "SLACK_"))}
    return {**env, "THREADWISE_DATA_DIR": str(tmp_path / "data"), "THREADWISE_EMBEDDER": "hashing"}


def test_status_lists_each_skipped_file_with_its_reason(tmp_path: Path, env: dict[str, str]) -> None:
    expected = write_folder(tmp_path / "docs", good=3)
    indexed, status, as_json = threadwise_cli_batch(
        env, ("index", "--docs", str(tmp_path / "docs")), ("status",), ("status", "--json")
    )
    assert indexed.returncode == 1, indexed.stderr
    assert status.returncode == 0, status.stderr
    text = status.stdout
    assert f"folder {(tmp_path / 'docs').resolve()}: last index --docs" in text
    assert "partial" in text and "10 files, 3 embedded, 0 unchanged, 7 skipped" in text
    assert "... and 2 more (see status --json)" in text  # five shown, the rest in the JSON

    entries = json.loads(as_json.stdout)
    assert [e["kind"] for e in entries] == ["space", "folder"]  # DOCS (from the files), then the folder
    run = entries[1]["last_run"]
    assert run["status"] == "partial" and run["failed"] == 7 and run["pages"] == 10
    reasons = {f["title"]: f["reason"] for f in run["failures"]}
    assert reasons.keys() == expected.keys()
    for name, why in expected.items():
        assert why in reasons[name], (name, reasons[name])


class HangingModelServer(FakeModelServer):
    """Embeds `calls_before_hang` batches, then holds every further request until `release` is set: the client
    is parked mid-run, ready to be killed."""

    def __init__(self, *, calls_before_hang: int) -> None:
        super().__init__()
        self.calls_before_hang = calls_before_hang
        self.calls = 0
        self.hanging = threading.Event()
        self.release = threading.Event()

    def vectors(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls > self.calls_before_hang:
            self.hanging.set()
            self.release.wait(60)
        return super().vectors(texts)


def test_an_index_run_killed_midway_shows_as_interrupted_and_the_next_run_completes(
    tmp_path: Path, env: dict[str, str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(48):  # three batches of 16 pages: the kill lands while the third is embedded, when the
        # first is written and the second may be being written (the index pipeline writes one batch behind)
        (docs / f"p{i:03}.json").write_text(page_json(str(100 + i), f"Page {i} says the code is {i * 7}."))
    server = HangingModelServer(calls_before_hang=3)
    with server:
        served = {
            **{k: v for k, v in env.items() if k != "THREADWISE_EMBEDDER"},
            "THREADWISE_EMBEDDINGS_BASE_URL": server.url,
            "THREADWISE_EMBEDDINGS_MODEL": "hashing-256",
        }
        run = subprocess.Popen(
            [sys.executable, "-m", "threadwise", "index", "--docs", str(docs)],
            env=served,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert server.hanging.wait(60), "the index run never reached its third batch"
            os.kill(run.pid, signal.SIGKILL)
            assert run.wait(30) == -signal.SIGKILL
        finally:
            server.release.set()
            if run.poll() is None:
                run.kill()
                run.wait(10)

        before, text, again, after = threadwise_cli_batch(
            served, ("status", "--json"), ("status",), ("index", "--docs", str(docs)), ("status", "--json")
        )
        entries = json.loads(before.stdout)
        folder = next(e for e in entries if e["kind"] == "folder")
        assert folder["last_run"]["status"] == "interrupted"
        assert "killed or crashed" in folder["last_run"]["error"]
        done = sum(e["pages"] for e in entries if e["kind"] == "space")
        assert 0 < done < 48  # the batches before the kill were swapped in, nothing after
        assert "interrupted" in text.stdout

        assert again.returncode == 0, again.stderr
        assert f"48 pages: {48 - done} embedded, {done} unchanged, 0 skipped" in again.stdout
        entries = json.loads(after.stdout)
        assert next(e for e in entries if e["kind"] == "folder")["last_run"]["status"] == "ok"
        assert next(e for e in entries if e["kind"] == "space")["pages"] == 48


def test_the_home_tab_shows_admins_the_problems_of_the_last_runs(tmp_path: Path) -> None:
    from tests.support.fake_confluence import FakeConfluence
    from tests.support.fake_confluence_pages import tree_wiki
    from tests.support.sync_env import make_env
    from threadwise.connectors.scope import SpaceScope

    with FakeConfluence(pages=tree_wiki(extra_pages=4), context_path="/confluence") as fake:
        sync = make_env(tmp_path / "data", fake.url)
        fake.faults.broken_pages = {"112"}
        report = sync.syncer.sync(SpaceScope.of("DOCS"))
    assert report.status == "partial"
    spaces, folders = sync.admin.status(), sync.admin.folder_status()
    admin_view = json.dumps(home_view(spaces=spaces, folders=folders, is_admin=True, feedback={}))
    user_view = json.dumps(home_view(spaces=spaces, folders=folders, is_admin=False, feedback=None))
    reason = report.failures[0].reason
    assert "Last runs with problems" in admin_view and "Sync of DOCS" in admin_view
    assert json.dumps(reason)[1:-1][:40] in admin_view
    assert "Last runs" not in user_view and "partial" in user_view  # everyone sees the result, not the why


def test_status_shows_the_latest_run_of_each_folder(tmp_path: Path) -> None:
    from threadwise.core.types import PageFailure
    from threadwise.db.base import make_engine, make_sessions
    from threadwise.db.schema import upgrade
    from threadwise.sync.store import FOLDER_TRIGGER, RunCounts, SyncStore

    engine = make_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    upgrade(engine)
    store = SyncStore(sessions=make_sessions(engine))
    first, _ = store.start_run("/srv/docs", full=True, trigger=FOLDER_TRIGGER)
    store.finish_run(first, status="ok", counts=RunCounts(pages=1))
    second, _ = store.start_run("/srv/docs", full=True, trigger=FOLDER_TRIGGER)
    store.finish_run(
        second, status="partial", counts=RunCounts(pages=1, failed=1), failures=[PageFailure("7", "T", "why")]
    )
    latest = store.last_runs_by_space(FOLDER_TRIGGER)
    assert [(r.id, r.status, r.failures) for r in latest] == [
        (second, "partial", [{"page_id": "7", "title": "T", "reason": "why"}])
    ]
