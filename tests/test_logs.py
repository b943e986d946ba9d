"""THREADWISE_LOG_FORMAT=json: one JSON object per line from a real `threadwise` process, tied to the thread
and turn it concerns, with credentials redacted; text stays the default."""

from __future__ import annotations

import io
import json
import logging
import os
from dataclasses import astuple
from pathlib import Path

from tests.support.cli import threadwise_cli
from tests.support.llm import unused_port
from tests.support.slack_world import World
from threadwise.db.conversations import ThreadKey
from threadwise.logs import JsonFormatter, conversation_hash

SECRET = "s3cret-pw"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "OPENAI_", "SLACK_"))}
    # a language model nobody listens at, with a password in its URL: answering logs its failure
    url = f"http://admin:{SECRET}@127.0.0.1:{unused_port()}/v1"
    env |= {"THREADWISE_DATA_DIR": str(tmp_path), "THREADWISE_EMBEDDER": "hashing", "HOME": str(tmp_path)}
    env |= {"THREADWISE_LLM_BASE_URL": url, "THREADWISE_LLM_MAX_RETRIES": "0", "THREADWISE_LLM_TIMEOUT": "5"}
    return env | extra


def test_json_logs_are_one_object_a_line_naming_the_thread_without_secrets(tmp_path: Path) -> None:
    env = _env(tmp_path, THREADWISE_LOG_FORMAT="json")
    done = threadwise_cli(env, "ask", "--thread", "t-1", "who is on call?")
    assert done.returncode == 1  # the model is down: said on stderr, logged
    # the log lines (the progress bar and the error for the person at the terminal are not logs)
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    failure = next(line for line in lines if line["message"].startswith("LLM failure while answering"))
    assert failure["level"] == "WARNING" and failure["logger"] == "threadwise.chat.conversations"
    assert failure["time"].endswith("+00:00")
    assert failure["platform"] == "cli"
    assert failure["conversation"] == conversation_hash("cli", "local", "ask", "t-1")
    assert SECRET not in done.stderr + done.stdout


def test_text_stays_the_default_and_an_unknown_format_is_refused(tmp_path: Path) -> None:
    done = threadwise_cli(_env(tmp_path), "ask", "who is on call?")
    assert " WARNING threadwise.chat.conversations: LLM failure while answering" in done.stderr
    assert "admin:***@127.0.0.1" in done.stderr and SECRET not in done.stderr
    assert not any(line.startswith("{") for line in done.stderr.splitlines())
    refused = threadwise_cli(_env(tmp_path, THREADWISE_LOG_FORMAT="xml"), "status")
    assert refused.returncode == 2 and "THREADWISE_LOG_FORMAT must be text or json" in refused.stderr


def test_a_line_logged_while_answering_names_the_turn(world: World) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("threadwise.chat.conversations")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        key = ThreadKey("slack", "T1", "C1", "1700000000.000100")
        view = world.conversations.ask(key, "how do I request a new laptop?")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    [line] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert line["message"] == f"turn {view.turn_id}: answered" and line["turn_id"] == view.turn_id
    assert (line["platform"], line["conversation"]) == ("slack", conversation_hash(*astuple(key)))
