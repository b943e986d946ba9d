"""The `threadwise` command line: one argparse tree; each module adds its subcommands.

Start-up stays light: the command modules import only argparse-level code at the top, and each command
imports what it uses (openai, chromadb, the models, slack, atlassian) when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from threadwise import logs
from threadwise.cli.errors import closed_pipe, describe_error, print_error
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

# Each module has `register(subparsers, build)`; `build()` returns the composition root for the given options.
COMMAND_MODULES = (
    "threadwise.cli.qa_cmds",
    "threadwise.cli.eval_cmd",
    "threadwise.cli.admin_cmds",
    "threadwise.cli.serve_cmds",
    "threadwise.cli.data_cmds",
    "threadwise.cli.teams_cmds",
    "threadwise.cli.report_cmd",
)


class Parser(argparse.ArgumentParser):
    """argparse with the command line's one error style: `threadwise: error: …` (subcommands too), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"threadwise: error: {message} (see `{self.prog} --help`)\n")


def make_parser() -> tuple[argparse.ArgumentParser, Callable[[], Threadwise]]:
    parser = Parser(prog="threadwise", description=__doc__)
    parser.add_argument(
        "--data-dir", type=Path, help="data folder (SQLite, Chroma, BM25); env THREADWISE_DATA_DIR"
    )
    parser.add_argument("--config", type=Path, help="TOML config file; env THREADWISE_CONFIG")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    state: dict[str, object] = {}

    def build() -> Threadwise:
        """The composition root for the parsed options (built once)."""
        if "app" not in state:
            args = state["args"]
            assert isinstance(args, argparse.Namespace)
            settings = load_settings(config_file=args.config, data_dir=args.data_dir)
            state["app"] = Threadwise(settings=settings)
        app = state["app"]
        assert isinstance(app, Threadwise)
        return app

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub, build)
    parser.set_defaults(_state=state)
    return parser, build


def run() -> int:
    """The `threadwise` console script and `python -m threadwise`."""
    return main(exit_at_once=True)


def main(argv: list[str] | None = None, *, exit_at_once: bool = False) -> int:
    """Run one command; its exit code. With `exit_at_once`, a command that marks itself so (`index`, `sync`,
    `eval`, `ask`: everything they write is committed when they return, and an index survives even kill -9
    at any point, bench/crash_matrix.py) ends the process as soon as its output is flushed, without the
    interpreter's teardown, which took about a second once a model was loaded (OpenVINO freeing its
    kernels, then every module)."""
    parser, _build = make_parser()
    try:
        args = parser.parse_args(argv)  # usage errors exit 2 here, as `threadwise: error: …`
    except SystemExit as done:  # --help, or a usage error
        try:
            sys.stdout.flush()
        except BrokenPipeError:  # `threadwise --help | head -1`
            return closed_pipe()
        return done.code if isinstance(done.code, int) else 2
    args._state["args"] = args
    os.umask(0o077)  # the data folder and every file in it (SQLite, Chroma, BM25, locks): this user only
    log_format = os.environ.get("THREADWISE_LOG_FORMAT", "text").strip().lower() or "text"
    if log_format not in ("text", "json"):
        return print_error(f"THREADWISE_LOG_FORMAT must be text or json, not {log_format!r}", 2)
    level = logging.DEBUG if args.verbose else logging.WARNING
    logs.configure(level=level, json_format=log_format == "json")
    for noisy in ("chromadb", "httpx", "urllib3", "sentence_transformers", "bm25s", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        if exit_at_once and getattr(args, "exit_at_once", False):
            sys.stderr.flush()
            logging.shutdown()
            os._exit(code)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return closed_pipe()
    except Exception as err:
        code, message = describe_error(err)
        if args.verbose:
            logging.getLogger("threadwise").exception("the command failed")
        return print_error(message, code)
