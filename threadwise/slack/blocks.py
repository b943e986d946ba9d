"""Block Kit for every message and modal the Slack bot shows; pure functions from views to JSON-ready dicts.

A message is `{"text": notification fallback, "blocks": [...]}`, ready for chat.postMessage / chat.update.
Block Kit's limits are kept here: a section holds at most 3000 characters, a message 50 blocks, a modal 100;
a long answer shows its first sections and a button that opens the whole text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from threadwise.chat.conversations import ExplainView, SourceView, TurnView, page_groups
from threadwise.chat.markup import truncate
from threadwise.chat.turn_views import LABEL_CHARS, WHY_TEXT, WHY_TITLE, cluster_line, page_lines
from threadwise.core.answer.citations import rewrite_citations, strip_citations
from threadwise.core.types import NOT_FOUND_PLAIN
from threadwise.slack.mrkdwn import SLACK, escape, link, markdown_to_mrkdwn, slack_date, split_mrkdwn

Message = dict[str, Any]
Block = dict[str, Any]

# action_ids the Slack app listens for
EXPLAIN = "explain"
FEEDBACK = "feedback"  # values "up" / "down"
MORE = "more"  # the overflow menu; option value "trace"
FOLLOW_UP = "follow_up"  # follow_up_1 .. follow_up_3, value: the question
FULL_ANSWER = "full_answer"
RETRY = "retry"
FEEDBACK_MODAL = "feedback_comment"  # callback_id of the 👎 modal
COMMENT_BLOCK, COMMENT_INPUT = "comment", "text"

MAX_ANSWER_SECTIONS = 3  # beyond this, "Read the full answer"
MAX_MODAL_BLOCKS = 100
MAX_SOURCE_LINES = 8
MAX_FOLLOW_UPS = 3
OUTDATED = "⚠ possibly outdated"  # a cited page older than THREADWISE_STALE_AFTER_DAYS

_TURN_BLOCK = re.compile(r"^turn:(\d+)")


def turn_id_of_block(block_id: str) -> int | None:
    """The turn id carried in an answer's block_id ("turn:42:…"), or None."""
    match = _TURN_BLOCK.match(block_id or "")
    return int(match.group(1)) if match else None


def _text(text: str, *, kind: str = "mrkdwn") -> dict[str, Any]:
    if kind == "plain_text":
        return {"type": "plain_text", "text": text, "emoji": True}
    return {"type": "mrkdwn", "text": text}


def section(text: str) -> Block:
    return {"type": "section", "text": _text(text)}


def context(text: str) -> Block:
    return {"type": "context", "elements": [_text(truncate(text, 3000))]}


def button(label: str, action_id: str, value: str, *, style: str | None = None) -> dict[str, Any]:
    element = {
        "type": "button",
        "text": _text(truncate(label, 75), kind="plain_text"),
        "action_id": action_id,
    }
    element["value"] = value[:2000]
    if style:
        element["style"] = style
    return element


# -- the answer ------------------------------------------------------------------------------------------


def answer_mrkdwn(turn: TurnView) -> str:
    """The answer as mrkdwn, each "[Source N]" turned into a link "[N]" to that source's page."""
    by_number = {s.number: s for s in turn.sources}

    def cite(n: int) -> str | None:
        source = by_number.get(n)
        return link(source.url, f"[{n}]") if source else None

    body = markdown_to_mrkdwn(turn.answer)
    return rewrite_citations(body, cite, n_sources=max(by_number, default=0), separator="")


def source_lines(sources: Sequence[SourceView]) -> str:
    """One compact line per page: "[1, 3] <url|Title> · SPACE · updated 3 May 2024 · ⚠ possibly outdated"."""
    pages = page_lines(sources)
    lines = []
    for page in pages[:MAX_SOURCE_LINES]:
        parts = [f"[{', '.join(map(str, page.numbers))}] {link(page.url, truncate(page.title, LABEL_CHARS))}"]
        if page.space:
            parts.append(escape(page.space))
        updated = slack_date(page.last_modified, prefix="updated ")
        if updated:
            parts.append(updated)
        if page.possibly_outdated:
            parts.append(OUTDATED)
        lines.append(" · ".join(parts))
    if len(pages) > MAX_SOURCE_LINES:
        lines.append(f"… and {len(pages) - MAX_SOURCE_LINES} more pages")
    return "\n".join(lines)


def _not_found_mrkdwn(turn: TurnView) -> str:
    text = f":mag: {NOT_FOUND_PLAIN}"
    closest = [s for _, s in page_groups(turn.sources)[:3]]
    if closest:
        text += "\nClosest pages I looked at: " + ", ".join(
            link(s.url, truncate(s.title or s.label, LABEL_CHARS)) for s in closest
        )
    text += "\nTry other words, or ask an admin whether the right space is synced (`/threadwise status`)."
    return text + (f"\n{turn.unmapped_note}" if turn.unmapped_note else "")


def answer_message(turn: TurnView, *, explain_state: str = "ready", feedback_buttons: bool = True) -> Message:
    """The answer in its thread: text with linked citations, sources, follow-ups, then the buttons.

    `explain_state` is "ready", "running" or "done" (the Explain button says so). `feedback_buttons=False`
    leaves out the 👍/👎 element: a plainer message for a workspace whose Slack refuses it.
    """
    if turn.error:
        body = ":warning: " + markdown_to_mrkdwn(turn.answer)
    elif turn.not_found:
        body = _not_found_mrkdwn(turn)
    else:
        body = answer_mrkdwn(turn)
    pieces = split_mrkdwn(body)
    blocks = [section(p) for p in pieces[:MAX_ANSWER_SECTIONS]]
    cut = len(pieces) > MAX_ANSWER_SECTIONS
    if cut:
        blocks.append(context("_The answer goes on; it is longer than one Slack message shows._"))
    if not turn.error and not turn.not_found and turn.cited_sources:
        blocks.append(context("*Sources*\n" + source_lines(turn.cited_sources)))
    if turn.confidence_line:
        blocks.append(context(escape(turn.confidence_line)))
    if turn.follow_ups and not turn.error:
        blocks.append(_follow_up_block(turn))
    blocks.append(_actions_block(turn, explain_state=explain_state, cut=cut))
    if feedback_buttons and not turn.error:
        blocks.append(_feedback_block(turn.turn_id))
    # `text` is what notifications show, and Slack parses it as mrkdwn too: escaped like the blocks
    return {"text": escape(truncate(strip_citations(turn.answer) or turn.answer, 300)), "blocks": blocks}


def _follow_up_block(turn: TurnView) -> Block:
    buttons = [
        button(question, f"{FOLLOW_UP}_{i}", question)
        for i, question in enumerate(turn.follow_ups[:MAX_FOLLOW_UPS], start=1)
    ]
    return {"type": "actions", "block_id": f"turn:{turn.turn_id}:follow_ups", "elements": buttons}


_EXPLAIN_LABEL = {"ready": ":mag: Explain", "running": ":hourglass_flowing_sand: Explaining…"}


def _actions_block(turn: TurnView, *, explain_state: str, cut: bool) -> Block:
    value = str(turn.turn_id)
    elements: list[dict[str, Any]] = []
    if turn.error:
        elements.append(button(":repeat: Try again", RETRY, value, style="primary"))
    else:
        elements.append(
            button(_EXPLAIN_LABEL.get(explain_state, ":white_check_mark: Explained"), EXPLAIN, value)
        )
    if cut:
        elements.append(button(":page_facing_up: Read the full answer", FULL_ANSWER, value))
    elements.append(
        {
            "type": "overflow",
            "action_id": MORE,
            "options": [{"text": _text("Behind the scenes", kind="plain_text"), "value": f"trace:{value}"}],
        }
    )
    return {"type": "actions", "block_id": f"turn:{value}:actions:{explain_state}", "elements": elements}


def _feedback_block(turn_id: int) -> Block:
    return {
        "type": "context_actions",
        "block_id": f"turn:{turn_id}:feedback",
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK,
                "positive_button": {
                    "text": _text("👍", kind="plain_text"),
                    "value": "up",
                    "accessibility_label": "Good answer",
                },
                "negative_button": {
                    "text": _text("👎", kind="plain_text"),
                    "value": "down",
                    "accessibility_label": "Bad answer",
                },
            }
        ],
    }


def placeholder_message(question: str, *, waiting: int = 0, ref: str = "") -> Message:
    """What the thread shows within a second, until the answer replaces it. `ref`: its block id, by which a
    replica that takes the question over finds it in the thread."""
    text = ":hourglass_flowing_sand: Looking through Confluence…"
    if waiting > 0:
        text += f" ({waiting} question{'s' if waiting != 1 else ''} ahead of yours)"
    return {"text": text, "blocks": [{**context(text), "block_id": ref} if ref else context(text)]}


def asked_for_message(user: str, question: str) -> Message:
    """The thread line that says who asked a suggested follow-up, before its placeholder."""
    text = f"<@{user}> asked: {escape(truncate(question, 500))}"
    return {"text": text, "blocks": [context(text)]}


def notice_message(text: str) -> Message:
    """A short plain reply (help, a refusal, a failure)."""
    return {"text": text, "blocks": [section(p) for p in split_mrkdwn(text)[:MAX_ANSWER_SECTIONS]]}


# -- Explain -----------------------------------------------------------------------------------------------


WHY = f"*{WHY_TITLE}* {WHY_TEXT}"
MAX_CLUSTERS_SHOWN = 40


def explanation_message(view: ExplainView) -> Message:
    """The attribution as its own thread message: one line per cluster, largest share first."""
    expl = view.explanation
    if expl is None:
        return {"text": escape(view.text), "blocks": [section(f":information_source: {escape(view.text)}")]}
    ordered = sorted(expl.clusters, key=lambda c: (not c.scored, -c.share, c.index))
    blocks = [section(WHY)]
    if expl.note:
        blocks.append(context(escape(expl.note)))
    blocks += [section(cluster_line(c, SLACK)) for c in ordered[:MAX_CLUSTERS_SHOWN]]
    if len(ordered) > MAX_CLUSTERS_SHOWN:
        blocks.append(context(f"… and {len(ordered) - MAX_CLUSTERS_SHOWN} smaller groups"))
    seconds = expl.timings_ms.get("total", 0.0) / 1000
    footer = f"{expl.answer_calls} answer calls · {seconds:.1f} s"
    blocks.append(context(footer + (" · computed earlier" if view.cached else "")))
    top = ordered[0] if ordered and ordered[0].sources else None
    summary = (
        f"Explanation: {top.share * 100:.0f}% from {escape(truncate(top.sources[0].label, LABEL_CHARS))}"
        if top
        else "Explanation"
    )
    return {"text": summary, "blocks": blocks}


# -- modals ---------------------------------------------------------------------------------------------


def _modal(title: str, blocks: list[Block], **extra: Any) -> dict[str, Any]:
    view = {
        "type": "modal",
        "title": _text(truncate(title, 24), kind="plain_text"),
        "close": _text("Close", kind="plain_text"),
        "blocks": blocks[:MAX_MODAL_BLOCKS] or [section("_(nothing to show)_")],
    }
    view.update(extra)
    return view


def _code_sections(text: str, budget: int, *, rest: str) -> list[Block]:
    """`text` as preformatted sections, at most `budget` of them; the last says where the rest is if cut."""
    pieces = split_mrkdwn(escape(text.replace("```", "'''")), limit=2900)
    blocks = [section(f"```{p}```") for p in pieces[:budget]]
    if len(pieces) > budget:
        blocks[-1] = section(f"_(cut here: {rest})_")
    return blocks


def trace_modal(turn_id: int, trace_text: str) -> dict[str, Any]:
    """Behind the scenes: the completed question, ranked evidences with their scores, timings."""
    intro = context(f"Answer {turn_id}: how it was found. Only you can see this.")
    rest = f"`threadwise trace {turn_id}` on the server shows all of it"
    return _modal("Behind the scenes", [intro, *_code_sections(trace_text, MAX_MODAL_BLOCKS - 1, rest=rest)])


def full_answer_modal(turn: TurnView) -> dict[str, Any]:
    pieces = split_mrkdwn(answer_mrkdwn(turn))
    blocks = [section(p) for p in pieces[: MAX_MODAL_BLOCKS - 1]]
    if turn.cited_sources:
        blocks.append(context("*Sources*\n" + source_lines(turn.cited_sources)))
    return _modal("Full answer", blocks)


def feedback_modal(turn_id: int, *, channel: str, thread_ts: str) -> dict[str, Any]:
    """The optional "what was wrong?" form after a 👎."""
    metadata = json.dumps({"turn_id": turn_id, "channel": channel, "thread_ts": thread_ts})
    field = {
        "type": "input",
        "block_id": COMMENT_BLOCK,
        "optional": True,
        "label": _text("What was wrong? (optional)", kind="plain_text"),
        "element": {
            "type": "plain_text_input",
            "action_id": COMMENT_INPUT,
            "multiline": True,
            "max_length": 1000,
            "placeholder": _text(
                "e.g. the page is outdated, or it answered a different question", kind="plain_text"
            ),
        },
    }
    return _modal(
        "Thanks for the 👎",
        [section("Your vote is saved. A few words help the admins fix the answer or the page."), field],
        callback_id=FEEDBACK_MODAL,
        private_metadata=metadata,
        submit=_text("Send", kind="plain_text"),
    )
