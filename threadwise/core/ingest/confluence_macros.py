"""Rewrite Confluence's ac:/ri: markup into plain HTML, keeping the text a reader would see.

Storage format carries much of a page's meaning inside macros: code blocks, info/warning panels, status
lozenges, user mentions, page links, Jira keys, task lists. This module replaces each of them, in place in a
BeautifulSoup tree, by ordinary HTML (`<pre>`, `<div>`, `<ul>`, text), and drops the macros that carry no
text (table of contents, child-page lists, attachments, images without alt text, ...). Whatever it does not
know is unwrapped, so unknown markup never hides its text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from bs4 import BeautifulSoup, NavigableString, Tag

# Panels whose kind is worth saying: "Warning: never deploy on Fridays" means more than the bare sentence.
PANEL_LABELS = {"info": "Info", "note": "Note", "warning": "Warning", "tip": "Tip"}

# Macros that render generated or decorative content: nothing of the page's own text is lost by dropping them.
DROPPED_MACROS = {
    "anchor",
    "toc",
    "toc-zone-marker",
    "children",
    "attachments",
    "pagetree",
    "pagetreesearch",
    "recently-updated",
    "view-file",
    "viewpdf",
    "livesearch",
    "search",
    "contributors",
    "contributors-summary",
    "blog-posts",
    "popular-labels",
    "content-report-table",
    "create-from-template",
    "contentbylabel",
    "widget",
    "multimedia",
    "profile-picture",
    "profile",
    "gallery",
    "include",
    "excerpt-include",
    "change-history",
    "space-details",
    "roadmap",
    "gliffy",
    "drawio",
}

EMOTICONS = {"tick": "✓", "cross": "✗", "warning": "⚠"}

# Markup that is only machinery: parameters of macros (read before), editor hints, column widths, scripts.
DROPPED_TAGS = {"ac:parameter", "ac:placeholder", "ac:adf-attribute", "colgroup", "col", "script", "style"}


def rewrite_confluence_markup(soup: BeautifulSoup, root: Tag, user_names: Mapping[str, str]) -> None:
    """Replace every ac:/ri: construct under `root` by plain HTML (in place).

    Dropped markup is `extract()`ed, not decomposed: bs4's `decomposed` check searches the whole subtree
    (a quadratic cost on deep pages). Works innermost first, so a status lozenge inside a table inside an expand macro is already text when the
    expand macro is unwrapped. `user_names` maps account ids / user keys to display names where known.
    """
    for extension in root.find_all("ac:adf-extension"):
        _rewrite_adf_extension(soup, extension)
    for tag in reversed(root.find_all(True)):
        if tag.parent is None:
            continue  # already taken out with a dropped macro
        name = tag.name
        if name in ("ac:structured-macro", "ac:macro"):
            _rewrite_macro(soup, tag)
        elif name == "ac:link":
            _replace_with_text(tag, _link_text(tag, user_names))
        elif name == "ri:user" and tag.parent.name != "ac:link":
            _replace_with_text(tag, user_mention(tag, user_names))
        elif name in ("ac:image", "img"):
            _replace_with_text(
                tag, str(tag.get("ac:alt") or tag.get("alt") or tag.get("ac:title") or "").strip()
            )
        elif name == "ac:emoticon":
            _replace_with_text(tag, EMOTICONS.get(str(tag.get("ac:name", "")), ""))
        elif name == "time":
            if not tag.get_text(strip=True):
                _replace_with_text(tag, str(tag.get("datetime", "")))
        elif name == "ac:task-list":
            _rewrite_task_list(soup, tag)
        elif name in DROPPED_TAGS and ":" not in name:
            tag.extract()
    for tag in root.find_all(True):
        if ":" not in tag.name:
            continue
        if tag.name in DROPPED_TAGS:
            tag.extract()
        else:
            tag.unwrap()  # layouts, rich-text bodies, inline comment markers, unknown ac: tags: keep the text


def user_mention(user: Tag, user_names: Mapping[str, str]) -> str:
    """A readable mention: "@Display Name" when known, "@username" on Server, else "@user-<short id>"."""
    key = str(user.get("ri:account-id") or user.get("ri:userkey") or "")
    if key and key in user_names:
        return "@" + user_names[key]
    username = user.get("ri:username")
    if username:
        return f"@{username}"
    short = re.sub(r"[^0-9A-Za-z]", "", key)[-6:]
    return f"@user-{short}" if short else "@user"


def _replace_with_text(tag: Tag, text: str) -> None:
    if text:
        tag.replace_with(NavigableString(text))
    else:
        tag.extract()


def _params(macro: Tag) -> dict[str, str]:
    return {
        str(p.get("ac:name", "")): p.get_text().strip()
        for p in macro.find_all("ac:parameter", recursive=False)
    }


def _rewrite_macro(soup: BeautifulSoup, macro: Tag) -> None:
    name = str(macro.get("ac:name", "")).lower()
    params = _params(macro)
    rich_body = macro.find("ac:rich-text-body", recursive=False)
    plain_body = macro.find("ac:plain-text-body", recursive=False)
    if name in DROPPED_MACROS:
        macro.extract()
    elif name == "status":
        _replace_with_text(macro, params.get("title", "") or params.get("colour", ""))
    elif name == "jira":
        _replace_with_text(macro, params.get("key", ""))
    elif plain_body is not None:  # code, noformat, and any other macro with a verbatim body
        replacement = soup.new_tag("div")
        if params.get("title"):
            replacement.append(_paragraph(soup, params["title"]))
        pre = soup.new_tag("pre")
        pre.string = plain_body.get_text()
        replacement.append(pre)
        macro.replace_with(replacement)
    elif rich_body is not None:  # info/note/warning/tip/panel/expand/details/section/column/...
        _unwrap_panel(soup, macro, rich_body, PANEL_LABELS.get(name, ""), params.get("title", ""))
    else:
        macro.extract()  # a macro with no body shows generated content or nothing


def _unwrap_panel(soup: BeautifulSoup, macro: Tag, body: Tag, label: str, title: str) -> None:
    """Replace a panel-like macro by a <div> with its body, its title first, its kind ("Warning:") in front."""
    replacement = soup.new_tag("div")
    prefix = f"{label}: " if label else ""
    if title:
        replacement.append(_paragraph(soup, prefix + title))
        prefix = ""
    for child in list(body.children):
        replacement.append(child.extract())
    if prefix:
        first = next((c for c in replacement.children if c.get_text(strip=True)), None)
        if isinstance(first, Tag) and first.name == "p":
            first.insert(0, NavigableString(prefix))
        elif isinstance(first, NavigableString):
            first.replace_with(NavigableString(prefix + first.lstrip()))
        else:
            replacement.insert(0, _paragraph(soup, prefix.strip()))
    macro.replace_with(replacement)


def _paragraph(soup: BeautifulSoup, text: str) -> Tag:
    p = soup.new_tag("p")
    p.string = text
    return p


def _link_text(link: Tag, user_names: Mapping[str, str]) -> str:
    """What a reader sees for a link: its body text, else the linked page title / user / file / anchor."""
    for body_name in ("ac:plain-text-link-body", "ac:link-body"):
        body = link.find(body_name, recursive=False)
        if body is not None and body.get_text(strip=True):
            return " ".join(body.get_text(" ").split())
    user = link.find("ri:user")
    if user is not None:
        return user_mention(user, user_names)
    for resource, attribute in (
        ("ri:page", "ri:content-title"),
        ("ri:blog-post", "ri:content-title"),
        ("ri:attachment", "ri:filename"),
        ("ri:url", "ri:value"),
        ("ri:space", "ri:space-key"),
    ):
        found = link.find(resource, recursive=False)
        if found is not None and found.get(attribute):
            return str(found.get(attribute))
    return str(link.get("ac:anchor", ""))


def _rewrite_task_list(soup: BeautifulSoup, task_list: Tag) -> None:
    """<ac:task-list> -> <ul> of "[ ] ..." / "[x] ..." items (nested task lists are already <ul> by now)."""
    ul = soup.new_tag("ul")
    for task in task_list.find_all("ac:task", recursive=False):
        status = task.find("ac:task-status", recursive=False)
        done = status is not None and status.get_text(strip=True).lower() == "complete"
        li = soup.new_tag("li")
        li.append(NavigableString("[x] " if done else "[ ] "))
        body = task.find("ac:task-body", recursive=False)
        if body is not None:
            for child in list(body.children):
                li.append(child.extract())
        ul.append(li)
    task_list.replace_with(ul)


def _rewrite_adf_extension(soup: BeautifulSoup, extension: Tag) -> None:
    """Cloud's ADF blocks: decision lists become "Decision: ..." items; others fall back to their HTML."""
    if extension.parent is None:
        return
    decisions = extension.find("ac:adf-node", attrs={"type": "decision-list"})
    if decisions is None:
        for node in extension.find_all("ac:adf-node"):
            node.extract()
        return  # what is left is the ac:adf-fallback HTML, unwrapped later
    ul = soup.new_tag("ul")
    for item in decisions.find_all("ac:adf-node", attrs={"type": "decision-item"}):
        content = item.find("ac:adf-content")
        text = " ".join(content.get_text(" ").split()) if content is not None else ""
        if text:
            li = soup.new_tag("li")
            li.string = f"Decision: {text}"
            ul.append(li)
    extension.replace_with(ul)
