"""Per-channel modes (auto answers, private first, experts) and escalations: kept in the database across
restarts and replicas, purged with the conversations, and set by admins through `/threadwise` in the real
Bolt app against the fake Slack."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.fake_slack import FakeSlack
from tests.support.slack_driver import WORKSPACE_ADMIN, command
from tests.support.slack_world import ADMIN, Running, World, running_bot
from threadwise.db.base import make_engine, make_sessions
from threadwise.db.channel_modes import ChannelModes, Expert
from threadwise.db.retention import forget_user, purge_older_than
from threadwise.db.schema import upgrade
from threadwise.slack.admins import mentions_in


def modes_at(url: str) -> ChannelModes:
    engine = make_engine(url)
    upgrade(engine)
    return ChannelModes(sessions=make_sessions(engine))


def test_modes_default_off_and_survive_a_restart_on_either_database(database_url: str) -> None:
    modes = modes_at(database_url)
    assert modes.get("C1").is_default and modes.all() == []
    modes.set_auto("C1", True, platform="slack", by="UADMIN")
    modes.set_private("C2", True, platform="teams", by="aad-1")
    experts = [Expert("user", "U7", "ana"), Expert("group", "S1", "help-desk"), Expert("user", "U7", "ana")]
    modes.set_experts("C1", experts, platform="slack", by="UADMIN")

    again = modes_at(database_url)  # another process (a restart, a replica) reads the same
    c1 = again.get("C1")
    assert c1.auto and not c1.private
    assert c1.experts == (Expert("user", "U7", "ana"), Expert("group", "S1", "help-desk"))  # once each
    assert again.get("C2").private and not again.get("C2").auto
    assert [m.channel for m in again.all(platform="slack")] == ["C1"]
    again.set_auto("C1", False, platform="slack", by="UADMIN")
    again.set_experts("C1", [], platform="slack", by="UADMIN")
    assert again.get("C1").is_default and [m.channel for m in again.all()] == ["C2"]


def test_escalations_open_once_per_thread_resolve_once_and_are_counted(tmp_path: Path) -> None:
    modes = modes_at(f"sqlite:///{tmp_path / 'db.sqlite'}")
    first = modes.escalate(
        platform="slack", channel="C1", thread="1.1", turn_id=3, asker="U1", question="q?", opened_by="U1"
    )
    modes.note_message(first, "1.5")
    assert modes.open_escalation(channel="C1", thread="1.1") == modes.get_escalation(first)
    assert modes.by_message("C1", "1.5") == modes.get_escalation(first)
    assert modes.open_escalation(channel="C1", thread="other") is None
    modes.escalate(
        platform="teams", channel="19:x", thread="", turn_id=None, asker="a", question="", opened_by="a"
    )
    assert modes.resolve(first, by="U7") is True
    assert modes.resolve(first, by="U8") is False  # a second ✅ changes nothing
    assert modes.open_escalation(channel="C1", thread="1.1") is None
    counts = modes.counts()
    assert (counts.opened, counts.resolved) == (2, 1)


def test_escalations_go_with_retention_and_forget_user(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    upgrade(engine)
    sessions = make_sessions(engine)
    modes = ChannelModes(sessions=sessions)
    for asker in ("U1", "U2"):
        modes.escalate(
            platform="slack",
            channel="C1",
            thread=asker,
            turn_id=None,
            asker=asker,
            question="q",
            opened_by=asker,
        )
    removed = forget_user(sessions, "U1")
    assert removed.escalations == 1 and "1 escalations" in str(removed)
    assert modes.counts().opened == 1
    assert purge_older_than(sessions, 90).escalations == 0  # recent: kept
    later = datetime.now(UTC) + timedelta(days=91)
    assert purge_older_than(sessions, 90, now=later).escalations == 1
    assert modes.counts().opened == 0


def test_slack_mentions_in_an_escaped_slash_command() -> None:
    """With `should_escape: true` Slack sends `/threadwise experts @ana @help-desk` as below."""
    text = "experts <@U07ANA|ana> <!subteam^S0HELP|@help-desk> and <@W0123>"
    assert mentions_in(text) == [
        Expert("user", "U07ANA", "ana"),
        Expert("group", "S0HELP", "help-desk"),
        Expert("user", "W0123", ""),
    ]
    assert mentions_in("experts @ana") == []  # a name typed as text is nobody


@pytest.fixture
def run(world: World) -> Iterator[Running]:
    users = {"U1": {}, WORKSPACE_ADMIN: {"is_admin": True}, ADMIN: {}}
    with FakeSlack(users=users) as slack, running_bot(world, slack) as running:
        yield running


def test_admins_set_a_channels_modes_with_the_slash_command_and_everyone_sees_them(
    run: Running, world: World
) -> None:
    assert "I answer when mentioned" in command(run, "auto")  # everyone may look
    assert "only Threadwise admins" in command(run, "auto on", user="U1")
    assert not world.admin.channels.get("C1").auto

    assert "without a mention" in command(run, "auto on", user=ADMIN)
    assert "to the asker alone first" in command(run, "private on", channel="C2", user=WORKSPACE_ADMIN)
    said = command(run, "experts <@U07ANA|ana> <!subteam^S0HELP|@help-desk>", user=ADMIN)
    assert "<@U07ANA>" in said and "<!subteam^S0HELP>" in said
    assert "did not find a mention" in command(run, "experts ana", user=ADMIN)
    assert "For example `/threadwise auto on`" in command(run, "auto maybe", user=ADMIN)

    c1, c2 = world.admin.channels.get("C1"), world.admin.channels.get("C2")
    assert c1.auto and not c1.private and [e.id for e in c1.experts] == ["U07ANA", "S0HELP"]
    assert c2.private and not c2.auto and c2.experts == ()
    status = command(run, "status")
    assert "I answer questions without a mention" in status and "calls <@U07ANA>, <!subteam^S0HELP>" in status
    assert "nobody is called in" in command(run, "experts none", user=ADMIN)
    assert world.admin.channels.get("C1").experts == ()
    assert "`/threadwise auto [on|off]`" in command(run, "help")

    world.admin.channels.escalate(
        platform="slack", channel="C1", thread="1.1", turn_id=None, asker="U1", question="q", opened_by="U1"
    )
    for user in ("U1", ADMIN):
        run.send.event({"type": "app_home_opened", "user": user, "channel": "D9", "tab": "home"})
    run.bot.wait_idle()
    views = {c.params["user_id"]: str(c.params["view"]) for c in run.slack.calls_to("views.publish")}
    assert "<#C2>" in views[ADMIN] and "answers go to the asker first" in views[ADMIN]
    assert "1 asked, 0 marked resolved" in views[ADMIN]
    assert "<#C2>" not in views["U1"]  # admins only
