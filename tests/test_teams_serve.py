"""`threadwise serve --http PORT --teams PORT`: Slack and Teams in one process, started through the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.fake_bot_connector import FakeBotConnector
from tests.support.fake_slack import FakeSlack
from tests.support.llm import unused_port
from tests.support.teams_activities import PERSONAL, TeamsSender
from tests.support.teams_world import wait_healthy

ROOT = Path(__file__).resolve().parents[1]


def test_serve_runs_slack_and_teams_in_one_process(tmp_path: Path) -> None:
    with FakeBotConnector() as connector, FakeSlack() as slack:
        slack_port, teams_port = unused_port(), unused_port()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "THREADWISE_DATA_DIR": str(tmp_path / "data"),
            "THREADWISE_EMBEDDER": "hashing",
            "THREADWISE_LLM": "off",
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": "0123456789abcdef0123456789abcdef",
            "SLACK_API_URL": slack.api_url,
            "THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED": "1",
        }
        command = [sys.executable, "-m", "threadwise", "serve", "--host", "127.0.0.1", "--no-sync"]
        command += ["--http", str(slack_port), "--teams", str(teams_port)]
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_healthy(f"http://127.0.0.1:{teams_port}/healthz", process, timeout=180)
            wait_healthy(f"http://127.0.0.1:{slack_port}/healthz", process, timeout=60)
            sender = TeamsSender(url=f"http://127.0.0.1:{teams_port}/api/messages", service_url=connector.url)
            assert (
                sender.post(
                    sender.message("how do I get a laptop?", where="personal", mention=False)
                ).status_code
                == 200
            )
            reply = connector.wait_for(lambda: [c for c in connector.sent(PERSONAL) if c.method == "send"])[0]
            assert "no Confluence space has been synced" in reply.body["text"]  # nothing indexed: said so
        finally:
            process.terminate()
            out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert "WITHOUT checking who sent them" in err  # the local-trial mode says so loudly
        assert f"127.0.0.1:{teams_port}/api/messages" in out
