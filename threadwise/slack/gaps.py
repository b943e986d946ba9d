"""Knowledge gaps in Slack, for admins: the App Home section, its "Full report" button, `/threadwise gaps`,
`/threadwise digest #channel|here|off` and the weekly digest. The words come from reports/summary.py; this
module only writes them as mrkdwn and talks to Slack.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from threadwise.chat.markup import truncate
from threadwise.reports.service import DEFAULT_DAYS, GapReports
from threadwise.reports.summary import TOP, Markup, gaps_summary
from threadwise.slack.blocks import Block, section
from threadwise.slack.mrkdwn import escape, link
from threadwise.slack.question import PLATFORM
from threadwise.sync.digest import DigestTargets

log = logging.getLogger(__name__)

FULL_REPORT = "gap_report"  # the Home tab's button's action id
SLACK = Markup(bold=lambda t: f"*{t}*", link=link, escape=escape)
MARKDOWN_LIMIT = 12000  # a markdown block's text
_CHANNEL = re.compile(r"^<#([A-Z0-9]+)(?:\|[^>]*)?>$|^([CGD][A-Z0-9]{6,})$")


def summary_text(reports: GapReports, *, days: int = DEFAULT_DAYS) -> str:
    return gaps_summary(reports.top_groups(TOP, days=days), days=days, markup=SLACK)


def home_blocks(reports: GapReports) -> list[Block]:
    """The Home tab's "Knowledge gaps" section for admins: the top groups and the "Full report" button (a
    report that fails says so there; the rest of the tab is still shown)."""
    try:
        text = summary_text(reports)
    except Exception as err:
        log.exception("the knowledge-gap summary failed")
        return [
            section(
                f"*Knowledge gaps*: the report failed ({escape(type(err).__name__)}); the error is logged."
            )
        ]
    button = {
        "type": "button",
        "action_id": FULL_REPORT,
        "text": {"type": "plain_text", "text": "Full report"},
        "value": str(DEFAULT_DAYS),
    }
    return [
        section(truncate(text, 2900)),
        {"type": "actions", "elements": [button]},
    ]


def _dm(client: WebClient, user: str) -> str:
    """The admin's direct messages with the bot; the user id itself (chat.postMessage takes it) where Slack
    will not say (conversations.open needs the im:write scope, which the manifest does not ask for)."""
    try:
        opened: Any = client.conversations_open(users=user).get("channel") or {}
    except SlackApiError as err:
        log.info("conversations.open refused (%s); writing to the user id", err.response.get("error"))
        return user
    return str(opened.get("id") or user)


def send_report(client: WebClient, reports: GapReports, user: str) -> str:
    """The full report to the admin's DM: the HTML file (files_upload_v2); where Slack takes no file, the
    Markdown report as a message. Says which ("file" or "message")."""
    channel = _dm(client, user)
    file = reports.report_file("html")
    try:
        client.files_upload_v2(
            channel=channel,
            filename=file.name,
            content=file.content,
            title="Knowledge gaps",
            initial_comment="The knowledge-gap report: open it in a browser.",
        )
        return "file"
    except Exception as err:  # no upload URL, a refusal: the report still arrives, as Markdown
        log.warning("uploading the report failed (%s); sending it as a message", type(err).__name__)
    markdown = reports.report_file("md").content.decode("utf-8")
    if len(markdown) > MARKDOWN_LIMIT:
        markdown = (
            markdown[: MARKDOWN_LIMIT - 60].rsplit("\n", 1)[0] + "\n\n… (`threadwise report` has it all)"
        )
    client.chat_postMessage(
        channel=channel,
        text="The knowledge-gap report (Slack would not take it as a file)",
        blocks=[{"type": "markdown", "text": markdown}],
    )
    return "message"


def channel_of(word: str) -> str | None:
    """A channel as Slack writes it in a command (`<#C123|name>`) or its id; None for a bare name."""
    m = _CHANNEL.match(word.strip())
    return (m.group(1) or m.group(2)) if m else None


class SlackGaps:
    """`/threadwise gaps` and `digest` (admin-only commands of AdminCommands), and the weekly digest."""

    def __init__(self, *, client: WebClient, reports: GapReports, targets: DigestTargets) -> None:
        self.client = client
        self.reports = reports
        self.targets = targets

    def commands(self) -> dict[str, Any]:
        return {"gaps": self.gaps, "digest": self.digest}

    def gaps(self, args: list[str], *, user: str, channel: str) -> str:
        return summary_text(self.reports)

    def digest(self, args: list[str], *, user: str, channel: str) -> str:
        if not args:
            target = self.targets.get(PLATFORM)
            if target is None:
                return (
                    "The weekly knowledge-gap digest is off. Turn it on with `/threadwise digest #channel`."
                )
            return f"The weekly knowledge-gap digest goes to <#{target['channel']}>."
        word = args[0]
        if word.lower() == "off":
            self.targets.clear(PLATFORM)
            return "Done: no weekly knowledge-gap digest any more."
        chosen = channel if word.lower() == "here" else channel_of(word)
        if not chosen:
            return (
                "Which channel? Pick it from Slack's list (`/threadwise digest #channel`), or run "
                "`/threadwise digest here` in it; `/threadwise digest off` stops the digest."
            )
        self.targets.set(PLATFORM, {"channel": chosen}, by=user)
        return f"Done: the knowledge-gap summary goes to <#{chosen}> once a week (invite me there if I am not in it)."

    def post_digest(self) -> bool:
        """Post the summary where the admins chose; whether it went out (off: nothing to do)."""
        target = self.targets.get(PLATFORM)
        if target is None:
            return False
        text = summary_text(self.reports)
        self.client.chat_postMessage(
            channel=target["channel"], text=text, blocks=[section(truncate(text, 2900))]
        )
        return True


def slack_gaps(client: WebClient, reports: GapReports | None, targets: DigestTargets) -> SlackGaps | None:
    return SlackGaps(client=client, reports=reports, targets=targets) if reports is not None else None


def register(app: Any, gaps: SlackGaps, *, is_admin: Any, submit: Any) -> None:
    """The "Full report" button: for admins, the report goes to their DM (a press by anyone else is ignored)."""

    def pressed(ack: Any, body: dict[str, Any]) -> None:
        ack()
        user = str((body.get("user") or {}).get("id", ""))
        if not user or not is_admin(user):
            log.info("ignored a Full report press by a non-admin")
            return
        submit(lambda: send_report(gaps.client, gaps.reports, user), "sending the knowledge-gap report")

    app.action(FULL_REPORT)(pressed)
