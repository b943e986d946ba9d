"""Turn views as the conversation service makes them, for tests of what each front end renders."""

from __future__ import annotations

from threadwise.chat.turn_views import SourceView, TurnView


def source_view(
    number: int,
    page: str,
    *,
    title: str | None = None,
    modified: str = "2024-05-03T10:00:00Z",
    outdated: bool = False,
    space: str = "ENG",
) -> SourceView:
    """A cited passage of page `page` at https://wiki.example/`page`, titled "Page `page`" unless told."""
    return SourceView(
        number=number,
        evidence_id=f"{page}:{number}",
        page_id=page,
        title=f"Page {page}" if title is None else title,
        url=f"https://wiki.example/{page}",
        space=space,
        kind="passage",
        label=title or f"Label {page}",
        text="Open a ticket.",
        last_modified=modified,
        cited=True,
        possibly_outdated=outdated,
    )


def turn_citing(*sources: SourceView) -> TurnView:
    """An answer that cites every one of `sources`."""
    return TurnView(
        turn_id=4,
        conversation_id=1,
        question="q",
        completed_question="q",
        answer="Open a ticket " + " ".join(f"[Source {s.number}]" for s in sources) + ".",
        not_found=False,
        error=None,
        sources=list(sources),
        cited=[s.number for s in sources],
        follow_ups=[],
        timings_ms={},
    )
