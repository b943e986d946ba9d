"""The knowledge-gap report from plain rows: a pure function of the turns of a window (rows.py), the clock
and an embedder for grouping questions by topic. Nothing here reads a database or a model itself."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from threadwise.reports.conflicts import conflicting_pages
from threadwise.reports.links import thread_link
from threadwise.reports.model import (
    Comment,
    Conflict,
    DayCount,
    MisleadingPage,
    Page,
    Question,
    Report,
    SpaceCount,
    StalePage,
    TopicGroup,
    Totals,
    UsedPage,
)
from threadwise.reports.rows import PageRef, TurnFacts
from threadwise.reports.topics import MAX_CLUSTERED, Embed, group_questions

EXAMPLES = 10  # questions shown per topic group
CLOSEST = 3  # pages shown per topic group
MOST_USED = 20


@dataclass(frozen=True)
class Options:
    since: datetime
    until: datetime  # the report's end: now, unless asked for an earlier window
    now: datetime
    stale_after_days: int = 730
    shows_askers: bool = False
    links: bool = True  # thread links (for admins)


def build_report(turns: Sequence[TurnFacts], *, embed: Embed, options: Options) -> Report:
    """Every section of the report for `turns` (one window, oldest first)."""
    pages = _latest_pages(turns)
    unanswered = [t for t in turns if t.not_found or t.down_votes]
    groups, not_grouped = _unanswered(unanswered, embed, pages, options)
    return Report(
        since=_iso(options.since),
        until=_iso(options.until),
        generated_at=_iso(options.now),
        stale_after_days=options.stale_after_days,
        shows_askers=options.shows_askers,
        totals=Totals(
            questions=len(turns),
            answered=sum(1 for t in turns if not t.not_found),
            not_found=sum(1 for t in turns if t.not_found),
            down_votes=sum(1 for t in turns if t.down_votes),
            unanswered=len(unanswered),
        ),
        unanswered=groups,
        not_grouped=not_grouped,
        misleading_pages=_misleading(turns, pages, options),
        stale_pages=_stale(turns, pages, options),
        conflicts=_conflicts(turns, pages, options),
        most_used_pages=_most_used(turns, pages),
        questions_per_space=_per_space(turns),
        questions_per_day=_per_day(turns, options),
    )


# ----- pages -----
def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def _page(ref: PageRef) -> Page:
    return Page(ref.page_id, ref.title, ref.url, ref.space, ref.last_modified[:10], ref.last_editor)


def _latest_pages(turns: Sequence[TurnFacts]) -> dict[str, Page]:
    """Each page as the newest turn saw it (a later sync may have renamed or edited it)."""
    pages: dict[str, Page] = {}
    for turn in turns:
        for _n, ref in turn.sources:
            pages[ref.page_id] = _page(ref)
    return pages


def _cited_pages(turn: TurnFacts) -> list[str]:
    """The page ids a turn cited, in order of first citation, each once."""
    seen: dict[str, None] = {}
    for number in turn.cited:
        ref = turn.page_of(number)
        if ref is not None:
            seen.setdefault(ref.page_id)
    return list(seen)


def _space(turn: TurnFacts) -> str:
    """The space a question was asked against: its first cited page's, else its best-ranked source's."""
    cited = next((ref for n in turn.cited if (ref := turn.page_of(n)) is not None), None)
    if cited is not None:
        return cited.space
    return turn.sources[0][1].space if turn.sources else ""


def _question(turn: TurnFacts, options: Options) -> Question:
    return Question(
        question=turn.question,
        asked_at=_iso(turn.asked_at),
        space=_space(turn),
        not_found=turn.not_found,
        down_votes=turn.down_votes,
        comments=tuple(v.comment for v in turn.votes if v.vote == "down" and v.comment),
        thread=thread_link(turn.thread) if options.links else "",
        turn_id=turn.turn_id,
        asked_by=turn.asked_by if options.shows_askers else None,
    )


# ----- unanswered -----
def _unanswered(
    turns: Sequence[TurnFacts], embed: Embed, pages: dict[str, Page], options: Options
) -> tuple[tuple[TopicGroup, ...], int]:
    by_text: dict[str, list[TurnFacts]] = defaultdict(list)
    for turn in turns:
        by_text[" ".join(turn.completed_question.split()).casefold()].append(turn)
    # the most asked first, then the newest: these are clustered when there are too many to cluster all
    keys = sorted(by_text, key=lambda k: (-len(by_text[k]), -by_text[k][-1].turn_id))
    clustered, rest = keys[:MAX_CLUSTERED], keys[MAX_CLUSTERED:]
    texts = [by_text[k][-1].completed_question for k in clustered]
    groups = []
    for topic in group_questions(texts, embed):
        asked = [t for i in topic.members for t in by_text[clustered[i]]]
        examples = [by_text[clustered[i]][-1] for i in topic.members[:EXAMPLES]]
        nearest = Counter(t.sources[k][1].page_id for t in asked for k in range(min(2, len(t.sources))))
        spaces = Counter(_space(t) for t in asked)
        groups.append(
            TopicGroup(
                topic=by_text[clustered[topic.members[0]]][-1].question,
                words=topic.words,
                count=len(asked),
                not_found=sum(1 for t in asked if t.not_found),
                down_votes=sum(t.down_votes for t in asked),
                questions=tuple(_question(t, options) for t in examples),
                closest_pages=tuple(pages[p] for p, _c in nearest.most_common(CLOSEST)),
                spaces=tuple(s for s, _c in spaces.most_common() if s),
            )
        )
    groups.sort(key=lambda g: (-g.count, g.topic))
    return tuple(groups), sum(len(by_text[k]) for k in rest)


# ----- pages that mislead -----
def _shares(turn: TurnFacts) -> list[tuple[str, float]]:
    """How much each page caused the answer: Explain's attribution where it ran, else by citation order
    (the first cited page 1, the second 1/2, …, normalised)."""
    if turn.page_shares:
        total = sum(s for _p, s in turn.page_shares) or 1.0
        return [(p, s / total) for p, s in turn.page_shares if s > 0]
    cited = _cited_pages(turn)
    weights = [1.0 / (k + 1) for k in range(len(cited))]
    total = sum(weights) or 1.0
    return [(p, w / total) for p, w in zip(cited, weights, strict=True)]


def _misleading(
    turns: Sequence[TurnFacts], pages: dict[str, Page], options: Options
) -> tuple[MisleadingPage, ...]:
    weight: dict[str, float] = defaultdict(float)
    downs: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    explained: Counter[str] = Counter()
    comments: dict[str, list[Comment]] = defaultdict(list)
    for turn in turns:
        if not turn.down_votes:
            continue
        thread = thread_link(turn.thread) if options.links else ""
        said = [
            Comment(v.comment, turn.question, thread, v.user if options.shows_askers else None)
            for v in turn.votes
            if v.vote == "down" and v.comment
        ]
        for page_id, share in _shares(turn):
            if page_id not in pages:
                continue
            weight[page_id] += share * turn.down_votes
            downs[page_id] += turn.down_votes
            answers[page_id] += 1
            explained[page_id] += bool(turn.page_shares)
            comments[page_id].extend(said)
    ranked = sorted(weight, key=lambda p: (-weight[p], pages[p].title))
    return tuple(
        MisleadingPage(
            page=pages[p],
            weight=round(weight[p], 3),
            down_votes=downs[p],
            answers=answers[p],
            explained=explained[p],
            comments=tuple(reversed(comments[p])),  # newest first
        )
        for p in ranked
    )


# ----- what is cited -----
def _citations(turns: Sequence[TurnFacts]) -> tuple[Counter[str], Counter[str], Counter[str]]:
    cited: Counter[str] = Counter()
    ups: Counter[str] = Counter()
    downs: Counter[str] = Counter()
    for turn in turns:
        for page_id in _cited_pages(turn):
            cited[page_id] += 1
            ups[page_id] += turn.up_votes
            downs[page_id] += turn.down_votes
    return cited, ups, downs


def _modified(page: Page) -> datetime | None:
    try:
        return datetime.fromisoformat(page.last_modified).replace(tzinfo=UTC)
    except ValueError:
        return None


def _stale(turns: Sequence[TurnFacts], pages: dict[str, Page], options: Options) -> tuple[StalePage, ...]:
    """Pages cited in the window and not modified for longer than the configured age, most used first."""
    cited, _ups, _downs = _citations(turns)
    cutoff = options.now - timedelta(days=options.stale_after_days)
    out = []
    for page_id, count in cited.most_common():
        modified = _modified(pages[page_id])
        if modified is not None and modified < cutoff:
            out.append(StalePage(pages[page_id], count, (options.now - modified).days))
    return tuple(sorted(out, key=lambda s: (-s.citations, -s.days_since_modified, s.page.title)))


def _most_used(turns: Sequence[TurnFacts], pages: dict[str, Page]) -> tuple[UsedPage, ...]:
    cited, ups, downs = _citations(turns)
    ranked = sorted(cited, key=lambda p: (-cited[p], pages[p].title))[:MOST_USED]
    return tuple(UsedPage(pages[p], cited[p], ups[p], downs[p]) for p in ranked)


# ----- conflicts -----
def _conflicts(turns: Sequence[TurnFacts], pages: dict[str, Page], options: Options) -> tuple[Conflict, ...]:
    """Pairs of pages an answer said disagree, newest first; a pair seen in several answers is listed once."""
    seen: dict[frozenset[str], tuple[PageRef, PageRef, int, TurnFacts]] = {}
    for turn in turns:  # oldest first: the newest answer of a pair wins
        for first, other in conflicting_pages(turn):
            pair = frozenset((first.page_id, other.page_id))
            count = seen[pair][2] if pair in seen else 0
            seen[pair] = (first, other, count + 1, turn)
    out = []
    for first, other, count, turn in seen.values():
        a, b = pages.get(first.page_id, _page(first)), pages.get(other.page_id, _page(other))
        newer = (
            ""
            if a.last_modified == b.last_modified or not (a.last_modified and b.last_modified)
            else (a.page_id if a.last_modified > b.last_modified else b.page_id)
        )
        thread = thread_link(turn.thread) if options.links else ""
        out.append(Conflict(a, b, newer, count, _iso(turn.asked_at), turn.question, thread))
    return tuple(sorted(out, key=lambda c: c.last_seen, reverse=True))


# ----- counts -----
def _outcome(turn: TurnFacts) -> str:
    return "not_found" if turn.not_found else "down" if turn.down_votes else "answered"


def _per_space(turns: Sequence[TurnFacts]) -> tuple[SpaceCount, ...]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for turn in turns:
        counts[_space(turn)][_outcome(turn)] += 1
    rows = [
        SpaceCount(space, sum(c.values()), c["answered"] + c["down"], c["not_found"], c["down"])
        for space, c in counts.items()
    ]
    return tuple(sorted(rows, key=lambda r: (-r.questions, r.space)))


def _per_day(turns: Sequence[TurnFacts], options: Options) -> tuple[DayCount, ...]:
    """Every day of the window, the empty ones too (a chart's gaps are real)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for turn in turns:
        counts[turn.asked_at.date().isoformat()][_outcome(turn)] += 1
    day, last = options.since.astimezone(UTC).date(), options.until.astimezone(UTC).date()
    out = []
    while day <= last:
        c = counts.get(day.isoformat(), Counter())
        out.append(DayCount(day.isoformat(), c["answered"], c["not_found"], c["down"]))
        day += timedelta(days=1)
    return tuple(out)
