"""`threadwise teams package`, `serve --teams` refusing to start without authentication settings, and the
Teams lines of `threadwise doctor`, through the real CLI."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path

import pytest

from threadwise.cli import main
from threadwise.teams import package
from threadwise.teams.doctor import teams_checks
from threadwise.teams.settings import TeamsSettings

APP_ID = "11111111-2222-3333-4444-555555555555"
TENANT_ID = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_package_holds_the_manifest_and_both_icons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAMS_CLIENT_ID", APP_ID)
    monkeypatch.setenv("THREADWISE_TEAMS_DOMAIN", "https://threadwise.example.com/api/messages")
    monkeypatch.setenv("CONFLUENCE_URL", "https://example.atlassian.net/wiki")
    out = tmp_path / "app.zip"
    assert main(["--data-dir", str(tmp_path / "data"), "teams", "package", "--out", str(out)]) == 0
    with zipfile.ZipFile(io.BytesIO(out.read_bytes())) as zf:
        assert sorted(zf.namelist()) == ["color.png", "manifest.json", "outline.png"]
        manifest = json.loads(zf.read("manifest.json"))
        assert _png_size(zf.read("color.png")) == (192, 192)
        assert _png_size(zf.read("outline.png")) == (32, 32)
    assert manifest["manifestVersion"] == "1.20" and manifest["$schema"].endswith(
        "v1.20/MicrosoftTeams.schema.json"
    )
    assert manifest["id"] == APP_ID
    bot = manifest["bots"][0]
    assert bot["botId"] == APP_ID and bot["scopes"] == ["personal", "team", "groupChat"]
    assert {c["title"] for c in bot["commandLists"][0]["commands"]} >= {"admin status", "admin help"}
    assert manifest["validDomains"] == ["example.atlassian.net", "threadwise.example.com"]
    assert manifest["icons"] == {"color": "color.png", "outline": "outline.png"}
    rsc = {p["name"] for p in manifest["authorization"]["permissions"]["resourceSpecific"]}
    assert "ChannelMessage.Read.Group" in rsc  # follow-ups in channel threads without a new mention


def test_the_package_needs_the_bot_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TEAMS_CLIENT_ID", raising=False)
    assert main(["--data-dir", str(tmp_path), "teams", "package", "--out", str(tmp_path / "x.zip")]) == 2
    assert "TEAMS_CLIENT_ID is not set" in capsys.readouterr().err
    assert not (tmp_path / "x.zip").exists()


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({}, "set TEAMS_CLIENT_ID, TEAMS_CLIENT_SECRET and TEAMS_TENANT_ID"),
        (
            {"TEAMS_CLIENT_ID": APP_ID, "THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED": "1"},
            "is refused when TEAMS_CLIENT_ID is set",
        ),
        ({"TEAMS_CLIENT_ID": APP_ID}, "TEAMS_CLIENT_SECRET is not set"),
    ],
)
def test_serve_teams_refuses_to_start_and_says_what_to_set(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    says: str,
) -> None:
    for name in (
        "TEAMS_CLIENT_ID",
        "TEAMS_CLIENT_SECRET",
        "THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED",
        "SLACK_BOT_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["--data-dir", str(tmp_path), "serve", "--teams", "0", "--no-sync"]) == 2
    assert says in capsys.readouterr().err


def test_doctor_checks_the_teams_settings() -> None:
    assert teams_checks(TeamsSettings())[0].skipped
    bad_id = teams_checks(TeamsSettings(client_id="my-bot", client_secret="s"))
    assert not bad_id[0].ok and "GUID" in bad_id[0].detail and len(bad_id) == 1
    trial = teams_checks(TeamsSettings(allow_unauthenticated=True))
    assert trial[0].ok and "NOT authenticated" in trial[0].detail

    settings = teams_checks(TeamsSettings(client_id=APP_ID, client_secret="s", tenant_id="not-a-guid"))
    assert not settings[0].ok and "TEAMS_TENANT_ID" in settings[0].detail and len(settings) == 1


def test_the_package_carries_prompt_starters_and_exactly_the_permissions_the_bot_uses() -> None:
    built = package.manifest(bot_id=APP_ID)
    assert built["version"] == package.VERSION != "1.0.0"  # Teams takes an upload only with a higher version
    lists = built["bots"][0]["commandLists"]
    assert len(lists) <= 3 and sorted(s for entry in lists for s in entry["scopes"]) == [
        "groupChat",
        "personal",
        "team",
    ]
    for entry in lists:
        titles = [c["title"] for c in entry["commands"]]
        assert len(titles) <= 10 and all(len(t) <= 32 for t in titles)  # schema 1.20's limits
        assert "How do I request a new laptop?" in titles and "admin help" in titles
    team = next(e for e in lists if e["scopes"] == ["team"])
    assert {"admin auto", "admin private", "admin experts"} <= {c["title"] for c in team["commands"]}
    assert package.declared_permissions(built) == ["ChannelMessage.Read.Group", "ChatMessage.Read.Chat"]
    assert package.missing_permissions(package.declared_permissions(built)) == []
    older = {**built, "authorization": {"permissions": {"resourceSpecific": []}}}
    assert package.missing_permissions(package.declared_permissions(older)) == [
        "ChannelMessage.Read.Group",
        "ChatMessage.Read.Chat",
    ]
    [settings, line] = teams_checks(TeamsSettings(allow_unauthenticated=True))  # no token asked for
    assert line.name == "Teams package" and line.ok
    assert "ChannelMessage.Read.Group (channel posts without a mention" in line.detail
