"""Runs a benchmark: index a folder of pages (cached), then ask every question through the real pipeline."""

from __future__ import annotations

import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from threadwise.core.complete.conversation import conversation_history
from threadwise.core.ingest.contextualize import ContextParts
from threadwise.core.pipeline import Pipeline, TurnResult
from threadwise.core.protocols import Answerer, Embedder, QuestionCompleter, Reranker
from threadwise.core.retrieve.retriever import Mode, RetrievalOptions, Retriever
from threadwise.core.types import Answer, Evidence, Page, PastTurn
from threadwise.evaluation.dataset import QATurn, load_conversations, rank_of_gold, retrieval_scores
from threadwise.index.indexer import IndexReport, index_pages
from threadwise.index.store import EvidenceIndex

Progress = Callable[[str, int, int], None]  # (stage: "index" or "questions", done, total)


@dataclass(frozen=True)
class EvalConfig:
    docs: Path
    qa: Path
    questions: str = "completed"  # completed | conversational
    lang: str = "en"
    context: str = "ALL"  # NONE, TTL, HDR, BEF, AFT, ALL or a comma list
    linearizer: str = "verbalized"
    tables: str = "both"  # both | rows | tables
    mode: str = "hybrid"  # hybrid | lexical | dense
    answers: bool = False
    explain: bool = False
    limit: int | None = None  # first N conversations (quick runs)


def collection_name(cfg: EvalConfig, embedder: Embedder) -> str:
    """One eval collection per indexing configuration, so switching ablations never re-embeds twice."""
    raw = f"eval-{embedder.name}-{cfg.context}-{cfg.linearizer}-{cfg.tables}"
    return re.sub(r"[^a-zA-Z0-9_-]+", "_", raw)[:60]


def build_eval_index(
    cfg: EvalConfig, pages: Sequence[Page], *, embedder: Embedder, data_dir: Path, progress: Progress
) -> tuple[EvidenceIndex, IndexReport]:
    """Index the pages into the eval collection; unchanged pages are skipped (nothing embedded)."""
    index = EvidenceIndex(
        directory=data_dir / "eval-index", embedder=embedder, collection=collection_name(cfg, embedder)
    )
    report = index_pages(
        index,
        pages,
        parts=ContextParts.from_name(cfg.context),
        linearizer=cfg.linearizer,
        index_tables=cfg.tables in ("both", "tables"),
        index_rows=cfg.tables in ("both", "rows"),
        progress=lambda done, total: progress("index", done, total),
    )
    return index, report


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class NoAnswer:
    """The answerer of a retrieval-only run: the pipeline answers nothing, and history remembers no answers."""

    name = "none"
    deterministic = True

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        return Answer(text="", answerer=self.name)


def eval_pipeline(
    cfg: EvalConfig,
    index: EvidenceIndex,
    *,
    embedder: Embedder,
    completer: QuestionCompleter,
    answerer: Answerer | None,
    reranker: Reranker | None,
    top_k: int,
) -> Pipeline:
    """The `Pipeline` that `ask`, `chat` and the bots use, over the eval index with the run's retrieval mode."""
    options = RetrievalOptions(mode=cast(Mode, cfg.mode), top_k=top_k)
    retriever = Retriever(index=index, embedder=embedder, reranker=reranker, options=options)
    answering = answerer is not None and (cfg.answers or cfg.explain)
    return Pipeline(
        completer=completer,
        retriever=retriever,
        answerer=answerer if answering and answerer is not None else NoAnswer(),
    )


def ask_turns(
    pipeline: Pipeline, conversation: Sequence[QATurn], questions: str
) -> Iterator[tuple[QATurn, TurnResult]]:
    """Each turn of `conversation` asked as `eval` asks it: its completed question alone (`questions` =
    "completed"), or its question with the thread so far, every answered turn remembered."""
    history: list[PastTurn] = []
    for turn in conversation:
        if questions == "completed":
            result = pipeline.ask(turn.completed)
        else:
            result = pipeline.ask(turn.question, conversation_history(history))
        history.append(result.as_past_turn())
        yield turn, result


def run_eval(
    cfg: EvalConfig,
    pages: Sequence[Page],
    *,
    embedder: Embedder,
    completer: QuestionCompleter,
    answerer: Answerer | None,
    data_dir: Path,
    similarity_embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    judge: Any = None,
    top_k: int = RetrievalOptions.top_k,
    progress: Progress = lambda _stage, _done, _total: None,
) -> dict[str, Any]:
    """Evaluate retrieval (and optionally answers and explanations); returns the JSON-able report.

    Every question goes through `Pipeline.ask`. Conversational questions are asked as written, with the
    conversation so far (built as the conversation service builds it); completed ones are the gold
    completions, asked with no history, so every completer passes them through unchanged.
    `similarity_embedder` compares texts in Explain (default: `embedder`).
    """
    index, indexed = build_eval_index(cfg, pages, embedder=embedder, data_dir=data_dir, progress=progress)
    pipeline = eval_pipeline(
        cfg, index, embedder=embedder, completer=completer, answerer=answerer, reranker=reranker, top_k=top_k
    )
    answering = not isinstance(pipeline.answerer, NoAnswer)
    conversations = load_conversations(cfg.qa, cfg.lang)[: cfg.limit]
    total_questions = sum(len(c) for c in conversations)
    progress("questions", 0, total_questions)  # starts the clock of the questions' rate

    ranks: list[int | None] = []
    rows: list[tuple[QATurn, int | None]] = []
    query_ms: list[float] = []
    answer_ms: list[float] = []
    predictions: list[tuple[QATurn, str]] = []
    levels: list[tuple[str, int | None]] = []  # answerable questions: (confidence level, rank of gold)
    explain_rows: list[dict[str, Any]] = []
    asked = 0
    for conversation in conversations:
        for turn, result in ask_turns(pipeline, conversation, cfg.questions):
            query_ms.append(result.timings_ms["retrieval"])
            rank = rank_of_gold([e.page_id for e in result.sources], turn.gold_pages)
            if turn.answerable:  # a question without gold pages has no rank to score
                ranks.append(rank)
                rows.append((turn, rank))
            if not answering:
                continue
            answer_ms.append(result.timings_ms["answer"])
            predictions.append((turn, result.answer.text))
            if turn.answerable:
                levels.append((result.confidence.level if result.confidence else "not found", rank))
            if cfg.explain and rank is not None:
                explain_rows.append(
                    _explain_one(
                        result,
                        turn,
                        answerer=pipeline.answerer,
                        embedder=similarity_embedder or embedder,
                        index=index,
                    )
                )
        asked += len(conversation)
        progress("questions", asked, total_questions)

    scores = retrieval_scores(ranks)
    report: dict[str, Any] = {
        "questions": total_questions,
        "answerable_questions": scores.questions,
        "p_at_1": round(scores.p_at_1, 4),
        "hit_at_10": round(scores.hit_at_10, 4),
        "mrr_at_10": round(scores.mrr_at_10, 4),
        "by_source": _p1_by(rows, lambda t: t.source),
        "by_type": _p1_by(rows, lambda t: t.qtype),
        "by_turn": _p1_by(rows, lambda t: str(min(t.turn, 6)) if t.turn < 6 else "6+"),
        "index_seconds": round(indexed.seconds, 2),
        "pages": len(pages),
        "pages_embedded": indexed.embedded,
        "texts_embedded": indexed.vectors.embedded,
        "texts_reused": indexed.vectors.cached + indexed.vectors.shared,
        "page_failures": [
            {"page_id": f.page_id, "title": f.title, "reason": f.reason} for f in indexed.failures
        ],
        "evidences": index.count(),
        "query_ms_p50": round(_percentile(query_ms, 0.5), 1),
        "query_ms_p95": round(_percentile(query_ms, 0.95), 1),
        "config": {
            "questions": cfg.questions,
            "lang": cfg.lang,
            "context": cfg.context,
            "linearizer": cfg.linearizer,
            "tables": cfg.tables,
            "mode": cfg.mode,
            "embedder": embedder.name,
            "similarity_embedder": (similarity_embedder or embedder).name,
            "reranker": getattr(reranker, "name", None),
            "completer": getattr(completer, "name", type(completer).__name__),
            "answerer": pipeline.answerer.name if answering else None,
        },
    }
    if predictions:
        report.update(_answer_report(predictions, answer_ms))
        report["by_confidence"] = by_confidence(levels)
        if judge is not None:
            report.update(_judge_report(judge, [r for r in predictions if r[0].answerable]))
    if cfg.explain:
        report.update(_explain_report(explain_rows))
    return report


def _p1_by(rows: Sequence[tuple[QATurn, int | None]], key: Callable[[QATurn], str]) -> dict[str, float]:
    groups: dict[str, list[int | None]] = defaultdict(list)
    for turn, rank in rows:
        groups[key(turn) or "?"].append(rank)
    return {k: round(retrieval_scores(v).p_at_1, 4) for k, v in sorted(groups.items())}


def by_confidence(levels: Sequence[tuple[str, int | None]]) -> dict[str, dict[str, float | int]]:
    """Per confidence level (high, medium, low, and "not found"): the number of questions and their P@1."""
    groups: dict[str, list[int | None]] = defaultdict(list)
    for level, rank in levels:
        groups[level].append(rank)
    order = ("high", "medium", "low", "not found")
    return {
        level: {"questions": len(groups[level]), "p_at_1": round(retrieval_scores(groups[level]).p_at_1, 4)}
        for level in order
        if groups[level]
    }


def _answer_report(predictions: Sequence[tuple[QATurn, str]], answer_ms: Sequence[float]) -> dict[str, Any]:
    """Token recall and F1 against the gold answers of the answerable questions; `not_found_rate` over all
    questions (for answerable ones the share wrongly not found, for a set without gold pages the share rightly
    so), split by answerability when a set holds both and by `kind` when its unanswerable questions say which."""
    from threadwise.core.answer.citations import is_not_found
    from threadwise.evaluation.answer_metrics import score_answers

    def rate(rows: Sequence[tuple[QATurn, str]]) -> float:
        return round(sum(is_not_found(p) for _, p in rows) / len(rows), 4)

    answerable = [(t, p) for t, p in predictions if t.answerable]
    unanswerable = [(t, p) for t, p in predictions if not t.answerable]
    report: dict[str, Any] = {}
    if answerable:
        s = score_answers([p for _, p in answerable], [t.answer for t, _ in answerable])
        report |= {
            "token_recall": round(s.token_recall, 4),
            "token_f1": round(s.token_f1, 4),
            "median_words": s.median_words,
        }
    report["not_found_rate"] = rate(predictions)
    if answerable and unanswerable:
        report["not_found_rate_answerable"] = rate(answerable)
        report["not_found_rate_unanswerable"] = rate(unanswerable)
    kinds = sorted({t.kind for t, _ in unanswerable if t.kind})
    if kinds:
        report["not_found_by_kind"] = {k: rate([r for r in unanswerable if r[0].kind == k]) for k in kinds}
    report["answer_ms_p50"] = round(_percentile(answer_ms, 0.5), 1)
    report["answer_ms_p95"] = round(_percentile(answer_ms, 0.95), 1)
    return report


def _judge_report(judge: Any, predictions: Sequence[tuple[QATurn, str]]) -> dict[str, Any]:
    """The paper's LLM judge (0 / 0.5 / 1 answer relevance against the gold answer), when an LLM is configured."""
    scores = [judge.judge(t.completed, t.answer, p).score for t, p in predictions]
    valid = [s for s in scores if s is not None]
    return {
        "answer_relevance": round(statistics.mean(valid), 4) if valid else None,
        "judge_unparsed": len(scores) - len(valid),
    }


def _explain_one(
    result: TurnResult,
    turn: QATurn,
    *,
    answerer: Answerer,
    embedder: Embedder,
    index: EvidenceIndex,
) -> dict[str, Any]:
    from threadwise.core.attribute.attribution import explain
    from threadwise.evaluation.attribution_metrics import explanation_accuracy, naive_accuracy

    t = time.perf_counter()
    expl = explain(
        result.completion.question,
        result.answer,
        result.sources,
        answerer=answerer,
        embedder=embedder,
        evidence_embeddings=index.vectors_for(embedder, result.sources),
        rankings_agree=result.rankings_agree,
    )
    ms = (time.perf_counter() - t) * 1000
    return {
        "source": turn.source,
        "ok": explanation_accuracy(expl, turn.gold_pages),
        "naive_ok": naive_accuracy(expl, turn.gold_pages),
        "ms": ms,
        "calls": expl.answer_calls,
    }


def _explain_report(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    by_source: dict[str, dict[str, float]] = {}
    for source in sorted({r["source"] for r in rows}):
        part = [r for r in rows if r["source"] == source]
        by_source[source] = {
            "n": len(part),
            "attribution_accuracy": round(sum(r["ok"] for r in part) / len(part), 4),
            "naive_accuracy": round(sum(r["naive_ok"] for r in part) / len(part), 4),
        }
    ms = [r["ms"] for r in rows]
    return {
        "attribution_accuracy": round(sum(r["ok"] for r in rows) / n, 4) if n else 0.0,
        "naive_accuracy": round(sum(r["naive_ok"] for r in rows) / n, 4) if n else 0.0,
        "attribution_n": n,
        "attribution_by_source": by_source,
        "explain_ms_p50": round(_percentile(ms, 0.5), 1),
        "explain_ms_p95": round(_percentile(ms, 0.95), 1),
        "explain_calls_mean": round(statistics.mean(r["calls"] for r in rows), 2) if rows else 0.0,
    }
