"""The knowledge-gap report over 10,000 turns: how long `threadwise report` takes and how much memory it holds.

    python bench/report_bench.py [--turns 10000] [--days 30] [--out DIR]

Seeds a fresh SQLite database through the conversation store's own functions (conversations, turns with ten
sources each and a trace, votes and comments, explanations), spread over the window: a quarter of the
questions not found (about 60 topics, a dozen phrasings each, English and German), one in ten answers voted
down (most with a comment), some explained, a few noting two pages that disagree; 500 pages in 5 spaces,
last modified over five years. Then times the report as the CLI builds it (the app's similarity embedder,
USE by default): reading the rows, grouping and building, and each format's rendering; and prints the peak
Python memory the report held (tracemalloc) and the process's peak RSS (the model included).
Goal (issue 31): under 10 s on the 2-core machine, memory bounded.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from threadwise.db.conversations import ConversationRow, ExplanationRow, FeedbackRow, TurnRow  # noqa: E402
from threadwise.reports.build import Options, build_report  # noqa: E402
from threadwise.reports.model import Report  # noqa: E402
from threadwise.reports.rows import read_turns  # noqa: E402
from threadwise.reports.service import render  # noqa: E402
from threadwise.settings import load_settings  # noqa: E402
from threadwise.wiring import Threadwise  # noqa: E402

SPACES = ("ATLAS", "HR", "OPS", "SALES", "DEV")
GAPS_EN = (
    "parental leave",
    "the Christmas party budget",
    "company cars",
    "the bike leasing offer",
    "home office equipment",
    "the travel expense limit",
    "the VPN on Linux",
    "the staging database password",
    "the on-call bonus",
    "the hiring freeze",
    "the office parking",
    "the referral bonus",
    "the laptop refresh cycle",
    "the training budget",
    "the guest Wi-Fi",
    "the release calendar for 2027",
    "the SSO migration",
    "the new expense tool",
    "the dental insurance",
    "the sabbatical rules",
)
GAPS_DE = (
    "Elternzeit",
    "das Budget für Weihnachtsfeiern",
    "Dienstwagen",
    "Jobrad",
    "Homeoffice-Ausstattung",
    "Reisekostenpauschale",
    "Betriebsrente",
    "Sonderurlaub bei Umzug",
    "Überstundenausgleich",
    "Firmenhandy",
)
PHRASINGS_EN = (
    "What is the policy on {}?",
    "Where can I find information about {}?",
    "Who do I ask about {}?",
    "How does {} work here?",
    "Is there a page about {}?",
    "What are the rules for {}?",
    "Can you tell me about {}?",
    "How do I apply for {}?",
    "What changed about {} this year?",
    "Do we have a guideline for {}?",
    "Where is {} documented?",
    "Any news on {}?",
)
PHRASINGS_DE = (
    "Wie ist die Regelung für {}?",
    "Wo finde ich Informationen zu {}?",
    "Wen frage ich wegen {}?",
    "Gibt es eine Seite über {}?",
    "Wie beantrage ich {}?",
    "Was gilt für {}?",
)
ANSWERED = (
    "What is the escalation phone number?",
    "Who is paged for a SEV2 incident?",
    "How many vacation days do I get?",
    "Wie viele Urlaubstage habe ich?",
    "Which BIOS does the T14 need?",
    "How do I set up my development machine?",
    "When is the 4.2 release?",
    "What is Alice's action item?",
)
COMMENTS = ("outdated", "wrong page", "This number changed last year", "Das stimmt nicht mehr", "")
NOTE = "Another source says otherwise (last modified 2021-03-01, older than the first, of 2024-05-02):"


def _pages(rng: random.Random, now: datetime) -> list[dict[str, str]]:
    return [
        {
            "page_id": str(100000 + n),
            "title": f"Page {n} of {SPACES[n % len(SPACES)]}",
            "url": f"https://wiki.example.com/spaces/{SPACES[n % len(SPACES)]}/pages/{100000 + n}",
            "space": SPACES[n % len(SPACES)],
            "last_modified": (now - timedelta(days=rng.randint(1, 5 * 365))).isoformat(timespec="seconds"),
        }
        for n in range(500)
    ]


def _sources(rng: random.Random, pages: list[dict[str, str]]) -> list[dict[str, object]]:
    chosen = rng.sample(pages, 10)
    return [
        {
            "number": k,
            "evidence_id": f"{p['page_id']}:{k}",
            **p,
            "version": 3,
            "kind": "row" if k % 2 else "passage",
            "position": k,
            "text": "Row 3 in Table 1: Severity is SEV2, and First response within is 1 hour. " * 4,
            "context_text": f"{p['title']} / Policies / "
            + "The on-call engineer answers within an hour. " * 12,
            "heading": "Policies",
            "label": p["title"],
            "scores": {"final": 0.5 / k, "lexical": 3.2, "lexical_rank": k, "dense": 0.81, "dense_rank": k},
        }
        for k, p in enumerate(chosen, start=1)
    ]


def _question(rng: random.Random) -> tuple[str, bool]:
    """(question, whether the wiki lacks it)."""
    if rng.random() < 0.25:
        if rng.random() < 0.7:
            return rng.choice(PHRASINGS_EN).format(rng.choice(GAPS_EN)), True
        return rng.choice(PHRASINGS_DE).format(rng.choice(GAPS_DE)), True
    return rng.choice(ANSWERED), False


def seed(sessions, turns: int, days: int, now: datetime) -> None:  # type: ignore[no-untyped-def]
    """`turns` turns in threads of three, in one transaction of the store's own rows (ConversationStore's
    add_turn commits each one: 10,000 of them took minutes, which says nothing about the report)."""
    rng = random.Random(31)
    pages = _pages(rng, now)
    trace = {
        "retrieval": {"lexical": [{"evidence_id": f"x:{k}", "score": 1.0} for k in range(20)]},
        "llm_calls": [],
    }
    with sessions() as s, s.begin():
        conversation = None
        for n in range(turns):
            when = now - timedelta(seconds=rng.randint(60, days * 86400 - 60))
            if n % 3 == 0:
                conversation = ConversationRow(
                    platform="slack",
                    workspace="T0",
                    channel=f"C{n % 7}",
                    thread=f"{1_700_000_000 + n}.000100",
                    started_by=f"U{n % 97}",
                    created_at=when,
                )
                s.add(conversation)
                s.flush()
            assert conversation is not None
            question, gap = _question(rng)
            sources = _sources(rng, pages)
            cited = [] if gap else [1, 2] if rng.random() < 0.5 else [1]
            answer = "I couldn't find this in the synced pages." if gap else "Row 3: SEV2, 1 hour [Source 1]"
            if not gap and rng.random() < 0.02:
                answer = f"SEV2: 1 hour [Source 1] {NOTE} SEV2: 4 hours [Source 2]"
                cited = [1, 2]
            turn = TurnRow(
                conversation_id=conversation.id,
                asked_by=f"U{n % 97}",
                question=question,
                completed_question=question,
                answer=answer,
                not_found=gap,
                error=None,
                sources=sources,
                cited=cited,
                follow_ups=[],
                trace=trace,
                timings={"total": 900.0},
                config={"answerer": "extractive"},
                created_at=when,
            )
            s.add(turn)
            s.flush()
            if rng.random() < 0.1:
                s.add(
                    FeedbackRow(
                        turn_id=turn.id,
                        user=f"U{(n + 1) % 97}",
                        vote="down",
                        comment=rng.choice(COMMENTS) or None,
                    )
                )
                if not gap and rng.random() < 0.3:
                    share = rng.random()
                    shares = [(sources[0]["page_id"], share), (sources[1]["page_id"], 1 - share)]
                    result = {
                        "degenerate": False,
                        "pages": [{"page_id": p, "page_title": "", "url": "", "share": v} for p, v in shares],
                        "clusters": [],
                    }
                    s.add(ExplanationRow(turn_id=turn.id, result=result))
            elif rng.random() < 0.2:
                s.add(FeedbackRow(turn_id=turn.id, user=f"U{(n + 1) % 97}", vote="up"))


def _report(app: Threadwise, since: datetime, now: datetime) -> tuple[Report, dict[str, str], list[float]]:
    """The report as the CLI builds it, and (read, group + build, render) seconds."""
    start = time.perf_counter()
    turns = read_turns(app.sessions, since=since)
    read = time.perf_counter()
    options = Options(since=since, until=now, now=now, stale_after_days=app.settings.stale_after_days)
    report = build_report(turns, embed=app.similarity_embedder.embed, options=options)
    built = time.perf_counter()
    texts = {fmt: render(report, fmt) for fmt in ("md", "html", "json")}
    return report, texts, [read - start, built - read, time.perf_counter() - built]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument(
        "--runs", type=int, default=3, help="timed reports (a first one embeds, later ones reuse nothing)"
    )
    parser.add_argument("--out", type=Path, help="also write the report in each format here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = Threadwise(settings=load_settings(env={}, data_dir=Path(tmp)))
        now = datetime.now(UTC)
        start = time.perf_counter()
        seed(app.sessions, args.turns, args.days, now)
        print(f"seeded {args.turns} turns in {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        app.similarity_embedder.warm_up()
        print(f"loaded {app.similarity_embedder.name} in {time.perf_counter() - start:.1f} s (not counted)")
        since = now - timedelta(days=args.days)
        runs = [_report(app, since, now) for _ in range(args.runs)]
        report, texts, _times = runs[-1]
        tracemalloc.start()
        _report(app, since, now)
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        t = report.totals
        print(
            f"window {args.days} days: {t.questions} questions, {t.not_found} not found, {t.down_votes} voted "
            f"down, {t.unanswered} unanswered in {len(report.unanswered)} topics; "
            f"{len(report.misleading_pages)} misleading, {len(report.stale_pages)} stale, "
            f"{len(report.conflicts)} conflicts"
        )
        for k, name in enumerate(("read rows", "group + build", "render md, html, json")):
            print(f"{name:22} " + "  ".join(f"{times[k]:6.2f}" for _r, _t, times in runs) + " s")
        totals = sorted(sum(times) for _r, _t, times in runs)
        print(
            f"{'total':22} "
            + "  ".join(f"{sum(times):6.2f}" for _r, _t, times in runs)
            + f" s  (median {totals[len(totals) // 2]:.2f} s; goal: under 10 s)"
        )
        print(f"sizes: {', '.join(f'{k} {len(v) // 1024} KiB' for k, v in texts.items())}")
        print(
            f"peak Python memory while building the report {peak / 2**20:.0f} MiB (tracemalloc, one more run); "
            f"process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (the model included)"
        )
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            for fmt, text in texts.items():
                (args.out / f"report.{fmt}").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
