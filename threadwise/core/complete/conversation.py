"""What question completion sees of a conversation: one builder for the bots, the CLI and `threadwise eval`.

An answered turn is remembered by its question as asked, as understood, its answer, and the pages of the first
sources shown (each page once); what people said in a thread without asking comes first, with no answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice

from threadwise.core.types import PastTurn

SHOWN_PAGES = 3  # sources whose pages a later turn remembers


def past_turn(
    *, question: str, completed_question: str, answer: str, source_page_ids: Iterable[str]
) -> PastTurn:
    """An answered turn as completion sees it; `source_page_ids`: the page of each source shown, in order."""
    pages = tuple(dict.fromkeys(islice(source_page_ids, SHOWN_PAGES)))
    return PastTurn(question=question, completed_question=completed_question, answer=answer, page_ids=pages)


def conversation_history(answered: Iterable[PastTurn], *, said: Sequence[str] = ()) -> list[PastTurn]:
    """The history handed to a completer, oldest first: what was said in the thread, then the answered turns."""
    return [PastTurn(question=m, completed_question=m, answer="") for m in said] + list(answered)
