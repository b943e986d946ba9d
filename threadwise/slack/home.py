"""The App Home tab: what the bot knows, how to use it, and for admins the feedback people gave."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from threadwise.slack.blocks import Block, context, section
from threadwise.slack.mrkdwn import escape, slack_date, truncate
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


def _when(value: datetime | None) -> str:
    return slack_date(value.isoformat()) if value else "never"


def space_line(space: SpaceStatus) -> str:
    """ "*ENG* Engineering — 120 pages, 1 834 evidences · last sync ok 3 May (0 failed)"."""
    name = f" {escape(space.name)}" if space.name and space.name != space.key else ""
    line = f"*{escape(space.key)}*{name} — {space.pages} pages, {space.evidences} evidences"
    run = space.last_run
    if run is None:
        line += " · not synced yet" if space.configured else " · indexed from files"
    else:
        line += f" · last sync *{run.status}* {_when(run.finished_at or run.started_at)}"
        if run.failed:
            line += f" ({run.failed} pages failed)"
        if run.error:
            line += f": {escape(truncate(run.error, 200))}"
    if space.restricted_pages:
        n = space.restricted_pages
        line += f" · {n} restricted {'page' if n == 1 else 'pages'} left out"
    if space.permission_error:  # per-user: who may view it could not be read, so nobody reads it here
        line += " · its permissions could not be read: nobody reads it through me"
    if space.configured and not space.enabled:
        line += " · _disabled_"
    return line


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
    lines = [space_line(s) for s in spaces[:MAX_SPACES]]
    if len(spaces) > MAX_SPACES:
        lines.append(f"… and {len(spaces) - MAX_SPACES} more spaces (`/threadwise spaces`)")
    lines += [folder_line(f) for f in folders[:5]]
    return [section(head), *[section(truncate(line, 2900)) for line in lines]]


def folder_line(folder: FolderStatus) -> str:
    """ "Folder *docs* — last index --docs *partial* 3 May: 12 files, 2 skipped"; the folder's name only (the
    path is the server's business)."""
    run = folder.last_run
    line = f"Folder *{escape(_folder_name(folder))}* — last `index --docs` *{run.status}* {_when(run.finished_at or run.started_at)}"
    return line + f": {run.pages} files, {run.failed} skipped"


def _folder_name(folder: FolderStatus) -> str:
    return folder.folder.rstrip("/").rpartition("/")[2] or folder.folder


def _run_problems(title: str, run: RunSummary | None) -> str | None:
    """A run's result when it did not end well, with each failed page or skipped file and its reason."""
    if run is None or run.status in ("ok", "running"):
        return None
    lines = [f"*{escape(title)}*: *{run.status}* {_when(run.finished_at or run.started_at)}"]
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
    texts += [_run_problems(f"index --docs of {_folder_name(f)}", f.last_run) for f in folders]
    found = [t for t in texts if t]
    if not found:
        return [section("*Last runs*: no failed pages, skipped files or interrupted runs.")]
    return [section("*Last runs with problems*"), *[section(truncate(t, 2900)) for t in found[:20]]]


def feedback_blocks(summary: dict[str, Any]) -> list[Block]:
    """👍/👎 counts and the latest 👎 with the question and the comment."""
    blocks: list[Block] = [
        section(f"*Feedback* (admins only): 👍 {summary.get('up', 0)} · 👎 {summary.get('down', 0)}")
    ]
    for down in summary.get("latest_down", [])[:10]:
        text = f"👎 <@{down.get('user', '')}> on _{escape(truncate(down.get('question', ''), 300))}_"
        if down.get("comment"):
            text += f"\n> {escape(truncate(down['comment'], 500))}"
        blocks.append(context(text + f"\nanswer {down.get('turn_id')} · {slack_date(down.get('when', ''))}"))
    if summary.get("hidden_down"):
        blocks.append(context(f"…and {summary['hidden_down']} 👎 on answers from pages you cannot read"))
    return blocks


def home_view(
    *,
    spaces: Sequence[SpaceStatus],
    is_admin: bool,
    feedback: dict[str, Any] | None,
    folders: Sequence[FolderStatus] = (),
    gaps: Sequence[Block] = (),
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
            *([{"type": "divider"}, *gaps] if gaps else []),
            {"type": "divider"},
            section(ADMIN_HELP),
        ]
    return {"type": "home", "blocks": blocks[:100]}
