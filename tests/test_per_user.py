"""THREADWISE_PERMISSIONS=per-user through the CLI: each asker gets what Confluence lets them read, a channel
only what everyone there may read.

Everything goes through the real `threadwise` commands (spaces add, sync, sync --permissions, ask --as) against
the local Confluence, Data Center and Cloud flavours, which serve read restrictions, space permissions, group
members and users as Confluence does: no test reads the restriction data any other way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.fake_confluence import FakeConfluence, FakePage, tree_wiki
from tests.support.fake_confluence_people import SpaceGrant
from threadwise.cli import main

ON_CALL = "Within how many minutes does the on-call engineer answer pages?"
BUDGET = "What is the travel budget for 2025?"


def wiki() -> list[FakePage]:
    budget = "<h2>Budget</h2><p>The travel budget for 2025 is 42000 euros.</p>"
    return [*tree_wiki(), FakePage(id="900", space="FIN", title="Budget", body=budget)]


@dataclass
class Cli:
    """Runs `threadwise` commands in one data folder against one fake Confluence."""

    data_dir: Path
    capsys: pytest.CaptureFixture[str]
    fake: FakeConfluence

    def run(self, *argv: str) -> tuple[int, str]:
        code = main(["--data-dir", str(self.data_dir), *argv])
        out = self.capsys.readouterr()
        return code, out.out + out.err

    def ask(self, question: str, email: str | None, *, channel: bool = False) -> dict:
        argv = [
            "ask",
            question,
            "--json",
            *(["--as", email] if email else []),
            *(["--channel"] if channel else []),
        ]
        code, out = self.run(*argv)
        assert code == 0, out
        return json.loads(out)

    def pages(self, question: str, email: str | None, *, channel: bool = False) -> set[str]:
        return {s["page_id"] for s in self.ask(question, email, channel=channel)["sources"]}

    def sync(self, *extra: str) -> str:
        code, out = self.run("sync", *extra)
        assert code == 0, out
        return out


@pytest.fixture(params=["datacenter", "cloud"])
def cli(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    hashing_embedder: None,
) -> Iterator[Cli]:
    flavor = request.param
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THREADWISE_LLM_BASE_URL", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    context = "/wiki" if flavor == "cloud" else "/confluence"
    with FakeConfluence(pages=wiki(), context_path=context, flavor=flavor) as fake:
        people = fake.people
        people.add_user("alice", "alice@example.com", groups=("hr", "eng"))
        people.add_user("bob", "bob@example.com", groups=("eng", "finance"))
        people.add_user("carol", "carol@example.com")
        people.add_user("dave", "dave@example.com", hides_email=True)  # Cloud hides it; DC shows it
        people.grants["FIN"] = SpaceGrant(groups=["finance"])
        monkeypatch.setenv("CONFLUENCE_URL", fake.url)
        if flavor == "cloud":
            monkeypatch.setenv("CONFLUENCE_CLOUD", "true")
            monkeypatch.setenv("CONFLUENCE_USERNAME", "alice@example.com")
            monkeypatch.setenv("CONFLUENCE_API_TOKEN", "api-token")
        else:
            monkeypatch.setenv("CONFLUENCE_PERSONAL_TOKEN", "pat-secret")
        monkeypatch.setenv("THREADWISE_PERMISSIONS", "per-user")
        c = Cli(tmp_path, capsys, fake)
        assert c.run("spaces", "add", "DOCS", "--everyone-may-view")[0] == 0
        assert c.run("spaces", "add", "FIN")[0] == 0
        yield c


def test_a_page_restricted_to_a_group(cli: Cli) -> None:
    cli.fake.restrict("113", groups=["hr"])
    cli.sync()
    alice = cli.ask(ON_CALL, "alice@example.com")  # in hr
    assert "113" in {s["page_id"] for s in alice["sources"]} and "15 minutes" in alice["answer"]
    assert alice["withheld"] is False
    bob = cli.ask(ON_CALL, "bob@example.com")  # not in hr
    assert "113" not in {s["page_id"] for s in bob["sources"]} and "15 minutes" not in bob["answer"]
    # in a channel nobody gets the restricted page; alice is told it was withheld, carol is not
    in_channel = cli.ask(ON_CALL, "alice@example.com", channel=True)
    assert (
        "113" not in {s["page_id"] for s in in_channel["sources"]}
        and "15 minutes" not in in_channel["answer"]
    )
    assert in_channel["withheld"] is True
    assert cli.ask(ON_CALL, "carol@example.com", channel=True)["withheld"] is False  # reads no more
    # the trace of the channel answer holds nothing of the page either
    code, trace = cli.run("trace", str(in_channel["turn_id"]), "--json")
    assert code == 0 and "113:" not in trace and "15 minutes" not in trace
    # open pages of the declared space still answer in the channel
    assert "111" in cli.pages("When do we meet every Monday?", "bob@example.com", channel=True)


def test_a_restriction_on_an_ancestor_and_a_user_in_two_groups(cli: Cli) -> None:
    cli.fake.restrict("112", groups=["eng"])  # Policies, above On-call
    cli.fake.restrict("113", groups=["hr"])
    cli.sync()
    assert "113" in cli.pages(ON_CALL, "alice@example.com")  # hr and eng: passes both levels
    bob = cli.pages(ON_CALL, "bob@example.com")  # eng only: passes Policies, not On-call
    assert "113" not in bob
    assert "112" in cli.pages("Rules everyone follows", "bob@example.com")
    assert not {"112", "113"} & cli.pages(ON_CALL, "carol@example.com")  # neither


def test_a_space_some_users_may_not_view(cli: Cli) -> None:
    cli.sync()
    bob = cli.ask(BUDGET, "bob@example.com")  # finance may view FIN
    assert "900" in {s["page_id"] for s in bob["sources"]} and "42000" in bob["answer"]
    alice = cli.ask(BUDGET, "alice@example.com")
    assert "900" not in {s["page_id"] for s in alice["sources"]} and "42000" not in alice["answer"]
    # FIN is not declared "everyone may view": not even bob gets it in a channel, and he is told so
    channel = cli.ask(BUDGET, "bob@example.com", channel=True)
    assert "900" not in {s["page_id"] for s in channel["sources"]} and channel["withheld"] is True
    # an unknown person (no --as) reads only what anonymous users may: FIN is not among it
    assert "900" not in cli.pages(BUDGET, None)


def test_restrictions_changed_without_a_new_version_apply_after_the_permission_sync(cli: Cli) -> None:
    cli.sync()
    assert "113" in cli.pages(ON_CALL, "bob@example.com")
    cli.fake.restrict("113", groups=["hr"])  # no new version
    cli.sync()  # the page sync does not see it ...
    assert "113" in cli.pages(ON_CALL, "bob@example.com")
    fetched = len(cli.fake.served_pages())
    out = cli.sync("--permissions")  # ... the permission sync does, and fetches no page
    assert "DOCS: permissions of 6 pages checked, 1 changed" in out and "nothing embedded" in out
    assert len(cli.fake.served_pages()) == fetched
    assert "113" not in cli.pages(ON_CALL, "bob@example.com")
    assert "113" in cli.pages(ON_CALL, "alice@example.com")
    cli.fake.restrict("113")  # lifted
    assert "1 changed" in cli.sync("--permissions")
    assert "113" in cli.pages(ON_CALL, "bob@example.com")


def test_an_unmapped_user_reads_like_an_unknown_person(cli: Cli) -> None:
    cli.fake.restrict("113", users=["dave"])
    cli.sync()
    dave = cli.pages(ON_CALL, "dave@example.com")
    if cli.fake.flavor == "cloud":  # Cloud hides dave's e-mail: he cannot be mapped, and status says so
        assert "113" not in dave
        code, out = cli.run("sync", "--permissions")
        assert "1 Confluence users cannot be mapped (no e-mail shown): Dave" in out
        code, doctor = cli.run("doctor")
        assert "1 Confluence user cannot be mapped" in doctor
    else:
        assert "113" in dave
    assert "113" not in cli.pages(ON_CALL, "nobody@elsewhere.example")  # no Confluence account at all


def test_unreadable_restrictions_hide_the_page_from_everyone(cli: Cli) -> None:
    cli.fake.faults.restriction_statuses["112"] = 403
    cli.sync()
    for email in ("alice@example.com", "bob@example.com"):
        assert not {"112", "113"} & cli.pages(ON_CALL, email)
    assert "111" in cli.pages("When do we meet every Monday?", "bob@example.com")
    out = cli.sync("--permissions")
    assert "unreadable, treated as restricted: page Policies" in out


def test_unreadable_space_permissions_hide_the_space(cli: Cli) -> None:
    cli.fake.people.statuses["space:FIN"] = 403
    cli.sync()
    assert "900" not in cli.pages(BUDGET, "bob@example.com")
    assert "unreadable, treated as restricted: space FIN" in cli.sync("--permissions")


def test_may_read_and_the_declaration_as_listed(cli: Cli) -> None:
    from threadwise.permissions import Asker
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    cli.fake.restrict("113", groups=["hr"])
    cli.sync()
    code, listed = cli.run("spaces", "list")
    assert code == 0 and "DOCS\tDOCS\tDOCS\teveryone may view" in listed and "FIN\tFIN\tFIN\n" in listed
    assert "everyone with access to the bot may view it" in cli.run("status")[1]
    permissions = Threadwise(settings=load_settings(data_dir=cli.data_dir)).permissions
    alice, bob = Asker("alice@example.com", private=True), Asker("bob@example.com", private=True)
    assert permissions.may_read(alice, ["111", "113"]) and not permissions.may_read(bob, ["111", "113"])
    assert permissions.may_read(bob, ["900"]) and not permissions.may_read(alice, ["900"])
    assert not permissions.may_read(Asker("alice@example.com", private=False), ["113"])  # a channel
    assert permissions.may_read(None, ["111"]) and not permissions.may_read(None, ["no-such-page"])
    # withdrawing the declaration closes the channel to DOCS too
    assert cli.run("spaces", "add", "DOCS", "--no-everyone-may-view")[0] == 0
    assert not permissions.may_read(Asker("alice@example.com", private=False), ["111"])


def test_a_folder_of_pages_answers_without_confluence_permissions(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    hashing_embedder: None,
) -> None:
    """`ask`/`chat` on the sample wiki or `--docs DIR` (nothing synced): the pages have no Confluence readers,
    so per-user filters nothing there (whoever can read the folder reads them), instead of hiding everything."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THREADWISE_LLM_BASE_URL", "CONFLUENCE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("THREADWISE_PERMISSIONS", "per-user")
    code = main(["--data-dir", str(tmp_path), "ask", "Who is on call for a severity 1 incident?", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["sources"]


def test_a_space_granted_to_a_single_user(cli: Cli) -> None:
    """FIN granted to carol by name (Data Center: a `userKey` subject; Cloud: a user principal) besides the
    finance group."""
    cli.fake.people.grants["FIN"] = SpaceGrant(users=["carol"], groups=["finance"])
    cli.sync()
    assert "900" in cli.pages(BUDGET, "carol@example.com")  # by name
    assert "900" in cli.pages(BUDGET, "bob@example.com")  # by group
    assert "900" not in cli.pages(BUDGET, "alice@example.com")


def test_a_space_anonymous_users_may_view(cli: Cli) -> None:
    """Whatever anonymous users may view, everyone may: a person without a Confluence account and alice (in
    no group FIN names) read FIN in a DM; a channel still does not, as FIN is not declared."""
    cli.fake.people.grants["FIN"] = SpaceGrant(groups=["finance"], anonymous=True)
    cli.sync()
    assert "900" in cli.pages(BUDGET, "nobody@elsewhere.example")
    assert "900" in cli.pages(BUDGET, "alice@example.com")
    assert "900" not in cli.pages(BUDGET, "bob@example.com", channel=True)
