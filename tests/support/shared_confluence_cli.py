"""`threadwise` commands run against the independent Confluence fake (../shared/fakes/fake_confluence.py), and
its control API on 127.0.0.1: what the per-user tests against it share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from threadwise.cli import main
from threadwise.permissions import PermissionService
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise


@dataclass
class SharedConfluenceCli:
    root: str  # the fake's root: its control API is at /__control (the site may sit below a context path)
    data_dir: Path
    capsys: pytest.CaptureFixture[str]

    def control(self, path: str, body: Any = None) -> Any:
        url = f"{self.root}/__control/{path}"
        r = requests.get(url, timeout=10) if body is None else requests.post(url, json=body, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()

    def run(self, *argv: str) -> tuple[int, str]:
        code = main(["--data-dir", str(self.data_dir), *argv])
        out = self.capsys.readouterr()
        return code, out.out + out.err

    def permissions(self) -> PermissionService:
        return Threadwise(settings=load_settings(data_dir=self.data_dir)).permissions

    def emails(self) -> dict[str, str]:
        """username -> the address the fake holds for them (shown or not)."""
        return {u["username"]: u["email"] for u in self.control("users")["users"]}
