"""Secrets stay out of what people see: credentials in URLs redacted in `doctor` and in logs."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from threadwise.redact import RedactingFilter, redact_credentials, redact_endpoints

ROOT = Path(__file__).resolve().parents[1]


def test_credentials_and_endpoints_are_redacted() -> None:
    assert (
        redact_credentials("at http://user:s3cret@wiki.local:8090/x")
        == "at http://user:***@wiki.local:8090/x"
    )
    # an e-mail address as user name (Cloud), an "@" in the password, a token alone: nothing of them is left
    assert redact_credentials("https://me@acme.com:tok3n@acme.atlassian.net/wiki") == (
        "https://me@acme.com:***@acme.atlassian.net/wiki"
    )
    assert redact_credentials("'http://u:p@ss@h:1' and https://tok@h/x?to=a@b") == (
        "'http://u:***@h:1' and https://***@h/x?to=a@b"
    )
    assert redact_endpoints("The model at http://10.0.0.5:8000/v1 failed; retry 10.0.0.5:8000") == (
        "The model at [endpoint] failed; retry [endpoint]"
    )
    record = logging.LogRecord("t", logging.WARNING, __file__, 1, "GET %s failed", ("https://a:b@h/p",), None)
    RedactingFilter().filter(record)
    assert record.getMessage() == "GET https://a:***@h/p failed"


def test_doctor_never_prints_the_password_in_confluence_url(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "THREADWISE_DATA_DIR": str(tmp_path),
        "THREADWISE_EMBEDDER": "hashing",
        "CONFLUENCE_URL": "http://admin:hunter2@127.0.0.1:9/confluence",
        "CONFLUENCE_CONNECT_TIMEOUT": "1",  # nothing listens there: give up after 1 s, not the default 10
        "CONFLUENCE_USERNAME": "admin",
        "CONFLUENCE_API_TOKEN": "hunter2",
        "SLACK_BOT_TOKEN": "",
    }
    done = subprocess.run(
        [sys.executable, "-m", "threadwise", "doctor"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Confluence" in done.stdout
    assert "hunter2" not in done.stdout + done.stderr


def test_a_password_in_confluence_url_reaches_no_output_store_or_admin_view(tmp_path: Path) -> None:
    """CONFLUENCE_URL=http://user:secret@host and a Confluence that keeps failing: `sync` prints the failure,
    the run history stores it, and `status`, the App Home and the admin commands show it, all without the
    password (the connector's message is made clean; the store redacts again)."""
    from tests.support.cli import threadwise_cli, threadwise_cli_batch
    from tests.support.fake_confluence import FakeConfluence
    from tests.support.fake_confluence_pages import tree_wiki
    from tests.support.sync_env import make_env
    from threadwise.connectors.scope import SpaceScope
    from threadwise.slack.admins import slack_commands
    from threadwise.slack.home import home_view
    from threadwise.teams.admin import TeamsAdmins, make_commands, run_command

    secret = "hunter2-s3cret"
    data = tmp_path / "data"
    fake = FakeConfluence(pages=tree_wiki(), context_path="/confluence", users={"admin": secret})
    with fake:
        url = fake.url.replace("http://", f"http://admin:{secret}@")
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "CONFLUENCE_", "SLACK_"))
        }
        env |= {
            "THREADWISE_DATA_DIR": str(data),
            "THREADWISE_EMBEDDER": "hashing",
            "CONFLUENCE_URL": url,
            "CONFLUENCE_PERSONAL_TOKEN": "pat-secret",
        }
        added = threadwise_cli(env, "spaces", "add", "DOCS")
        assert added.returncode == 0, added.stderr
        fake.faults.retry_after = "0"  # 429 with Retry-After 0: the retries are spent at once
        fake.faults.next_statuses = [429] * 6
        synced, status = threadwise_cli_batch(env, ("sync", "DOCS"), ("status", "--json"))
        # the same through the sync service, with Confluence answering 500
        service = make_env(data, url, backoff_s=0.0, max_retries=2)
        fake.faults.next_statuses = [500] * 3
        report = service.syncer.sync(SpaceScope.of("DOCS"))

    assert synced.returncode == 1
    assert "kept failing" in synced.stdout + synced.stderr
    assert "admin:***@127.0.0.1" in synced.stdout + synced.stderr  # which Confluence, without the password
    assert report.status == "failed" and "HTTP 500" in report.error and secret not in report.error
    runs = json.loads(status.stdout)[0]["last_run"]
    assert runs["status"] == "failed" and "kept failing" in runs["error"]
    shown = [synced.stdout, synced.stderr, status.stdout, status.stderr, threadwise_cli(env, "status").stdout]
    shown.append((data / "threadwise.sqlite").read_bytes().decode("latin-1"))
    spaces, folders = service.admin.status(), service.admin.folder_status()
    assert spaces[0].last_run is not None and "HTTP 500" in spaces[0].last_run.error
    shown.append(json.dumps(home_view(spaces=spaces, folders=folders, is_admin=True, feedback={})))
    replies: list[str] = []
    slack = slack_commands(admin=service.admin, is_admin=TeamsAdmins(["U1"]))
    for command in ("status", "spaces"):
        slack.run(command, user="U1", channel="C1", reply=replies.append)
        run_command(
            make_commands(service.admin, ["aad-1"]),
            command,
            user="aad-1",
            channel="19:c",
            reply=replies.append,
            feedback=dict,
        )
    assert any("kept failing" in r for r in replies)
    for text in [*shown, *replies]:
        assert secret not in text
