"""Tune the extractive answerer fast: retrieve every dev-split question once, then answer from the saved hits.

`threadwise eval --answers` re-runs retrieval and completion on each call; while the answerer changes, both stay
the same. This script keeps the top evidences of every question of the four settings (completed/conversational
x EN/DE) in one pickle, then answers them all and prints the answer metrics per setting (and, with --dump, one
JSON line per question to read the misses); --ceiling prints the recall of the best window an oracle could quote, and of the best set of whole
candidate units it could pick greedily (the answerer's own candidates; all units of the top 10);
--explain also prints counterfactual and naive attribution accuracy of the completed questions, as `eval --explain`;
--perturb EPS answers each question again from evidences fused anew after moving the dense scores by up to ±EPS at
random, and prints the share of answers that changed (citations compared by evidence id).
The answer numbers in the README come from `threadwise eval`; the ceilings from here.

    THREADWISE_DATA_DIR=DIR PYTHONPATH=. .venv/bin/python bench/answer_dev.py --cache /tmp/hits.pkl [--dump out.jsonl]
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from threadwise.core.answer.extractive import ExtractiveAnswerer, weights
from threadwise.core.answer.spans import candidate_spans
from threadwise.core.retrieve.tokenize import tokenize
from threadwise.core.types import PastTurn
from threadwise.evaluation.answer_metrics import answer_tokens, score_answers, token_f1, token_recall
from threadwise.evaluation.dataset import load_conversations, rank_of_gold

SETTINGS = [("completed", "en"), ("completed", "de"), ("conversational", "en"), ("conversational", "de")]
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "confquestions"  # beside the checkout


def dev_queries(limit: int | None = None) -> Iterator[tuple[str, Any, Any, Any, str, list[PastTurn]]]:
    """Every question of the four settings, in order: (setting, app, eval index, turn, query as retrieved,
    the conversation's history so far; the caller appends the turn to it). Completed questions are the gold
    completions; conversational ones are completed by the app's completer, as `eval` does."""
    from threadwise.connectors.files import load_pages
    from threadwise.evaluation.run import EvalConfig, build_eval_index
    from threadwise.settings import load_settings
    from threadwise.wiring import Threadwise

    app = Threadwise(settings=load_settings(config_file=None, data_dir=None))
    pages, _ = load_pages(SHARED / "documents")
    for questions, lang in SETTINGS:
        cfg = EvalConfig(docs=SHARED / "documents", qa=SHARED / "qa-dev.json", questions=questions, lang=lang)
        index, _ = build_eval_index(
            cfg, pages, embedder=app.embedder, data_dir=app.settings.data_dir, progress=lambda *a: None
        )
        for conversation in load_conversations(cfg.qa, lang)[:limit]:
            history: list[PastTurn] = []
            for turn in conversation:
                query = (
                    turn.completed
                    if questions == "completed"
                    else app.completer.complete(turn.question, history).question
                )
                yield f"{questions}-{lang}", app, index, turn, query, history


@dataclass
class RecordingSearch:
    """The eval index, keeping every evidence its lexical and dense searches returned."""

    index: Any
    seen: dict[str, Any] = field(default_factory=dict)

    def search_lexical(self, query: str, k: int, scope: Any = None) -> list[Any]:
        return self._keep(self.index.search_lexical(query, k, scope))

    def search_dense(self, vector: Any, k: int, scope: Any = None) -> list[Any]:
        return self._keep(self.index.search_dense(vector, k, scope))

    def search_pages(self, query: str, k: int, scope: Any = None) -> list[tuple[str, float]]:
        return list(self.index.search_pages(query, k, scope))

    def word_share(self, word: str) -> float:
        return self.index.word_share(word)

    def _keep(self, scored: list[Any]) -> list[Any]:
        self.seen.update((s.evidence.id, s.evidence) for s in scored)
        return scored


def retrieve_all(cache: Path, limit: int | None) -> dict[str, list[dict[str, Any]]]:
    """Every question of the four settings with its top evidences, from the eval index (built by `eval`)."""
    from threadwise.core.retrieve.retriever import Retriever

    out: dict[str, list[dict[str, Any]]] = {}
    for name, app, index, turn, query, history in dev_queries(limit):
        recording = RecordingSearch(index)
        retrieval = Retriever(index=recording, embedder=app.embedder).retrieve(query)
        evidences = retrieval.evidences
        out.setdefault(name, []).append(
            {
                "query": query,
                "gold": turn.answer,
                "source": turn.source,
                "evidences": evidences,
                "lexical": [h.evidence_id for h in retrieval.lexical],
                "dense": [(h.evidence_id, h.score) for h in retrieval.dense],
                "pages": [h.evidence_id for h in retrieval.pages],
                "pool": recording.seen,  # the rankings before fusion, to fuse again (--perturb)
            }
        )
        shown = tuple(dict.fromkeys(e.page_id for e in evidences[:3]))
        history.append(PastTurn(turn.question, query, "", shown))
    for name, rows in out.items():
        print(f"{name}: {len(rows)} questions", file=sys.stderr)
    cache.write_bytes(pickle.dumps(out))
    return out


def gold_pages(name: str) -> list[frozenset[str]]:
    """The gold pages of a setting's questions, in the order `dev_queries` asks them."""
    lang = name.rsplit("-", 1)[1]
    return [turn.gold_pages for conv in load_conversations(SHARED / "qa-dev.json", lang) for turn in conv]


def attribution(
    rows: list[dict[str, Any]], answers: list[Any], gold: list[frozenset[str]], answerer: Any
) -> str:
    """Counterfactual and naive attribution accuracy over the questions whose gold page was retrieved."""
    from threadwise.core.attribute.attribution import explain
    from threadwise.evaluation.attribution_metrics import explanation_accuracy, naive_accuracy

    ok = naive = n = 0
    for row, answer, pages in zip(rows, answers, gold, strict=True):
        if rank_of_gold([e.page_id for e in row["evidences"]], pages) is None:
            continue
        expl = explain(row["query"], answer, row["evidences"], answerer=answerer, embedder=answerer.embedder)
        ok += explanation_accuracy(expl, pages)
        naive += naive_accuracy(expl, pages)
        n += 1
    return f"attribution {ok / n:.3f}  naive {naive / n:.3f}  (n={n})" if n else "attribution n=0"


def ceiling(rows: list[dict[str, Any]], top: int, words: int) -> float:
    """Mean token recall of the best `words`-word window (in steps of 5 words) of the top evidences' units,
    chosen knowing the gold answer: what no extractive answer of that length can beat."""
    total = 0.0
    for row in rows:
        best = 0.0
        for evidence in row["evidences"][:top]:
            tokens = " ".join(s.text for s in candidate_spans(evidence, 0, max_words=10**6)).split()
            for start in range(0, max(1, len(tokens) - words + 1), 5):
                best = max(best, token_recall(" ".join(tokens[start : start + words]), row["gold"]))
        total += best
    return total / len(rows) if rows else 0.0


def cited_by_id(text: str, evidences: list[Any]) -> str:
    """The answer with each "[Source N]" replaced by its evidence's id, to compare answers over reordered sources."""
    return re.sub(r"\[Source (\d+)\]", lambda m: f"[{evidences[int(m.group(1)) - 1].id}]", text)


def perturbed(row: dict[str, Any], eps: float, rng: random.Random) -> list[Any]:
    """The top evidences fused again after moving each dense score (a cosine) by up to ±eps at random, as
    another embedding engine whose vectors differ a little would: near-tied dense ranks may swap."""
    from threadwise.core.retrieve.retriever import RetrievalOptions, fuse

    dense = sorted(
        ((eid, score + rng.uniform(-eps, eps)) for eid, score in row["dense"]), key=lambda p: -p[1]
    )
    pool = row["pool"]
    options = RetrievalOptions()
    fused = fuse(
        row["lexical"],
        [eid for eid, _ in dense],
        row["pages"],
        {eid: e.page_id for eid, e in pool.items()},
        options,
    )
    return [replace(pool[eid], score=score) for eid, score in fused[: options.top_k]]


def flip_rate(rows: list[dict[str, Any]], answers: list[Any], answerer: Any, eps: float, seeds: int) -> str:
    """Share of questions whose answer changes under `seeds` random perturbations of the scores by ±eps, and
    how many of them had their evidences reordered at all."""
    changed = reordered = 0
    for k, (row, answer) in enumerate(zip(rows, answers, strict=True)):
        rng = random.Random(k)
        base = cited_by_id(answer.text, row["evidences"])
        flips = swaps = False
        for _ in range(seeds):
            evidences = perturbed(row, eps, rng)
            swaps |= [e.id for e in evidences] != [e.id for e in row["evidences"]]
            flips |= cited_by_id(answerer.answer(row["query"], evidences).text, evidences) != base
        changed += flips
        reordered += swaps
    return f"perturbed by ±{eps:g}: {changed}/{len(rows)} answers changed ({reordered} reordered)"


def greedy_units(texts: list[str], gold: str, words: int, *, per_word: bool) -> float:
    """Recall of a set of whole units within `words` words, built greedily knowing the gold answer: each step
    adds the unit that raises recall most (`per_word`: most per word it costs) among those that still fit."""
    want = Counter(answer_tokens(gold))
    if not want:
        return 0.0
    units = [(Counter(answer_tokens(t)), len(t.split())) for t in texts]
    have: Counter[str] = Counter()
    used = found = 0
    left = [i for i, (_, size) in enumerate(units) if size]
    while True:
        best, best_value, best_gain = -1, 0.0, 0
        for i in left:
            tokens, size = units[i]
            if used + size > words:
                continue
            gain = sum(min(n, want[t] - have[t]) for t, n in tokens.items() if want[t] > have[t])
            value = gain / size if per_word else gain - size / 1000  # fewer words on a tie
            if gain and value > best_value:
                best, best_value, best_gain = i, value, gain
        if best < 0:
            return found / sum(want.values())
        have.update(units[best][0])
        found += best_gain
        used += units[best][1]
        left.remove(best)


def unit_ceiling(rows: list[dict[str, Any]], answerer: ExtractiveAnswerer | None, words: int) -> float:
    """Mean token recall of the best set of whole candidate units within `words` words, chosen knowing the gold
    answer (the better of two greedy orders): the answerer's own candidates (`answerer`), or the units of all
    the top 10 evidences (None)."""
    total = 0.0
    for row in rows:
        evidences = row["evidences"]
        if answerer is None:
            spans = [s for k, e in enumerate(evidences[:10]) for s in candidate_spans(e, k, max_words=45)]
        else:
            spans = answerer._candidates(weights(tokenize(row["query"])), evidences)
        texts = [s.text for s in spans]
        total += max(greedy_units(texts, row["gold"], words, per_word=p) for p in (False, True))
    return total / len(rows) if rows else 0.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--only", help="one setting, e.g. completed-en")
    parser.add_argument("--ceiling", action="store_true", help="print the oracle windows' recall and stop")
    parser.add_argument(
        "--explain", action="store_true", help="attribution accuracy of the completed questions"
    )
    parser.add_argument("--perturb", type=float, help="move the dense scores by up to ±this, fuse again")
    parser.add_argument("--similarity", default="use", help="the answerer's embedder (make_embedder's names)")
    parser.add_argument("--seeds", type=int, default=3, help="perturbations per question")
    parser.add_argument(
        "--set", action="append", default=[], help="an answerer parameter, e.g. budget_words=40"
    )
    args = parser.parse_args()
    hits = (
        pickle.loads(args.cache.read_bytes()) if args.cache.exists() else retrieve_all(args.cache, args.limit)
    )
    if args.ceiling:
        own = ExtractiveAnswerer(embedder=None)  # type: ignore[arg-type]  # only its candidate units
        for name, rows in hits.items():
            windows = " ".join(f"top{k}/{n}w {ceiling(rows, k, n):.3f}" for k, n in ((3, 50), (10, 50)))
            units = f"units answerer/50w {unit_ceiling(rows, own, 50):.3f} top10/50w {unit_ceiling(rows, None, 50):.3f}"
            print(name, windows, units)
        return 0
    from threadwise.models.embedders import make_embedder

    embedder = make_embedder(args.similarity)
    embedder.warm_up()
    params = {k: float(v) if "." in v else int(v) for k, v in (p.split("=", 1) for p in args.set)}
    answerer = ExtractiveAnswerer(embedder=embedder, **params)  # type: ignore[arg-type]
    dump = args.dump.open("w") if args.dump else None
    for name, rows in hits.items():
        if args.only and name != args.only:
            continue
        predictions, ms, answers = [], [], []
        for row in rows:
            t = time.perf_counter()
            answer = answerer.answer(row["query"], row["evidences"])
            ms.append((time.perf_counter() - t) * 1000)
            predictions.append(answer.text)
            answers.append(answer)
            if dump:
                record = {
                    "setting": name,
                    "query": row["query"],
                    "gold": row["gold"],
                    "answer": answer.text,
                    "recall": round(token_recall(answer.text, row["gold"]), 3),
                    "f1": round(token_f1(answer.text, row["gold"]), 3),
                    "source": row["source"],
                }
                dump.write(json.dumps(record, ensure_ascii=False) + "\n")
        s = score_answers(predictions, [r["gold"] for r in rows])
        print(
            f"{name:<18} recall {s.token_recall:.3f}  f1 {s.token_f1:.3f}  median words {s.median_words:.0f}  "
            f"not found {s.not_found_rate:.3f}  ms p50 {statistics.median(ms):.0f}"
        )
        if args.perturb:
            print(f"{name:<18} {flip_rate(rows, answers, answerer, args.perturb, args.seeds)}")
        if args.explain and name.startswith("completed"):
            print(f"{name:<18} {attribution(rows, answers, gold_pages(name), answerer)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
