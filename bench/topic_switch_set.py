"""A dev set of threads that switch topic, built at run time from the ConfQuestions dev split (issue 28).

Each thread is three turns of one dev conversation (A), then the first question of another conversation (B), as
asked (a first turn stands alone), then B's second turn, a follow-up of the new topic. B is the conversation
`offset` places further on whose first two turns share no gold page with A's three: a real switch. Beside it,
the fresh set asks B's first two turns in a new thread, the counterparts the switched turns are measured against.
Both are written in ConfQuestions' qa format, so `threadwise eval --qa FILE --questions conversational` reads them
(turn 4 is the switched question, turn 5 its follow-up; in the fresh set they are turns 1 and 2: `by_turn`).

    .venv/bin/python bench/topic_switch_set.py --out /tmp/switch.json --fresh /tmp/fresh.json

Nothing is copied into the repository: the files are derived from ../shared/confquestions when asked for.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "confquestions"  # beside the checkout
BEFORE = 3  # turns of the first topic before the switch
OFFSET = 12  # how far on the second conversation is taken from (about half the split: unrelated topics)


def _pages(turns: list[dict[str, Any]]) -> set[str]:
    return {url for t in turns for url in t["a_url"]}


def switch_threads(conversations: list[dict[str, Any]], *, offset: int = OFFSET) -> list[dict[str, Any]]:
    """One thread per conversation with at least `BEFORE` turns: A's first turns, then B's first two."""
    threads = []
    n = len(conversations)
    for i, a in enumerate(conversations):
        first = a["turns"][:BEFORE]
        if len(first) < BEFORE:
            continue
        for step in range(n - 1):
            b = conversations[(i + offset + step) % n]
            second = b["turns"][:2]
            if b is not a and len(second) == 2 and not _pages(first) & _pages(second):
                break
        else:
            continue
        turns = [dict(t, turn_id=str(k)) for k, t in enumerate([*first, *second], start=1)]
        threads.append({"conv_id": f"switch-{a['conv_id']}-{b['conv_id']}", "turns": turns})
    return threads


def fresh_threads(threads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The switched question and its follow-up of each thread, asked in a new thread (same order)."""
    return [
        {
            "conv_id": "fresh-" + t["conv_id"].partition("-")[2],
            "turns": [dict(u, turn_id=str(k)) for k, u in enumerate(t["turns"][BEFORE:], start=1)],
        }
        for t in threads
    ]


def load_dev(path: Path = SHARED / "qa-dev.json") -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--qa", type=Path, default=SHARED / "qa-dev.json")
    p.add_argument("--out", type=Path, required=True, help="the threads that switch topic")
    p.add_argument("--fresh", type=Path, help="the switched turns asked in new threads")
    args = p.parse_args()
    threads = switch_threads(load_dev(args.qa))
    args.out.write_text(json.dumps(threads, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.fresh:
        args.fresh.write_text(
            json.dumps(fresh_threads(threads), ensure_ascii=False, indent=1), encoding="utf-8"
        )
    print(f"{len(threads)} threads, {sum(len(t['turns']) for t in threads)} questions -> {args.out}")


if __name__ == "__main__":
    main()
