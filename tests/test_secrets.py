"""Secrets stay out of what people see: credentials in URLs redacted in `doctor` and in logs."""

from __future__ import annotations

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
