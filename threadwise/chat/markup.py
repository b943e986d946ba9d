"""How a front end writes inline formatting: the chat layer writes its texts (admin replies, status lines)
once, through a `Markup` each platform supplies (Slack's mrkdwn, Teams' Markdown), and never in either's syntax.

Both platforms read `&`, `<` and `>` as markup, so `escape` is the same for both.
"""

from __future__ import annotations

from typing import Protocol


class Markup(Protocol):
    """A platform's inline formatting, and how its admin commands are typed (`/threadwise`, `admin`)."""

    @property
    def command(self) -> str: ...

    def bold(self, text: str) -> str: ...
    def italic(self, text: str) -> str: ...
    def date(self, iso: str) -> str: ...  # "" for no or a bad date
    def user(self, user_id: str, name: str = "") -> str: ...  # a mention of someone
    def group(self, group_id: str, name: str) -> str: ...  # a mention of a user group
    def icon(self, name: str) -> str: ...  # "ok", "warning", "failed"
    def link(self, url: str, label: str) -> str: ...  # just the label when there is no usable URL
    def code(self, text: str) -> str: ...


def escape(text: str) -> str:
    """Escape the three characters both platforms read as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def truncate(text: str, limit: int, *, ellipsis: str = "…") -> str:
    """`text` cut to `limit` characters at a word boundary if one is near, marked with the ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: limit - len(ellipsis)]
    if cut.rfind("<") > cut.rfind(">"):  # never inside a link or a date: drop the cut one whole
        cut = cut[: cut.rfind("<")]
    amp = cut.rfind("&")
    if amp >= 0 and ";" not in cut[amp:] and len(cut) - amp <= 6:  # nor inside an entity (&amp; &lt; &gt;)
        cut = cut[:amp]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + ellipsis
