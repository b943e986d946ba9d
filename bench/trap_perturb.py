"""How steady the trap questions' answers are when the dense scores move a little, as another E5 engine's would.

Indexes the sample wiki (once, in DATA_DIR), retrieves each trap question of tests/test_answer_traps.py keeping
its rankings, then fuses them again after moving every dense score by up to ±EPS at random (as
`bench/answer_dev.py --perturb` does for the dev split) and answers; prints, per trap that ever failed or
changed, how many of the draws failed it (what it must say, what its lead must not) and how many changed the
answer (citations compared by evidence id). Dev-split numbers and the choice of `tie_margin`: README.

    PYTHONPATH=. .venv/bin/python bench/trap_perturb.py --data-dir /tmp/traps --eps 3e-4 [--set tie_margin=1e-4]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

from answer_dev import RecordingSearch, cited_by_id, perturbed

from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages
from threadwise.core.answer.citations import CITATION
from threadwise.core.answer.extractive import ExtractiveAnswerer
from threadwise.core.retrieve.retriever import Retriever
from threadwise.index.indexer import index_pages
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.traps import TRAPS, Trap  # noqa: E402


def passes(trap: Trap, text: str) -> bool:
    """What tests/test_answer_traps.py asks of the answer."""
    match = CITATION.search(text)
    lead = (text[: match.start()] if match else text).lower()
    return all(m.lower() in text.lower() for m in trap.must) and not any(
        w.lower() in lead for w in trap.lead_must_not
    )


def trap_rows(app: Threadwise) -> list[dict[str, Any]]:
    """Each trap question with its top evidences and the rankings before fusion."""
    rows = []
    for entry in TRAPS:
        trap: Trap = entry.values[0] if hasattr(entry, "values") else entry  # type: ignore[union-attr,assignment]
        recording = RecordingSearch(app.index)
        retrieval = Retriever(index=recording, embedder=app.embedder).retrieve(trap.question)
        rows.append(
            {
                "trap": trap,
                "evidences": retrieval.evidences,
                "lexical": [h.evidence_id for h in retrieval.lexical],
                "dense": [(h.evidence_id, h.score) for h in retrieval.dense],
                "pages": [h.evidence_id for h in retrieval.pages],
                "pool": recording.seen,
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True, help="where the sample wiki's index is kept")
    parser.add_argument("--eps", type=float, default=1e-4)
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument(
        "--set", action="append", default=[], help="an answerer parameter, e.g. tie_margin=1e-4"
    )
    args = parser.parse_args()
    app = Threadwise(settings=load_settings(env={}, data_dir=args.data_dir))
    if not app.index.count():
        pages, _ = load_pages(SAMPLE_WIKI_DIR)
        index_pages(app.index, pages)
    params = {k: float(v) for k, v in (p.split("=", 1) for p in args.set)}
    answerer = ExtractiveAnswerer(embedder=app.similarity_embedder, **params)  # type: ignore[arg-type]
    failures = changes = 0
    for k, row in enumerate(trap_rows(app)):
        trap = row["trap"]
        base = answerer.answer(trap.question, row["evidences"]).text
        rng = random.Random(k)
        failed = changed = 0
        for _ in range(args.draws):
            evidences = perturbed(row, args.eps, rng)
            text = answerer.answer(trap.question, evidences).text
            failed += not passes(trap, text)
            changed += cited_by_id(text, evidences) != cited_by_id(base, row["evidences"])
        failures += failed
        changes += changed
        if failed or changed or not passes(trap, base):
            state = "passes" if passes(trap, base) else "FAILS "
            print(
                f"{state} unperturbed; failed {failed}/{args.draws}, changed {changed}/{args.draws}: {trap}"
            )
    print(f"±{args.eps:g}, {args.draws} draws per trap: {failures} failures, {changes} changed answers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
