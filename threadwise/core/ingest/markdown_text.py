"""Readable one-string text of a storage-format subtree (markdownify), as evidence text wants it."""

from __future__ import annotations

import re

from bs4 import Tag
from markdownify import MarkdownConverter

BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")


class _Converter(MarkdownConverter):
    """markdownify set up for evidence text: plain readable text, lists and code blocks kept, no link or
    emphasis clutter, no escaping. Nested tables (inside a cell or a list) become plain lines."""

    def __init__(self) -> None:
        super().__init__(
            bullets="-",
            heading_style="atx",
            escape_asterisks=False,
            escape_underscores=False,
            escape_misc=False,
            strip=[
                "a",
                "img",
                "b",
                "strong",
                "em",
                "i",
                "u",
                "span",
                "sup",
                "sub",
                "s",
                "del",
                "code",
                "font",
            ],
        )

    def convert_table(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return "\n\n" + text.strip() + "\n\n"

    def convert_tr(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return " ".join(text.split()) + "\n"

    def convert_td(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return " " + text.strip() + " "

    convert_th = convert_td

    def convert_li(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if "td" in parent_tags or "th" in parent_tags:  # in a cell: one item a line, no bullet to confuse
            return "\n" + text.strip() + "\n"  # with text such as "24. December"
        return str(super().convert_li(el, text, parent_tags))  # type: ignore[misc]  # untyped library


_CONVERTER = _Converter()


def markdown_text(node: Tag) -> str:
    """Readable text of a subtree: markdownify, then tidy whitespace (no trailing spaces, one blank line)."""
    text = _CONVERTER.convert_soup(node).replace("\xa0", " ")
    lines = [line.rstrip() for line in text.splitlines()]
    return BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def one_line(text: str) -> str:
    return " ".join(text.split())
