"""Every command and flag of the README's Commands section, run as a new user would: in a subprocess, against an
empty data folder, a half-set-up configuration (CONFLUENCE_URL only), a bad TOML config file, and servers
that are not there (a 127.0.0.1 port nothing listens on). No traceback may reach the terminal, and the exit
code must say what happened: 0 done, 1 failed, 2 usage or configuration error."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from threadwise.connectors.files import SAMPLE_WIKI_DIR

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "Who is on call for a severity 1 incident?"


@dataclass(frozen=True)
class Case:
    config: str  # empty | half | bad-toml | unreachable
    argv: tuple[str, ...]
    code: int
    stdin: str = ""
    says: str = ""  # a piece of the output (stdout + stderr) the case must show
    env: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.env.items())
        return f"{self.config}{extra}: threadwise {' '.join(self.argv)}"


def cases() -> list[Case]:
    """The matrix; each case's id is unique (the results are keyed by it)."""
    docs = str(SAMPLE_WIKI_DIR)
    chat_input = f"{QUESTION}\n/explain\n/trace\n/new\n/quit\n"
    usage, config = 2, 2
    cases = [
        Case("empty", ("--help",), 0, says="COMMAND"),
        Case("empty", ("chat",), 0, stdin=chat_input, says="sample wiki"),
        Case("empty", ("chat", "--docs", docs), 0, stdin=chat_input, says="turn 1"),
        Case("empty", ("ask", QUESTION), 0, says="sample wiki"),
        Case("empty", ("ask", QUESTION, "--json", "--thread", "t1"), 0, says='"turn_id"'),
        Case("empty", ("ask", QUESTION, "--docs", docs), 0, says="threadwise trace 1"),
        Case("empty", ("ask", QUESTION, "--docs", "/nonexistent"), usage, says="not a folder"),
        Case("empty", ("ask",), usage, says="required"),
        Case("empty", ("ask", QUESTION, "--as", "ann@example.com", "--channel"), 0, says="sample wiki"),
        Case("empty", ("trace", "1"), 1, says="there is no turn 1"),
        Case("empty", ("trace", "1", "--json"), 1, says="there is no turn 1"),
        Case("empty", ("trace", "one"), usage, says="invalid int"),
        Case("empty", ("index", "--docs", docs), 0, says="6 pages"),
        Case("empty", ("purge",), 0, says="older than 90 days"),
        Case("empty", ("report",), 0, says="What the wiki is missing"),
        Case("empty", ("report", "--days", "7", "--format", "json"), 0, says='"unanswered"'),
        Case("empty", ("report", "--since", "2026-01-01", "--out", "gaps.html"), 0, says="Wrote gaps.html"),
        Case("empty", ("report", "--days", "0"), usage, says="number of days"),
        Case("empty", ("purge", "--days", "7"), 0, says="older than 7 days"),
        Case(
            "empty",
            ("purge",),
            config,
            says="THREADWISE_RETENTION_DAYS",
            env={"THREADWISE_RETENTION_DAYS": "-1"},
        ),
        Case("empty", ("forget-user", "U0GONE"), 0, says="Removed for U0GONE"),
        Case("empty", ("index", "--docs", "/nonexistent"), usage, says="/nonexistent"),
        Case("empty", ("spaces", "list"), 0, says="No spaces configured"),
        Case(
            "empty",
            ("spaces", "add", "KEY", "--parent", "1", "--exclude-label", "L"),
            config,
            says="CONFLUENCE_URL",
        ),
        Case("empty", ("spaces", "remove", "KEY"), 1, says="not configured"),
        Case("empty", ("sync",), config, says="CONFLUENCE_URL"),
        Case("empty", ("sync", "KEY", "--full"), 1, says="not configured"),
        Case("empty", ("sync", "--permissions"), config, says="CONFLUENCE_URL"),
        Case("empty", ("status",), 0, says="Nothing indexed"),
        Case("empty", ("-v", "--data-dir", "elsewhere", "status"), 0, says="Nothing indexed"),
        Case("empty", ("status", "--json"), 0, says="[]"),
        Case("empty", ("serve",), config, says="SLACK_BOT_TOKEN"),
        Case("empty", ("serve", "--http", "0"), config, says="SLACK_BOT_TOKEN"),
        Case("empty", ("serve", "--teams", "0"), config, says="TEAMS_CLIENT_ID"),
        Case("empty", ("teams", "package"), config, says="TEAMS_CLIENT_ID"),
        Case(
            "empty",
            ("teams", "package", "--out", "app.zip", "--domain", "bot.example.com"),
            0,
            says="app.zip",
            env={"TEAMS_CLIENT_ID": "00000000-0000-0000-0000-000000000001"},
        ),
        Case("empty", ("doctor",), 1, says="SLACK_BOT_TOKEN"),
        Case("empty", ("doctor", "--http"), 1, says="SLACK_SIGNING_SECRET"),
        Case("empty", ("eval", "--docs", "/nonexistent"), usage, says="/nonexistent"),
        Case("empty", ("nonsense",), usage, says="invalid choice"),
        # CONFLUENCE_URL and nothing else: the likeliest first step
        Case("half", ("status",), 0, says="credentials missing"),
        Case("half", ("spaces", "list"), 0, says="No spaces configured"),
        Case("half", ("spaces", "list", "--available"), config, says="credentials missing"),
        Case("half", ("spaces", "add", "KEY"), config, says="credentials missing"),
        Case("half", ("spaces", "add", "KEY", "--everyone-may-view"), config, says="credentials missing"),
        Case("half", ("sync",), config, says="credentials missing"),
        Case("half", ("doctor",), 1, says="credentials missing"),
        Case("half", ("ask", QUESTION), 0, says="sample wiki"),
        # a config file that is not valid TOML: every command that reads settings names the file
        Case("bad-toml", ("status",), config, says="bad.toml"),
        Case("bad-toml", ("ask", QUESTION), config, says="bad.toml"),
        Case("bad-toml", ("doctor",), config, says="bad.toml"),
        Case("bad-toml", ("--help",), 0, says="COMMAND"),
        Case("empty", ("--config", "/nonexistent.toml", "status"), config, says="/nonexistent.toml"),
        Case("empty", ("status",), config, env={"THREADWISE_TOP_K": "ten"}, says="THREADWISE_TOP_K"),
        # Confluence, Slack and the LLM configured, none of them there
        Case(
            "unreachable",
            ("spaces", "list", "--available"),
            1,
            says="cannot connect to Confluence at http://127.0.0.1",
        ),
        Case(
            "unreachable",
            ("spaces", "add", "KEY"),
            1,
            says="cannot connect to Confluence at http://127.0.0.1",
        ),
        Case("unreachable", ("sync",), 0, says="No spaces configured"),
        Case("unreachable", ("doctor",), 1, says="127.0.0.1"),
        Case("unreachable", ("ask", QUESTION), 1, says="127.0.0.1"),
        Case("unreachable", ("chat",), 0, stdin=chat_input, says="127.0.0.1"),
        Case("unreachable", ("serve", "--http", "0", "--no-sync"), config, says="SLACK_SIGNING_SECRET"),
        Case("unreachable", ("serve", "--no-sync"), 1, says="127.0.0.1"),
    ]
    return cases


def free_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(case: Case, folder: Path, port: int) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("THREADWISE_", "CONFLUENCE_", "SLACK_"))}
    keep = {k: v for k, v in keep.items() if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
    env = {
        **keep,
        "HOME": str(folder),
        "XDG_DATA_HOME": str(folder / "xdg"),
        "THREADWISE_DATA_DIR": str(folder / "data"),
        "THREADWISE_EMBEDDER": "hashing",  # the commands' paths, not the models' speed, are under test
        "PYTHONPATH": str(ROOT),
    }
    nowhere = f"http://127.0.0.1:{port}"
    if case.config == "half":
        env["CONFLUENCE_URL"] = f"{nowhere}/confluence"
    elif case.config == "bad-toml":
        bad = folder / "bad.toml"
        bad.write_text("SLACK_BOT_TOKEN = xoxb-not-in-quotes\n")
        env["THREADWISE_CONFIG"] = str(bad)
    elif case.config == "unreachable":
        env.update(
            CONFLUENCE_URL=f"{nowhere}/confluence",
            CONFLUENCE_PERSONAL_TOKEN="token",
            CONFLUENCE_CONNECT_TIMEOUT="1",
            SLACK_BOT_TOKEN="xoxb-1",
            SLACK_APP_TOKEN="xapp-1",
            SLACK_API_URL=f"{nowhere}/api/",
            THREADWISE_LLM_BASE_URL=f"{nowhere}/v1",
            THREADWISE_LLM_MAX_RETRIES="0",
            THREADWISE_LLM_TIMEOUT="5",
        )
    env.update(case.env)
    return env


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def run(case: Case, folder: Path, port: int) -> Result:
    folder.mkdir(parents=True)
    proc = subprocess.run(
        [sys.executable, "-m", "threadwise", *case.argv],
        input=case.stdin,
        capture_output=True,
        text=True,
        env=environment(case, folder, port),
        cwd=folder,
        timeout=240,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Result]]:
    """Every case at once, three subprocesses at a time (each in its own data folder)."""
    base, port = tmp_path_factory.mktemp("cli"), free_port()
    all_cases = cases()
    assert len({c.id for c in all_cases}) == len(all_cases)
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {c.id: pool.submit(run, c, base / f"case{i}", port) for i, c in enumerate(all_cases)}
        yield {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_command_exits_cleanly(case: Case, results: dict[str, Result]) -> None:
    got = results[case.id]
    both = got.out + got.err
    assert "Traceback" not in both, both
    assert got.code == case.code, both
    assert case.says in both, both
    if got.code != 0:
        # the one error style (argparse's usage errors share it)
        assert re.search(r"^threadwise: error: ", got.err, re.MULTILINE), got.err
        assert "Error:" not in got.err


def documented() -> set[tuple[str, str]]:
    """(command, flag or sub-action) pairs in the README's Commands block; flag "" for the command itself."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Commands", 1)[1].split("```", 2)[1]
    pairs: set[tuple[str, str]] = set()
    for line in block.splitlines():
        words = line.split()
        if len(words) < 2 or words[0] != "threadwise":
            continue
        command = words[1]
        pairs.add((command, ""))
        usage = line.split("  ")[0]  # the usage part, before the description column
        pairs.update((command, flag) for flag in re.findall(r"--[a-z][a-z-]*", usage))
        if command in ("spaces", "teams"):
            pairs.update((command, action) for action in re.findall(r"\b(list|add|remove|package)\b", usage))
    return pairs


def test_every_documented_command_and_flag_is_run() -> None:
    ran = {(c.argv[0], word) for c in cases() for word in ("", *c.argv[1:])}
    missing = documented() - ran
    assert not missing, f"README commands/flags no case runs: {sorted(missing)}"
    assert ("spaces", "--exclude-label") in documented() and ("ask", "--docs") in documented()


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`threadwise ask … | head`: the reader goes away first; no BrokenPipeError traceback."""
    case = Case("empty", ("ask", QUESTION, "--docs", str(SAMPLE_WIKI_DIR)), 141)
    env = environment(case, tmp_path, free_port())
    # exit 141 as for a process killed by SIGPIPE; argparse drops a --help it cannot write, then exits 0
    for argv, codes in ((case.argv, {141}), (("--help",), {0, 141})):
        proc = subprocess.Popen(
            [sys.executable, "-m", "threadwise", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp_path,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # nobody reads: the first write fails with EPIPE
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=240) in codes, err
        assert "Traceback" not in err and "BrokenPipeError" not in err, err
