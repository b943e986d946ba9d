"""What a help-desk channel needs, for every front end: which messages are questions (auto answers), and the
texts of sharing a private answer and of calling the channel's experts in.

Auto mode answers top-level messages that ask something: a question mark, or an opening question word
("how do I …", "wie beantrage ich …") with enough words to be about something. Greetings, thanks and
statements get nothing, and a question the wiki does not answer gets nothing public either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from threadwise.chat.channel_commands import expert_mention
from threadwise.chat.markup import Markup, escape, truncate
from threadwise.chat.turn_views import TurnView
from threadwise.core.complete.topic import opens_a_question
from threadwise.db.channel_modes import Expert

SHARE = "Share to channel"
KEEP = "Keep to myself"
STILL_NEED_HELP = "Still need help?"
MARK_RESOLVED = "Mark resolved"
NOT_FOUND_PRIVATELY = (
    "I couldn't find this in the wiki, so I posted nothing in the channel. Someone there may know."
)
MIN_WORDS = 3  # "how are you" is chit-chat; a question about something has more to it
_CHIT_CHAT = re.compile(
    r"^\s*(?:how are you|how's it going|hows it going|what's up|whats up|anyone around|any news|"
    r"wie geht'?s|wie geht es (?:dir|euch)|alles klar|was geht)\b",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"<[^<>]*>|https?://\S+")  # mentions, links, dates: not words of the question


def is_question(text: str) -> bool:
    """Whether a top-level message asks something the wiki might answer."""
    plain = " ".join(_MARKUP.sub(" ", text or "").split())
    words = plain.split()
    if len(words) < 2 or _CHIT_CHAT.match(plain):
        return False
    if plain.rstrip().endswith("?"):
        return True
    return len(words) >= MIN_WORDS and opens_a_question(plain)


def stays_quiet(turn: TurnView) -> bool:
    """In auto mode an answer is posted only when the wiki held one: "not found" and failures stay unposted."""
    return turn.not_found or bool(turn.error)


def shared_by(user: str, markup: Markup) -> str:
    """The line above an answer someone shared from their private view."""
    return f"Shared by {markup.user(user)}"


def escalation_text(
    *,
    question: str,
    asker: str,
    experts: Sequence[Expert],
    turn: TurnView | None,
    markup: Markup,
    mention: str = "",
) -> str:
    """The message that calls the channel's experts in: who, the question, and what the bot tried.
    `mention`: how the front end writes the experts' mentions (Slack: in the text; Teams adds entities)."""
    who = mention or ", ".join(expert_mention(e, markup) for e in experts)
    lines = [
        f"{who}: {markup.user(asker)} still needs help with this question.",
        f"> {escape(truncate(question, 500))}",
    ]
    if turn is None:
        lines.append("I had no answer to offer.")
    elif turn.not_found:
        lines.append("I couldn't find it in the synced Confluence pages.")
    else:
        titles = list(dict.fromkeys(s.title for s in turn.cited_sources if s.title))[:3]
        tried = ", ".join(markup.bold(escape(truncate(t, 80))) for t in titles) or "the synced pages"
        lines.append(f"My answer (from {tried}) did not settle it.")
    lines.append(f"When it is settled, press {markup.bold(MARK_RESOLVED)} or react with ✅.")
    return "\n".join(lines)
