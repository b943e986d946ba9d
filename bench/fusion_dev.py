"""Measure fusion choices fast: keep every dev-split question's lexical, dense and page rankings once, then fuse
them under each choice and print P@1, Hit@10 and MRR@10 per setting (completed/conversational x EN/DE).

The rankings come from the eval index that `threadwise eval` builds (reuse one with THREADWISE_DATA_DIR); the
fusion is `core.retrieve.retriever.fuse`, the function the retriever runs. `language-gated` is the rule that the
ranking heads replaced: the dense ranking's best hit kept only when it is in another language than the question.

    THREADWISE_DATA_DIR=DIR PYTHONPATH=. .venv/bin/python bench/fusion_dev.py --cache /tmp/rankings.pkl
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
from pathlib import Path
from typing import Any

from threadwise.core.language import evidence_is_german, is_german
from threadwise.core.retrieve.retriever import RetrievalOptions, fuse, keep_ranking_heads
from threadwise.core.types import PastTurn
from threadwise.evaluation.dataset import rank_of_gold, retrieval_scores

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_dev import dev_queries  # noqa: E402  (the dev split's questions, asked as eval asks them)


def rankings_all(cache: Path) -> dict[str, list[dict[str, Any]]]:
    """Every question of the four settings with its three rankings, the pages and languages of their evidences."""
    opts = RetrievalOptions()
    out: dict[str, list[dict[str, Any]]] = {}
    for name, app, index, turn, query, history in dev_queries():
        lexical = index.search_lexical(query, opts.candidates)
        dense = index.search_dense(app.embedder.embed_query(query), opts.candidates)
        pool = {s.evidence.id: s.evidence for s in [*lexical, *dense]}
        out.setdefault(name, []).append(
            {
                "query": query,
                "gold": turn.gold_pages,
                "lexical": [s.evidence.id for s in lexical],
                "dense": [s.evidence.id for s in dense],
                "pages": [pid for pid, _ in index.search_pages(query, opts.page_candidates)],
                "page_of": {eid: e.page_id for eid, e in pool.items()},
                "german": {eid: evidence_is_german(e) for eid, e in pool.items()},
            }
        )
        history.append(PastTurn(turn.question, query, "", ()))
    cache.write_bytes(pickle.dumps(out))
    return out


def fused_pages(row: dict[str, Any], opts: RetrievalOptions, *, gated: bool = False) -> list[str]:
    """The pages of the fused ranking's evidences; `gated`: the replaced language-gated rule instead of heads."""
    if not gated:
        fused = fuse(row["lexical"], row["dense"], row["pages"], row["page_of"], opts)
    else:
        fused = fuse(
            row["lexical"], row["dense"], row["pages"], row["page_of"], dataclasses.replace(opts, head_rank=0)
        )
        dense = row["dense"]
        if dense and row["german"][dense[0]] != is_german(row["query"]):
            fused = keep_ranking_heads(fused, [dense], row["page_of"], rank=2, top_k=opts.top_k)
    return [row["page_of"][eid] for eid, _ in fused]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True)
    args = parser.parse_args()
    data = pickle.loads(args.cache.read_bytes()) if args.cache.exists() else rankings_all(args.cache)
    base = RetrievalOptions()
    choices: list[tuple[str, RetrievalOptions, bool]] = [
        ("no heads", dataclasses.replace(base, head_rank=0), False),
        ("language-gated (replaced)", base, True),
    ]
    for rank in (2, 3, 4):
        for names in (("dense",), ("lexical", "dense")):
            for unseen in (False, True):
                label = f"heads {'+'.join(names)} at {rank}{' unseen' if unseen else ''}"
                opts = dataclasses.replace(
                    base, head_rank=rank, head_rankings=names, heads_unseen_only=unseen
                )
                choices.append((label, opts, False))
    print(f"{'choice':<30}" + "".join(f"{name:>26}" for name in data))
    for label, opts, gated in choices:
        cells = []
        for rows in data.values():
            ranks = [rank_of_gold(fused_pages(row, opts, gated=gated), row["gold"]) for row in rows]
            s = retrieval_scores(ranks)
            cells.append(f"{s.p_at_1:.3f}/{s.hit_at_10:.3f}/{s.mrr_at_10:.3f}")
        print(f"{label:<30}" + "".join(f"{c:>26}" for c in cells))
    print("(each cell: P@1 / Hit@10 / MRR@10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
