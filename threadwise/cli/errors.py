"""The command line's one error style: `threadwise: error: <what went wrong, and the fix>` on stderr, exit
code 2 for usage and configuration errors and 1 for failures; a closed pipe ends the command quietly."""

from __future__ import annotations

import os
import sys

from threadwise.errors import ThreadwiseError


def print_error(message: str, code: int) -> int:
    """The one error style of the command line: `threadwise: error: …` on stderr; returns `code`."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return closed_pipe()
    print(f"threadwise: error: {message}", file=sys.stderr)
    return code


def describe_error(err: Exception) -> tuple[int, str]:
    """(exit code, message) for a failure: 2 for usage and configuration errors, 1 for the rest."""
    if isinstance(err, ThreadwiseError):
        return err.exit_code, str(err)
    if isinstance(err, FileNotFoundError | NotADirectoryError | IsADirectoryError | PermissionError):
        if err.strerror and err.filename:
            return 2, f"{err.filename}: {err.strerror}"
        return 2, str(err)
    if isinstance(err, ValueError):  # settings and arguments the parts refused
        return 2, str(err)
    return 1, f"{type(err).__name__}: {err} (run with -v for the details)"


def closed_pipe() -> int:
    """The reader went away (`threadwise trace 3 | head`): stop quietly, as Unix tools do (exit 141)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # Python's final flush must not fail again
    return 128 + 13
