"""What a front end shows of a turn: the answer, its numbered sources, and explanations (read from the store)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from threadwise.chat.markup import Markup, escape, truncate
from threadwise.core.attribute.explanation import ClusterAttribution, Explanation, share_bar
from threadwise.core.pipeline import TurnResult
from threadwise.db.conversations import StoredTurn


@dataclass(frozen=True)
class SourceView:
    number: int  # 1-based, as cited: [Source N]
    evidence_id: str
    page_id: str
    title: str
    url: str
    space: str
    kind: str
    label: str
    text: str
    last_modified: str
    cited: bool
    scores: dict[str, float] = field(default_factory=dict)
    # not modified for longer than the configured age (THREADWISE_STALE_AFTER_DAYS) when the view was made
    possibly_outdated: bool = False


@dataclass(frozen=True)
class TurnView:
    turn_id: int
    conversation_id: int
    question: str
    completed_question: str
    answer: str
    not_found: bool
    error: str | None
    sources: list[SourceView]
    cited: list[int]
    follow_ups: list[str]
    timings_ms: dict[str, float]
    # in a conversation that is not private, pages only the asker may read would have been among the evidence:
    # the front end tells the asker privately to ask in a direct message (never stored: it is about the asker)
    withheld: bool = False
    # per-user, private: no Confluence account matched the asker, so only the fallback was searched; the front
    # end adds this to a not-found reply (never stored: it is about the asker)
    unmapped_note: str = ""
    # how sure the answer is: {"score", "level", "reason"} (core/answer/confidence.py); None when not found
    confidence: dict[str, Any] | None = None

    @property
    def confidence_line(self) -> str:
        """'Confidence: high — one page, exact match', as every front end shows it; "" when none."""
        c = self.confidence
        if not c or self.not_found or self.error:
            return ""
        return f"Confidence: {c['level']} — {c['reason']}"

    @property
    def cited_sources(self) -> list[SourceView]:
        """Cited sources first (in citation order), the user sees these before the rest."""
        by_number = {s.number: s for s in self.sources}
        return [by_number[n] for n in self.cited if n in by_number]


def page_groups(sources: Sequence[SourceView]) -> list[tuple[list[int], SourceView]]:
    """Sources grouped by page, in the order given: ([1, 3], first source of that page). Every front end lists
    sources this way, so a page retrieved five times is named once."""
    groups: dict[str, tuple[list[int], SourceView]] = {}
    for s in sources:
        groups.setdefault(s.page_id or s.url or s.title, ([], s))[0].append(s.number)
    return list(groups.values())


def modified_at(last_modified: str) -> datetime | None:
    """A page's last-modified time (ISO 8601; a bare date or no zone counts as UTC); None when unknown."""
    try:
        when = datetime.fromisoformat(last_modified.strip())
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def page_date(last_modified: str) -> str:
    """The day a page was last modified, "2024-05-03"; "" when unknown."""
    modified = modified_at(last_modified)
    return modified.date().isoformat() if modified else ""


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class PageAge:
    """When a cited page counts as possibly outdated: not modified for more than `stale_after_days`, by
    `clock`. The composition root makes one from the settings; tests pass a fixed clock."""

    stale_after_days: int = 730
    clock: Callable[[], datetime] = _utc_now

    def outdated(self, last_modified: str) -> bool:
        modified = modified_at(last_modified)
        return modified is not None and self.clock() - modified > timedelta(days=self.stale_after_days)


@dataclass(frozen=True)
class SourceLine:
    """One cited page as every front end lists it: "[1, 3] Title · SPACE · updated 2024-05-03 · possibly
    outdated". Slack, Teams and the CLI each write this in their own markup."""

    numbers: tuple[int, ...]  # the source numbers citing this page, as in the answer
    title: str  # the page title, else the evidence's label
    url: str
    space: str
    last_modified: str  # as the page says (ISO 8601); "" when unknown
    possibly_outdated: bool

    @property
    def date(self) -> str:
        """The last-modified day, "2024-05-03"; "" when unknown."""
        return page_date(self.last_modified)


def page_lines(sources: Sequence[SourceView]) -> list[SourceLine]:
    """The sources as one line per page, in the order given (see `page_groups`)."""
    return [
        SourceLine(
            numbers=tuple(numbers),
            title=s.title or s.label,
            url=s.url,
            space=s.space,
            last_modified=s.last_modified if modified_at(s.last_modified) else "",
            possibly_outdated=s.possibly_outdated,
        )
        for numbers, s in page_groups(sources)
    ]


# what Explain shows above its groups of sources, on every platform (each sets the title in its own bold)
WHY_TITLE = "Why this answer?"
WHY_TEXT = (
    "Each group of similar sources was removed in turn and the question answered again; "
    "the more the answer changed, the larger the group's share."
)


@dataclass(frozen=True)
class ExplainView:
    """An answer's explanation as stored (`result`), or why there is none (`error`, `text`)."""

    turn_id: int
    text: str
    result: dict[str, Any]
    cached: bool
    error: str | None = None

    @property
    def explanation(self) -> Explanation | None:
        """The attribution to show, read once from what is stored; None when there is none."""
        return None if self.error or not self.result else Explanation.from_dict(self.result)


MAX_SOURCES_PER_CLUSTER = 8  # sources named on one line of an explanation
LABEL_CHARS = 150  # a page title in a link: a 10 KB title must not push the rest of a line out


def cluster_line(cluster: ClusterAttribution, markup: Markup) -> str:
    """One group of an explanation: "`██████▊` *67%*  <url|Page (row 7)> [1], <url|Other page> [4]", in the
    platform's `markup`; a group that could not be scored says why."""
    shown = cluster.sources[:MAX_SOURCES_PER_CLUSTER]
    sources = ", ".join(f"{markup.link(s.url, truncate(s.label, LABEL_CHARS))} [{s.position}]" for s in shown)
    if len(cluster.sources) > len(shown):
        sources += f" and {len(cluster.sources) - len(shown)} more"
    if cluster.scored:
        head = (
            f"{markup.code(f'{share_bar(cluster.share):<10}')} {markup.bold(f'{cluster.share * 100:.0f}%')}"
        )
    else:
        head = markup.italic(
            f"not scored{': ' + escape(truncate(cluster.error, 200)) if cluster.error else ''}"
        )
    return f"{head}  {sources}"


def source_dicts(result: TurnResult) -> list[dict[str, Any]]:
    r = result.retrieval
    lex = {h.evidence_id: h for h in r.lexical}
    den = {h.evidence_id: h for h in r.dense}
    fin = {h.evidence_id: h for h in r.final}
    out = []
    for n, e in enumerate(r.evidences, start=1):
        scores = {"final": fin[e.id].score if e.id in fin else 0.0}
        if e.id in lex:
            scores.update(lexical=lex[e.id].score, lexical_rank=lex[e.id].rank)
        if e.id in den:
            scores.update(dense=den[e.id].score, dense_rank=den[e.id].rank)
        out.append({"number": n, **e.to_dict(), "label": e.label, "scores": scores})
    return out


def turn_view(
    turn: StoredTurn, *, withheld: bool = False, unmapped_note: str = "", page_age: PageAge = PageAge()
) -> TurnView:
    """A stored turn as front ends show it; `page_age` marks the sources whose page is possibly outdated."""
    cited = set(turn.cited)
    sources = [
        SourceView(
            number=s["number"],
            evidence_id=s["evidence_id"],
            page_id=s["page_id"],
            title=s["title"],
            url=s["url"],
            space=s["space"],
            kind=s["kind"],
            label=s["label"],
            text=s["text"],
            last_modified=s.get("last_modified", ""),
            cited=s["number"] in cited,
            scores=dict(s.get("scores", {})),
            possibly_outdated=page_age.outdated(s.get("last_modified", "")),
        )
        for s in turn.sources
    ]
    return TurnView(
        turn_id=turn.id,
        conversation_id=turn.conversation_id,
        question=turn.question,
        completed_question=turn.completed_question,
        answer=turn.answer,
        not_found=turn.not_found,
        error=turn.error,
        sources=sources,
        cited=list(turn.cited),
        follow_ups=list(turn.follow_ups),
        timings_ms=dict(turn.timings),
        withheld=withheld,
        unmapped_note=unmapped_note,
        confidence=dict(turn.confidence) if turn.confidence else None,
    )
