"""Confluence Cloud hides e-mail addresses (`email: ""` unless the profile shows it, even to admins:
CONFCLOUD-72205). Against the independent Cloud fake (../shared/fakes, `--cloud`): such a person reads only the
documented fallback and is told why; the admin's THREADWISE_CONFLUENCE_EMAILS file (a CSV of account id and
e-mail, as admin.atlassian.com exports users) maps them, read again when it changes; `doctor` says which
applies. Then every mapped user reads exactly what the fake's `/__control/access` says Confluence lets them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.shared_confluence_cli import SharedConfluenceCli
from threadwise.permissions import Asker
from threadwise.permissions.email_map import EmailMapFile, parse_email_map

TOKEN = "cloud-api-token"
USERS = {  # username -> (e-mail, groups, e-mail shown to API callers)
    "alice": ("alice@corp.example", ["confluence-users", "hr"], True),
    "dave": ("dave@corp.example", ["confluence-users"], False),  # "Only you and admins": hidden
    "erin": ("erin@corp.example", ["confluence-users", "hr"], False),
}
SALARIES = "What are the salary bands?"


@dataclass
class Cloud(SharedConfluenceCli):
    emails_file: Path

    def ask(self, email: str) -> dict[str, Any]:
        code, out = self.run("ask", SALARIES, "--json", "--as", email)
        assert code == 0, out
        return dict(json.loads(out))

    def account_ids(self) -> dict[str, str]:
        return {u["username"]: u["account_id"] for u in self.control("users")["users"]}


@pytest.fixture
def cloud(
    shared_fakes: Callable[[str], ModuleType],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    hashing_embedder: None,
) -> Iterator[Cloud]:
    server, url = shared_fakes("fake_confluence").start(token=TOKEN, cloud=True)
    world = Cloud(url.removesuffix("/wiki"), tmp_path / "data", capsys, tmp_path / "users.csv")
    try:
        world.control(
            "users",
            [{"username": u, "email": e, "groups": g, "email_visible": v} for u, (e, g, v) in USERS.items()],
        )
        world.control("spaces", {"key": "HR", "view": {"groups": ["confluence-users"]}})
        bands = "<p>Salary bands: the salary bands for 2026 are L1 50k, L2 65k, L3 80k.</p>"
        world.control("pages", {"id": "301", "space": "HR", "title": "Handbook", "body": "<p>Welcome.</p>"})
        world.control(
            "pages",
            {
                "id": "302",
                "space": "HR",
                "title": "Salary bands",
                "body": bands,
                "parent_id": "301",
                "restrictions": {"read": {"users": ["dave"], "groups": ["hr"]}},
            },
        )
        for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THREADWISE_LLM_BASE_URL", "SLACK_BOT_TOKEN"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("CONFLUENCE_URL", url)
        monkeypatch.setenv("CONFLUENCE_CLOUD", "true")
        monkeypatch.setenv("CONFLUENCE_USERNAME", "fakeadmin@example.com")
        monkeypatch.setenv("CONFLUENCE_API_TOKEN", TOKEN)
        monkeypatch.setenv("THREADWISE_PERMISSIONS", "per-user")
        monkeypatch.setenv("THREADWISE_CONFLUENCE_EMAILS", str(world.emails_file))
        assert world.run("spaces", "add", "HR")[0] == 0
        yield world
    finally:
        server.shutdown()


def test_a_hidden_e_mail_gets_the_fallback_and_the_reason_then_the_admins_file_maps_it(cloud: Cloud) -> None:
    cloud.emails_file.write_text("User id,User name,email\n")  # the export's header, nobody in it yet
    code, out = cloud.run("sync")
    assert code == 0, out
    # alice shows her address: matched by what Confluence says, she reads the page her group may read
    assert "302" in {s["page_id"] for s in cloud.ask("alice@corp.example")["sources"]}
    # dave hides his: no Confluence account matches, so only the fallback, and the answer says why
    dave = cloud.ask("dave@corp.example")
    assert "302" not in {s["page_id"] for s in dave["sources"]} and "80k" not in dave["answer"]
    assert dave["not_found"] and "couldn't match you to a Confluence account" in dave["unmapped_note"]
    assert "THREADWISE_CONFLUENCE_EMAILS" in dave["unmapped_note"]
    code, text = cloud.run("ask", SALARIES, "--as", "dave@corp.example")  # the plain reply says it too
    assert "couldn't match you to a Confluence account" in text
    code, doctor = cloud.run("doctor")
    assert "2 Confluence users cannot be mapped" in doctor and "read only pages anonymous users may" in doctor
    # the admin adds dave and erin (the export of admin.atlassian.com: account id and e-mail); no re-sync
    ids = cloud.account_ids()
    rows = [f"{ids[u]},{u.title()},{USERS[u][0]}" for u in ("dave", "erin")]
    cloud.emails_file.write_text("User id,User name,email\n" + "\n".join(rows) + "\n")
    dave = cloud.ask("dave@corp.example")
    assert "302" in {s["page_id"] for s in dave["sources"]} and dave["unmapped_note"] == ""
    code, doctor = cloud.run("doctor")
    assert "cannot be mapped" not in doctor and "(2 accounts)" in doctor
    # now everyone reads exactly what Confluence lets them
    permissions, emails = cloud.permissions(), cloud.emails()
    for pid in ("301", "302"):
        truth = cloud.control(f"access?page={pid}")
        for username, may in truth["readers"].items():
            ours = permissions.may_read(Asker(emails[username], private=True), [pid])
            assert ours == may, f"{username} on page {pid}: ours {ours}, Confluence {may}"


def test_a_mapping_file_that_cannot_be_read_maps_nobody_and_doctor_fails(cloud: Cloud) -> None:
    assert cloud.run("sync")[0] == 0  # the file does not exist
    assert "302" not in {s["page_id"] for s in cloud.ask("dave@corp.example")["sources"]}
    code, doctor = cloud.run("doctor")
    assert "THREADWISE_CONFLUENCE_EMAILS" in doctor and "cannot be read" in doctor and "maps nobody" in doctor


def test_the_mapping_file_reads_the_documented_columns(tmp_path: Path) -> None:
    text = "User id,User name,email,User status\n712020:abc,Dave,Dave@Corp.example,Active\n,No id,x@y.z,\n"
    assert parse_email_map(text, source="f").emails == {"712020:abc": "dave@corp.example"}
    chat = parse_email_map("Username,Email,Chat email\njsmith,j@dc.example,joe@chat.example\n", source="f")
    assert chat.emails == {"jsmith": "joe@chat.example"}  # a chat address of its own wins
    assert "needs a header" in parse_email_map("name,phone\n", source="f").error
    path = tmp_path / "m.csv"
    path.write_text("accountId,email\na1,one@x.example\n")
    live = EmailMapFile(path=path)
    assert live.current().accounts_of("one@x.example") == {"a1"}
    path.write_text("accountId,email\na1,two@x.example\n")
    os.utime(path, (1, 1))  # a new modification time: read again
    assert live.current().accounts_of("two@x.example") == {"a1"}
