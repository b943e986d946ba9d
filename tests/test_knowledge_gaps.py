"""Where admins look at the knowledge gaps (issue 31, part 3): the Slack Home tab's section and its "Full
report" button, `/threadwise gaps`, `/threadwise digest` and the weekly digest, all over real HTTP against the
independent fake Slack (../shared/fakes), and the one summary text both platforms render.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from slack_sdk import WebClient

from tests.support.fake_bot_connector import FakeBotConnector
from tests.support.fake_slack import FakeSlack
from tests.support.slack_world import SIGNING_SECRET, World
from tests.support.teams_activities import ADMIN, ALICE, PERSONAL
from tests.support.teams_world import running_teams
from tests.test_slack_shared_fake import Live, live_bot
from threadwise.db.conversations import ThreadKey
from threadwise.reports.service import GapReports
from threadwise.reports.summary import MARKDOWN, gaps_summary
from threadwise.slack.gaps import FULL_REPORT, SLACK, channel_of, send_report
from threadwise.sync.scheduler import SyncScheduler

BOSS = "U0BOSS"  # the one Threadwise admin
PARENTAL = "What is the parental leave policy?"
PARENTAL_WEEKS = "How many weeks of parental leave do I get?"
COMMAND_REPLIES = "response_url"


def seed(world: World) -> GapReports:
    """Two questions the pages cannot answer and one voted down, asked through the conversation service."""
    for n, question in enumerate((PARENTAL, PARENTAL_WEEKS, "how do I request a new laptop?")):
        key = ThreadKey("slack", "T0FAKE", "C0GENERAL", f"1700000{n}.000100")
        turn = world.conversations.ask(key, question, user="U0ALICE")
        if n == 2:
            world.conversations.vote(turn.turn_id, "U0ALICE", "down")
    return GapReports(sessions=world.admin.sessions, embedder=world.index.embedder)


def command(live: Live, text: str, user: str) -> str:
    """`/threadwise TEXT` as `user`: what the bot said (every post to the command's response_url)."""
    before = len(live.slack.calls(COMMAND_REPLIES))
    form = live.fake.slash_command_form(text=text, user=user, fake_slack_url=live.api_url)
    reply = live.fake.post_slash_command(live.url, form, SIGNING_SECRET)
    assert reply.status == 200, reply
    live.bot.wait_idle()
    return "\n".join(c["params"].get("text", "") for c in live.slack.calls(COMMAND_REPLIES)[before:])


def open_home(live: Live, user: str) -> dict[str, Any]:
    """The Home tab `user` sees once they open it (app_home_opened over HTTP, then views.publish)."""
    event = {"type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": "home"}
    reply = live.fake.post_event(live.url, live.fake.event_envelope(event), SIGNING_SECRET)
    assert reply.status == 200, reply
    live.bot.wait_idle()
    return next(v["view"] for v in reversed(live.slack.views()) if v["user_id"] == user)


@pytest.fixture
def live(shared_fakes: Callable[[str], ModuleType], world: World) -> Iterator[Live]:
    fake = shared_fakes("fake_slack")
    with live_bot(fake, world, seed(world), admin_user_ids=(BOSS,), workspace_admins=False) as running:
        yield running


def test_one_summary_written_as_slack_mrkdwn_and_as_markdown(world: World) -> None:
    groups = seed(world).top_groups(5)
    assert sum(g.count for g in groups) == 3
    slack, markdown = (gaps_summary(groups, days=30, markup=m) for m in (SLACK, MARKDOWN))
    assert slack.startswith("*Knowledge gaps* (last 30 days)")
    assert markdown.startswith("**Knowledge gaps** (last 30 days)")
    for text in (slack, markdown):
        assert "parental leave" in text and "not found" in text and "👎" in text
    laptops = "Requesting a new laptop"
    assert f"<https://wiki.example/display/IT/Laptops|{laptops}>" in slack
    assert f"[{laptops}](https://wiki.example/display/IT/Laptops)" in markdown
    assert gaps_summary([], days=7, markup=MARKDOWN).endswith(
        "every question found an answer nobody voted down."
    )


def test_the_home_tab_shows_admins_the_knowledge_gaps_and_others_not(live: Live) -> None:
    home = json.dumps(open_home(live, BOSS))
    assert "Knowledge gaps" in home and "parental leave" in home and FULL_REPORT in home
    other = json.dumps(open_home(live, "U0ALICE"))
    assert "Knowledge gaps" not in other and FULL_REPORT not in other and "parental leave" not in other


def test_full_report_reaches_the_admins_dm_as_markdown_where_slack_takes_no_file(live: Live) -> None:
    """The shared fake answers files.getUploadURLExternal without an upload URL: the report comes as a
    Markdown message instead."""
    view = open_home(live, BOSS)
    button = next(b for b in live.fake.find_buttons(view["blocks"]) if b["action_id"] == FULL_REPORT)
    for user in ("U0ALICE", BOSS):  # a non-admin's press is ignored
        payload = live.fake.block_actions_payload(FULL_REPORT, button.get("value"), user=user)
        for key in ("channel", "message"):
            del payload[key]
        payload.update(container={"type": "view", "view_id": view["id"]}, view=view)
        assert live.fake.post_block_actions(live.url, payload, SIGNING_SECRET).status == 200
        live.bot.wait_idle()
    assert live.slack.calls("files.getUploadURLExternal")
    assert not live.slack.messages("U0ALICE")
    (dm,) = live.slack.messages(BOSS)
    (block,) = dm["blocks"]
    assert block["type"] == "markdown" and block["text"].startswith("# What the wiki is missing")
    assert PARENTAL in block["text"]


def test_full_report_is_uploaded_as_an_html_file_where_slack_takes_files(world: World) -> None:
    """Against the project's own fake Slack, which takes uploads (files.getUploadURLExternal, the bytes,
    files.completeUploadExternal) as slack_sdk's files_upload_v2 makes them."""
    with FakeSlack() as slack:
        client = WebClient(token=slack.token, base_url=slack.api_url)
        assert send_report(client, seed(world), BOSS) == "file"
    (file,) = slack.files.values()
    assert (
        file["channel"] == "D0BOSS" and file["name"].endswith(".html") and file["title"] == "Knowledge gaps"
    )
    assert file["content"].startswith(b"<!DOCTYPE html>") and PARENTAL.encode() in file["content"]
    assert not slack.calls_to("chat.postMessage")


def test_slash_gaps_gives_admins_the_summary(live: Live) -> None:
    said = command(live, "gaps", BOSS)
    assert said.startswith("*Knowledge gaps* (last 30 days)") and "parental leave" in said
    refused = command(live, "gaps", "U0ALICE")
    assert "only Threadwise admins" in refused and "parental leave" not in refused


def test_the_digest_is_off_by_default_then_goes_weekly_to_the_chosen_channel(
    live: Live, world: World
) -> None:
    scheduler = SyncScheduler(admin=world.admin)
    assert live.bot.gaps is not None
    scheduler.digests.append(live.bot.gaps.post_digest)
    assert "is off" in command(live, "digest", BOSS)
    scheduler.run_digests()
    assert not live.slack.calls("chat.postMessage")

    assert "only Threadwise admins" in command(live, "digest <#C0ADMINS|admins>", "U0ALICE")
    assert world.admin.digests.get("slack") is None
    assert "Which channel?" in command(live, "digest #admins", BOSS)  # a name Slack did not escape
    assert world.admin.digests.get("slack") is None
    assert "<#C0GENERAL>" in command(live, "digest here", BOSS)  # the channel the command was run in
    said = command(live, "digest <#C0ADMINS|admins>", BOSS)
    assert "<#C0ADMINS>" in said
    assert world.admin.digests.get("slack") == {"channel": "C0ADMINS"}
    scheduler.run_digests()  # the weekly job, called at once
    (posted,) = live.slack.messages("C0ADMINS")
    assert posted["text"].startswith("*Knowledge gaps*") and "parental leave" in posted["text"]

    assert "no weekly" in command(live, "digest off", BOSS)
    scheduler.run_digests()
    assert len(live.slack.messages("C0ADMINS")) == 1
    scheduler.start(run_now=False)  # the job itself: Mondays at 09:00 UTC, whenever the process started
    try:
        when = scheduler.next_digest_at()
        assert when is not None and (when.weekday(), when.hour, when.minute) == (0, 9, 0)
    finally:
        scheduler.shutdown()


def test_a_channel_is_read_as_slack_writes_it() -> None:
    assert (
        channel_of("<#C0ADMINS|admins>") == channel_of("<#C0ADMINS>") == channel_of("C0ADMINS") == "C0ADMINS"
    )
    assert channel_of("#admins") is None


def test_teams_admin_gaps_and_the_digest_into_the_chosen_chat(world: World) -> None:
    with FakeBotConnector() as connector, running_teams(world, connector, gap_reports=seed(world)) as run:

        def said(text: str, n: int, user: dict[str, Any] | None = None) -> str:
            message = run.send.message(text, where="personal", mention=False, user=user or ALICE)
            run.send.post(message)
            sent = connector.wait_for(lambda: len(sends()) >= n and sends())
            return str(sent[n - 1].body["text"])

        def sends() -> list[Any]:
            return [c for c in connector.sent(PERSONAL) if c.method == "send"]

        refused = said("admin gaps", 1)
        assert "only Threadwise admins" in refused and "parental" not in refused
        summary = said("admin gaps", 2, ADMIN)
        assert summary.startswith("**Knowledge gaps** (last 30 days)") and PARENTAL in summary
        assert "[Requesting a new laptop](https://wiki.example/display/IT/Laptops)" in summary
        assert "is off" in said("admin digest", 3, ADMIN)
        assert run.bot.gaps is not None and not run.bot.gaps.post_digest()
        assert "comes here once a week" in said("admin digest here", 4, ADMIN)
        assert world.admin.digests.get("teams") is not None
        assert run.bot.gaps.post_digest()  # the weekly job's part, called at once
        assert sends()[-1].body["text"] == summary
        assert "no weekly" in said("admin digest off", 6, ADMIN)
