"""The App Home tab: what the bot knows, how to use it, and for admins the feedback people gave."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadwise.chat.channel_commands import mode_line
from threadwise.chat.markup import escape, truncate
from threadwise.chat.status_text import feedback_lines, folder_line, folder_name, space_line, when
from threadwise.db.channel_modes import ChannelMode, EscalationCounts
from threadwise.slack.blocks import Block, context, section
from threadwise.slack.mrkdwn import SLACK
from threadwise.sync.admin import FolderStatus, RunSummary, SpaceStatus

MAX_SPACES = 30
MAX_PROBLEMS = 10  # failed pages or skipped files listed per run on the Home tab
HOW_TO = (
    "*How to ask*\n"
    "• Mention me in a channel: `@Threadwise how do I request a new laptop?` I answer in the thread.\n"
    "• In a thread I answered, just keep asking: follow-ups need no new mention.\n"
    "• Or write to me here, in *Messages*.\n"
    "Each answer links its sources. *Explain* shows which sources caused it; 👍 / 👎 tell the admins how it went."
)
ADMIN_HELP = (
    "*Admin commands* (`/threadwise help` lists them all)\n"
    "`/threadwise status` · `/threadwise spaces` · `/threadwise add KEY` · `/threadwise remove KEY` · "
    "`/threadwise sync [KEY]` · `/threadwise channel [KEY …|all]` · `/threadwise gaps` · "
    "`/threadwise digest #channel|off`"
)


def knowledge_blocks(spaces: Sequence[SpaceStatus], folders: Sequence[FolderStatus] = ()) -> list[Block]:
    if not spaces and not folders:
        return [
            section(
                "*What I know*\nNothing yet: no Confluence space is synced. An admin can add one with `/threadwise add KEY`."
            )
        ]
    pages = sum(s.pages for s in spaces)
    evidences = sum(s.evidences for s in spaces)
    head = f"*What I know*: {pages} pages, {evidences} evidences in {len(spaces)} spaces"
    lines = [space_line(s, SLACK) for s in spaces[:MAX_SPACES]]
    if len(spaces) > MAX_SPACES:
        lines.append(f"… and {len(spaces) - MAX_SPACES} more spaces (`/threadwise spaces`)")
    lines += [folder_line(f, SLACK) for f in folders[:5]]
    return [section(head), *[section(truncate(line, 2900)) for line in lines]]


def _run_problems(title: str, run: RunSummary | None) -> str | None:
    """A run's result when it did not end well, with each failed page or skipped file and its reason."""
    if run is None or run.status in ("ok", "running"):
        return None
    lines = [f"*{escape(title)}*: *{run.status}* {when(run.finished_at or run.started_at, SLACK)}"]
    if run.error:
        lines.append(escape(truncate(run.error, 300)))
    for f in run.failures[:MAX_PROBLEMS]:
        lines.append(
            f"• {escape(truncate(str(f.get('title') or f.get('page_id')), 150))}: "
            f"{escape(truncate(str(f.get('reason', '')), 300))}"
        )
    if len(run.failures) > MAX_PROBLEMS:
        lines.append(f"… and {len(run.failures) - MAX_PROBLEMS} more (`threadwise status --json`)")
    return "\n".join(lines)


def problem_blocks(spaces: Sequence[SpaceStatus], folders: Sequence[FolderStatus]) -> list[Block]:
    """For admins: the last runs that did not end well (failed, partial, interrupted) and why."""
    texts = [_run_problems(f"Sync of {s.key}", s.last_run) for s in spaces]
    texts += [_run_problems(f"index --docs of {folder_name(f)}", f.last_run) for f in folders]
    found = [t for t in texts if t]
    if not found:
        return [section("*Last runs*: no failed pages, skipped files or interrupted runs.")]
    return [section("*Last runs with problems*"), *[section(truncate(t, 2900)) for t in found[:20]]]


def feedback_blocks(summary: dict[str, Any]) -> list[Block]:
    """👍/👎 counts and the latest 👎 with the question and the comment."""
    head, *rest = feedback_lines(summary, SLACK)
    return [section(head), *[context(line) for line in rest]]


def channel_blocks(channels: Sequence[ChannelMode], escalations: EscalationCounts | None) -> list[Block]:
    """For admins: the channels set to other than the defaults, and how the calls for help went."""
    blocks = [section(f"<#{m.channel}> — {mode_line(m, SLACK)}") for m in channels[:MAX_SPACES]]
    if escalations is not None and escalations.opened:
        blocks.append(
            context(f"“Still need help?”: {escalations.opened} asked, {escalations.resolved} marked resolved")
        )
    return ([section("*Channels with their own modes*")] if channels else []) + blocks


def home_view(
    *,
    spaces: Sequence[SpaceStatus],
    is_admin: bool,
    feedback: dict[str, Any] | None,
    folders: Sequence[FolderStatus] = (),
    gaps: Sequence[Block] = (),
    channels: Sequence[ChannelMode] = (),
    escalations: EscalationCounts | None = None,
) -> dict[str, Any]:
    """The Home tab for one user; admins also see the last runs' problems, the feedback summary, the
    knowledge gaps (`gaps`: their blocks, built by slack_gaps.py) and the commands."""
    blocks: list[Block] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Threadwise", "emoji": True}},
        section("I answer questions from your team's Confluence pages, with links to the pages I used."),
        {"type": "divider"},
        section(HOW_TO),
        {"type": "divider"},
        *knowledge_blocks(spaces, folders),
    ]
    if is_admin:
        blocks += [
            {"type": "divider"},
            *problem_blocks(spaces, folders),
            {"type": "divider"},
            *feedback_blocks(feedback or {}),
            *channel_blocks(channels, escalations),
            *([{"type": "divider"}, *gaps] if gaps else []),
            {"type": "divider"},
            section(ADMIN_HELP),
        ]
    return {"type": "home", "blocks": blocks[:100]}
