"""What the bot knows and how it went, as lines of text in a front end's markup: a space's line, a folder's,
the feedback summary. `/threadwise status`, `admin status`, the App Home and `admin feedback` all show these.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from threadwise.chat.markup import Markup, escape, truncate
from threadwise.sync.admin import FolderStatus, SpaceStatus


def when(value: datetime | None, markup: Markup) -> str:
    return markup.date(value.isoformat()) if value else "never"


def space_line(space: SpaceStatus, markup: Markup) -> str:
    """ "*ENG* Engineering — 120 pages, 1 834 evidences · last sync ok 3 May (0 failed)"."""
    name = f" {escape(space.name)}" if space.name and space.name != space.key else ""
    line = f"{markup.bold(escape(space.key))}{name} — {space.pages} pages, {space.evidences} evidences"
    run = space.last_run
    if run is None:
        line += " · not synced yet" if space.configured else " · indexed from files"
    else:
        line += f" · last sync {markup.bold(run.status)} {when(run.finished_at or run.started_at, markup)}"
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
        line += f" · {markup.italic('disabled')}"
    return line


def folder_name(folder: FolderStatus) -> str:
    """The folder's name only (the path is the server's business)."""
    return folder.folder.rstrip("/").rpartition("/")[2] or folder.folder


def folder_line(folder: FolderStatus, markup: Markup) -> str:
    """ "Folder *docs* — last index --docs *partial* 3 May: 12 files, 2 skipped"."""
    run = folder.last_run
    started = when(run.finished_at or run.started_at, markup)
    line = f"Folder {markup.bold(escape(folder_name(folder)))} — last `index --docs` {markup.bold(run.status)} {started}"
    return line + f": {run.pages} files, {run.failed} skipped"


def feedback_lines(summary: dict[str, Any], markup: Markup) -> list[str]:
    """👍/👎 counts, then each of the latest 👎 with its question and comment, then how many are hidden."""
    lines = [
        f"{markup.bold('Feedback')} (admins only): 👍 {summary.get('up', 0)} · 👎 {summary.get('down', 0)}"
    ]
    for down in summary.get("latest_down", [])[:10]:
        question = markup.italic(escape(truncate(down.get("question", ""), 300)))
        text = f"👎 {markup.user(down.get('user', ''))} on {question}"
        if down.get("comment"):
            text += f"\n> {escape(truncate(down['comment'], 500))}"
        lines.append(text + f"\nanswer {down.get('turn_id')} · {markup.date(down.get('when', ''))}")
    if summary.get("hidden_down"):
        lines.append(f"…and {summary['hidden_down']} 👎 on answers from pages you cannot read")
    return lines
