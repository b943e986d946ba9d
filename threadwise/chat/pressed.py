"""The one check every pressed button that names an answer goes through, on every platform.

A button carries an answer's (turn's) id, and whoever presses can send any id: turn ids count up across all
conversations. So a press is honoured only when the answer it names was given in *this* conversation (the
thread the press came from) and the presser may see it (`ConversationService.may_see`); otherwise it is
refused with a short text for the presser alone that shows nothing of the answer. An id that is unknown and
one from another conversation get the same text, so a refusal does not tell whether an answer exists; a
value that is no id at all (no button of ours sends one) is only logged.
Explain, Try again, votes and their comments, Behind the scenes, Read the full answer and the suggested
follow-ups all go through `pressed_turn`; a new action on an answer (Share) plugs in here too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from threadwise.chat.conversations import ConversationService
from threadwise.chat.turn_views import TurnView
from threadwise.db.conversations import ThreadKey

log = logging.getLogger(__name__)

NOT_HERE = "I can't find that answer in this conversation, so this button does nothing here."
NOT_YOURS = (
    "Sorry, this answer comes from Confluence pages you can't read (or that can't be shown here), "
    "so I can't show you more of it."
)
# SQLite's INTEGER: a larger id is no answer of ours (and must not reach the database)
MAX_TURN_ID = 2**63 - 1


@dataclass(frozen=True)
class Pressed:
    """What a press may act on: the answer, or None and what to tell the presser ("" for a value that is no
    answer id at all: there is nothing to tell)."""

    turn: TurnView | None
    refusal: str = ""


def turn_number(value: object) -> int | None:
    """A turn id as a button carries it (an int, or its digits), or None for anything else."""
    if isinstance(value, bool):
        return None
    text = str(value) if isinstance(value, int | str) else ""
    if not text.isdigit() or len(text) > 19:
        return None
    number = int(text)
    return number if 0 < number <= MAX_TURN_ID else None


def pressed_turn(
    conversations: ConversationService,
    value: object,
    *,
    key: ThreadKey,
    may_see: Callable[[TurnView], bool],
    user: str = "",
) -> Pressed:
    """The answer a press names, if it was given in the conversation `key` and `may_see` it (who pressed,
    asked only then: it may look them up); else a refusal. `value`: the id as the button carried it."""
    number = turn_number(value)
    if number is None:
        log.info("%s pressed a button that names no answer (%.24r): ignored", user, value)
        return Pressed(None)
    turn = conversations.turn_in(number, key)
    if turn is None:
        log.info("%s pressed a button naming no answer of this conversation (%.24r): refused", user, value)
        return Pressed(None, NOT_HERE)
    if not may_see(turn):
        log.info("%s may not see more of answer %s: refused privately", user, turn.turn_id)
        return Pressed(None, NOT_YOURS)
    return Pressed(turn)


def suggested(turn: TurnView, number: object, *, shown: int) -> str | None:
    """The follow-up question a press names: the `number`th (from 1) of the first `shown` that `turn`
    suggests, as stored with the answer (never the text the press carries); None if there is no such one."""
    text = str(number) if isinstance(number, int | str) and not isinstance(number, bool) else ""
    offered = turn.follow_ups[:shown]
    return offered[int(text) - 1] if text.isdigit() and 1 <= int(text) <= len(offered) else None
