"""Slack's mrkdwn: escaping, links, Markdown from the model turned into mrkdwn, and cutting to Block Kit sizes.

Slack wants `&`, `<` and `>` escaped in text, links written `<url|label>`, bold as `*x*`; models write
Markdown. And a section may hold at most 3000 characters, so long text is cut at line ends, never inside a
link or a code fence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from threadwise.chat.markup import escape

SECTION_LIMIT = 3000
_ICONS = {"ok": ":white_check_mark:", "warning": ":warning:", "failed": ":x:"}


@dataclass(frozen=True)
class SlackMarkup:
    """mrkdwn, for the chat layer's texts (`threadwise.chat.markup.Markup`)."""

    command: str = "/threadwise"

    def bold(self, text: str) -> str:
        return f"*{text}*"

    def italic(self, text: str) -> str:
        return f"_{text}_"

    def date(self, iso: str) -> str:
        return slack_date(iso)

    def user(self, user_id: str, name: str = "") -> str:
        return f"<@{user_id}>"

    def group(self, group_id: str, name: str) -> str:
        return f"<!subteam^{group_id}>"

    def icon(self, name: str) -> str:
        return _ICONS[name]

    def link(self, url: str, label: str) -> str:
        return link(url, label)

    def code(self, text: str) -> str:
        return f"`{text}`"


SLACK = SlackMarkup()


def link(url: str, label: str) -> str:
    """A mrkdwn link; just the escaped label when there is no usable URL."""
    label = escape(" ".join(label.split())).replace("|", "¦") or url
    if not url.startswith(("http://", "https://")):
        return label
    safe_url = url.replace(" ", "%20").replace("|", "%7C").replace("<", "%3C").replace(">", "%3E")
    return f"<{safe_url}|{label}>"


def slack_date(iso: str, *, prefix: str = "") -> str:
    """`<!date^…>`, which Slack shows in the reader's time zone and language; "" for no or a bad date."""
    if not iso:
        return ""
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return ""
    fallback = when.date().isoformat()
    return f"<!date^{int(when.timestamp())}^{prefix}{{date_short}}|{prefix}{fallback}>"


_SLACK_MARKUP = re.compile(r"<([@#!]?)([^<>|]*)(?:\|([^<>]*))?>")


def plain_question(text: str, *, bot_user_id: str = "") -> str:
    """A user's message as plain text: the bot's own mention removed, other markup readable, entities undone."""

    def readable(m: re.Match[str]) -> str:
        sigil, target, label = m.group(1), m.group(2), m.group(3)
        if sigil == "@":
            return "" if target == bot_user_id else "@" + (label or target)
        if sigil == "#":
            return "#" + (label or target)
        if sigil == "!":
            return "@" + (label or target.split("^")[0])
        return label or target  # a link

    text = _SLACK_MARKUP.sub(readable, text or "")
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return " ".join(text.split())


def mentions_other_user(text: str, bot_user_id: str) -> bool:
    """Whether a message addresses someone other than the bot (then a follow-up is not meant for the bot)."""
    people = {m.group(2) for m in _SLACK_MARKUP.finditer(text or "") if m.group(1) == "@"}
    return bool(people - {bot_user_id}) and bot_user_id not in people


_FENCE = re.compile(r"(```.*?```|`[^`\n]+`)", re.DOTALL)
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_STRIKE = re.compile(r"~~(.+?)~~")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_BULLET = re.compile(r"^(\s*)[*+-]\s+", re.MULTILINE)


def markdown_to_mrkdwn(markdown: str) -> str:
    """The Markdown models write, as mrkdwn: bold, headings, bullets, links and strike-through; code kept."""
    parts = _FENCE.split(markdown)
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 1:  # inside code: only escaping
            out.append(escape(part))
            continue
        text = escape(part)
        # a link written in the text shows where it goes: only links the bot builds may carry a label
        text = _MD_LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
        text = _HEADING.sub(lambda m: f"*{m.group(1)}*", text)
        text = _BULLET.sub(lambda m: f"{m.group(1)}• ", text)
        text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
        text = _STRIKE.sub(lambda m: f"~{m.group(1)}~", text)
        out.append(text)
    return "".join(out)


_LINK_OR_DATE = re.compile(r"<[^<>]*>")


def split_mrkdwn(text: str, limit: int = SECTION_LIMIT - 100) -> list[str]:
    """Split mrkdwn into pieces of at most `limit` characters: at line ends, else at spaces; links stay whole.

    A piece that ends inside a ``` fence is closed there and the next piece reopens it.
    """
    pieces: list[str] = []
    current = ""
    for line in text.split("\n"):
        for chunk in _split_line(line, limit - 8):
            candidate = f"{current}\n{chunk}" if current else chunk
            if len(candidate) <= limit - 4:
                current = candidate
                continue
            if current:
                pieces.append(current)
            current = chunk
    if current or not pieces:
        pieces.append(current)
    return _balance_fences(pieces)


def _split_line(line: str, limit: int) -> list[str]:
    if len(line) <= limit:
        return [line]
    # Break at spaces outside <...> links; a single unbreakable word is cut hard.
    protected = {m.start(): m.end() for m in _LINK_OR_DATE.finditer(line)}
    chunks, start, i, last_space = [], 0, 0, -1
    while i < len(line):
        if i in protected and protected[i] - start <= limit:
            i = protected[i]
            continue
        if line[i] == " ":
            last_space = i
        if i - start >= limit:
            cut = last_space if last_space > start else i
            chunks.append(line[start:cut])
            start = cut + 1 if cut == last_space else cut
            last_space = -1
        i += 1
    chunks.append(line[start:])
    return [c for c in chunks if c]


def _balance_fences(pieces: list[str]) -> list[str]:
    balanced, open_fence = [], False
    for piece in pieces:
        text = ("```\n" + piece) if open_fence else piece
        if piece.count("```") % 2 == 1:
            open_fence = not open_fence
        balanced.append(text + ("\n```" if open_fence else ""))
    return balanced
