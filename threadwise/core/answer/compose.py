"""How the extractive answerer turns its chosen units into an answer: whole facts, qualified, cited.

- A table row is quoted whole with its column names; when that is longer than the budget, the identifying
  (first) cell, the cells the question names, and the row's status/result/notes columns come first.
- A sentence comes with the sentence before it when it starts by pointing back ("This", "It", "However"), and
  with what follows when that points back to it or when it announces it ("… the following:").
- A list item comes with its parent item (spans.py), and an item that announces others with them.
- What is left of the word budget goes to the chosen unit's neighbours in its evidence, nearest first.
- A row that records a failure, chosen for a question that does not ask about failures, is put after a row
  of the same thing (same first cell, same table) that did not fail, and is labelled as a failure.
- A row of another page that gives the same thing a different value in one of its columns is introduced
  with "Another source says otherwise", with both pages' dates (conflicts.py says when rows disagree).
- A quote from a page in another language than the question's says which language it is in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from threadwise.core.answer.conflicts import disagreement_note, disagrees
from threadwise.core.answer.spans import Span, candidate_spans, clip, render_cells
from threadwise.core.language import evidence_is_german
from threadwise.core.retrieve.tokenize import tokenize
from threadwise.core.types import Answer, Evidence

MAX_CELL_WORDS = 15  # a longer cell value is clipped: the row's other columns matter too
# A sentence starting with one of these continues the one before it.
_CONTINUES = re.compile(
    r"^(?:this|that|these|those|it|its|they|their|there|then|however|but|also|otherwise|instead|so|thus|"
    r"therefore|in this case|dies|diese[rsmn]?|das|es|sie|dann|aber|jedoch|außerdem|sonst|daher)\b",
    re.I,
)
_STATUS_HEADER = re.compile(
    r"status|result|outcome|state|notes?\b|comments?|remarks?|ergebnis|bemerkung|hinweis|anmerkung", re.I
)
_FAILURE = re.compile(
    r"\b(?:fail(?:s|ed|ure|ing)?|error|broken|not supported|unsupported|fehlgeschlagen|fehler|nicht unterstützt)\b",
    re.I,
)


@dataclass(frozen=True)
class Piece:
    """A unit chosen for the answer, and what to say about it."""

    span: Span
    note: str = ""  # said before the quote ("The same table records a failure:")


def _words(text: str) -> int:
    return len(text.split())


def is_failure_row(span: Span) -> bool:
    return bool(span.cells) and any(_FAILURE.search(value) for _, value in span.cells)


def row_text(cells: Sequence[tuple[str, str]], question_terms: dict[str, float], budget: int) -> str:
    """The row with its column names, whole if it fits the budget, else its most telling cells first."""
    cells = [(h, clip(v, MAX_CELL_WORDS)) for h, v in cells]
    full = render_cells(cells)
    if _words(full) <= budget or len(cells) <= 2:
        return clip(full, max(budget, 1))

    def named(text: str) -> bool:
        return bool(set(tokenize(text)) & question_terms.keys())

    first = [0] + [i for i, (h, v) in enumerate(cells) if named(v) or named(h)]
    first += [i for i, (h, _) in enumerate(cells) if _STATUS_HEADER.search(h)]
    order = list(dict.fromkeys([*first, *range(len(cells))]))
    keep: list[int] = []
    words = 0
    for i in order:
        size = _words(render_cells([cells[i]])) + 1
        if keep and words + size > budget:
            continue
        keep.append(i)
        words += size
    return render_cells([cells[i] for i in sorted(keep)])


def _siblings(evidence: Evidence, span: Span) -> tuple[list[Span], int]:
    """All units of the evidence in reading order, and where `span` is among them."""
    units = candidate_spans(evidence, span.source, max_words=10**6)
    at = next((i for i, u in enumerate(units) if u.order == span.order), 0)
    return units, at


def _with_context(evidence: Evidence, span: Span, budget: int, *, fill: bool) -> str:
    """A sentence or list item with the neighbours it needs (and, with `fill`, those that fit the budget)."""
    units, at = _siblings(evidence, span)
    if not units:
        return clip(span.text, budget)
    is_list = evidence.kind == "list"

    def text(i: int) -> str:
        unit = units[i]
        return (unit.own or unit.text) if is_list and i != at else unit.text

    def quotable(i: int) -> bool:
        return not units[i].text.rstrip().endswith("?")  # a question in the page is not part of an answer

    chosen = {at}
    words = _words(units[at].text)
    # what the unit needs: the sentence it continues, and what continues or completes it
    if at > 0 and not is_list and _CONTINUES.match(units[at].text):
        chosen.add(at - 1)
        words += _words(text(at - 1))
    k = at
    while k + 1 < len(units) and (units[k].is_intro or (not is_list and _CONTINUES.match(units[k + 1].text))):
        if words + _words(text(k + 1)) > budget and len(chosen) > 1:
            break
        k += 1
        chosen.add(k)
        words += _words(text(k))
    # what fits: the nearest neighbours, the following one first
    if fill:
        after, before = max(chosen) + 1, min(chosen) - 1
        while after < len(units) or before >= 0:
            for i in (after, before):
                fits = 0 <= i < len(units) and i not in chosen and words + _words(text(i)) <= budget
                if fits and quotable(i):
                    chosen.add(i)
                    words += _words(text(i))
            if after < len(units) and after in chosen:
                after += 1
            elif before >= 0 and before in chosen:
                before -= 1
            else:
                break
    order = sorted(chosen)
    if is_list and any(units[i].is_intro for i in order if i < at):
        chosen_text = {i: text(i) for i in order} | {at: units[at].own or units[at].text}
    else:
        chosen_text = {i: text(i) for i in order}
    joined = ""
    for i in order:
        piece = chosen_text[i].strip()
        if not joined:
            joined = piece
        elif is_list and not joined.endswith(":"):
            joined = f"{joined.rstrip(';,. ')}; {piece}"
        else:
            joined = f"{joined} {piece}"
    return clip(joined, max(budget, _words(units[at].text)))


def _continuation(evidence: Evidence, evidences: Sequence[Evidence], budget: int) -> str:
    """What follows an intro that ends its evidence ('… these properties:'): the start of the page's next
    evidence, when it is among the sources (a long list is split into several evidences)."""
    following = next(
        (
            e
            for e in evidences
            if e.page_id == evidence.page_id and e.position == evidence.position + 1 and e.kind != "row"
        ),
        None,
    )
    if following is None or budget <= 0:
        return ""
    units = candidate_spans(following, 0, max_words=10**6)
    texts = [render_cells(u.cells) if u.cells else (u.own or u.text) for u in units]
    return " " + clip("; ".join(t.rstrip(";,. ") for t in texts), budget)


def _passing_twin(span: Span, evidences: Sequence[Evidence]) -> Span | None:
    """A row of the same thing (same first cell, same page and table) that records no failure."""
    mine = evidences[span.source]
    for k, evidence in enumerate(evidences):
        if evidence.page_id != mine.page_id or evidence.table_no != mine.table_no or k == span.source:
            continue
        for other in candidate_spans(evidence, k, max_words=10**6):
            if other.cells and other.cells[0] == span.cells[0] and not is_failure_row(other):
                return other
    return None


def qualify_failures(
    pieces: Sequence[Piece], evidences: Sequence[Evidence], *, asks_failure: bool, german: bool
) -> list[Piece]:
    """Put a row of the same thing that did not fail before a failure row (when the question is not about
    failures), and label the failure row as one."""
    if asks_failure:
        return list(pieces)
    note = (
        "Dieselbe Tabelle hält auch einen Fehlschlag fest:"
        if german
        else "The same table also records a failure:"
    )
    out: list[Piece] = []
    for piece in pieces:
        if any(p.span == piece.span for p in out):
            continue  # a passing twin already put first
        twin = _passing_twin(piece.span, evidences) if is_failure_row(piece.span) else None
        if twin is None:
            out.append(piece)
        else:
            out += [Piece(twin), Piece(piece.span, note)]
    return out


def mark_disagreements(
    pieces: Sequence[Piece], evidences: Sequence[Evidence], *, german: bool
) -> list[Piece]:
    """A row of another page that says something else about the same thing than a row already quoted is
    introduced as such, with both pages' dates when they are known (conflicts.py)."""
    out: list[Piece] = []
    for piece in pieces:
        page = evidences[piece.span.source].page_id
        earlier = next(
            (p for p in out if evidences[p.span.source].page_id != page and disagrees(p.span, piece.span)),
            None,
        )
        if earlier is None or piece.note:
            out.append(piece)
            continue
        note = disagreement_note(evidences[piece.span.source], evidences[earlier.span.source], german=german)
        out.append(Piece(piece.span, note))
    return out


def compose(
    pieces: Sequence[Piece],
    evidences: Sequence[Evidence],
    *,
    question_terms: dict[str, float],
    budget: int,
    german: bool,
    question: str = "",
    fill: bool = True,
) -> list[tuple[str, int]]:
    """The answer as (text, 0-based source) chunks, in the order the pieces were chosen."""
    pieces = qualify_failures(pieces, evidences, asks_failure=bool(_FAILURE.search(question)), german=german)
    pieces = mark_disagreements(pieces, evidences, german=german)
    chunks: list[tuple[str, int]] = []
    left = budget
    noted = False
    for k, piece in enumerate(pieces):
        if left <= 0:
            break
        if any(piece.span.text in text for text, _ in chunks):
            continue  # already quoted as another unit's context
        evidence = evidences[piece.span.source]
        share = left if k == len(pieces) - 1 else max(left // (len(pieces) - k), 12)
        if piece.span.cells:
            text = row_text(piece.span.cells, question_terms, share)
        else:
            text = _with_context(evidence, piece.span, share, fill=fill and k == 0)
            if text.rstrip().endswith(":"):
                text += _continuation(evidence, evidences, share - _words(text))
        if piece.note:
            text = f"{piece.note} {text}"
        if evidence_is_german(evidence) != german and not noted:
            noted = True  # said once per answer
            text += language_note(source_german=not german, german=german)
        chunks.append((text, piece.span.source))
        left -= _words(text)
    return chunks


def language_note(*, source_german: bool, german: bool) -> str:
    """' (quoted from a German page)', in the question's language."""
    if german:
        return (
            " (Zitat aus einer englischen Seite)"
            if not source_german
            else " (Zitat aus einer deutschen Seite)"
        )
    return " (quoted from a German page)" if source_german else " (quoted from an English page)"


def render(chunks: Sequence[tuple[str, int]], *, answerer: str) -> Answer:
    """Join the chunks, citing each source after its last consecutive chunk."""
    parts: list[str] = []
    for k, (text, source) in enumerate(chunks):
        text = text.rstrip()
        last_of_source = k + 1 == len(chunks) or chunks[k + 1][1] != source
        parts.append(f"{text} [Source {source + 1}]" if last_of_source else text)
    cited = tuple(dict.fromkeys(source + 1 for _, source in chunks))
    return Answer(text=" ".join(parts), cited=cited, answerer=answerer)
