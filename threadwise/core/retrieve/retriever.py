"""Hybrid retrieval: lexical (BM25) and dense top-k, fused by reciprocal rank fusion, optionally re-ranked.

Every stage's ranked list is kept with its scores: users can open the trace and see why an evidence came first.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from threadwise.core.protocols import Embedder, EvidenceSearch, Reranker
from threadwise.core.types import Evidence, Hit, Scope, ScoredEvidence

Mode = Literal["hybrid", "lexical", "dense"]


@dataclass(frozen=True)
class RetrievalOptions:
    mode: Mode = "hybrid"
    candidates: int = 50  # top-k taken from each of lexical and dense
    top_k: int = 10  # evidences handed to the answerer
    rrf_k: int = 60
    # Weights of the rankings in the fusion, measured on the ConfQuestions dev split (see README): the offline
    # dense model is weaker than BM25 on English but carries German questions over English pages; the page-level
    # ranking lets evidences of the page the question is about win over look-alikes elsewhere.
    lexical_weight: float = 1.0
    # E5: P@1 summed over EN/DE x completed/conversational is best at 0.3 (3.09; 0.45: 3.07, 0.6: 3.07, 0.8: 3.03)
    dense_weight: float = 0.3
    page_weight: float = 2.0
    page_candidates: int = 20
    rerank_depth: int = 30  # fused candidates the cross-encoder re-scores, when one is configured
    # Rankings that disagree: RRF lets two rankings that agree outvote a third that is sure, so a ranking's best
    # hit can miss the top-k altogether. That is what happens across languages (BM25 cannot match a German
    # page to an English question, so the lexical and page rankings bury the page the dense model ranks first),
    # and, more rarely, within one. The best hit of each ranking named in `head_rankings` whose page is missing
    # from the top-k is placed at rank `head_rank`, with that page's next hit of the same ranking after it
    # (0: never). Rank 2 keeps P@1 as it was and puts both before the extractive answerer, which reads the top 4.
    # Dev split numbers in the README (bench/fusion_dev.py).
    head_rank: int = 2
    head_rankings: tuple[str, ...] = ("lexical", "dense")
    heads_unseen_only: bool = False


@dataclass(frozen=True)
class Retrieval:
    """The outcome of one retrieval, with each stage for the trace."""

    query: str
    evidences: list[Evidence]  # the final top-k, best first
    lexical: list[Hit] = field(default_factory=list)
    dense: list[Hit] = field(default_factory=list)
    fused: list[Hit] = field(default_factory=list)
    reranked: list[Hit] = field(default_factory=list)
    pages: list[Hit] = field(default_factory=list)  # page-level ranking (evidence_id holds the page id)
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def final(self) -> list[Hit]:
        return self.reranked or self.fused


def keep_ranking_heads(
    fused: list[tuple[str, float]],
    rankings: Sequence[Sequence[str]],
    page_of: Mapping[str, str],
    *,
    rank: int,
    top_k: int,
    hits: int = 2,
    unseen_only: bool = False,
    witnesses: Sequence[Sequence[str]] = (),
) -> list[tuple[str, float]]:
    """For each ranking whose best hit's page is missing from the fused top-k, move that page's best `hits`
    hits of that ranking to `rank` and after (see `RetrievalOptions.head_rank`). With `unseen_only`, only when
    none of the other rankings in `witnesses` (evidence or page ids) found that page at all."""
    for ranking in rankings:
        if not ranking or rank <= 0:
            continue
        page = page_of[ranking[0]]
        if page in {page_of[eid] for eid, _ in fused[:top_k]}:
            continue
        if unseen_only and page in {page_of.get(x, x) for w in witnesses if w is not ranking for x in w}:
            continue
        moving = [eid for eid in ranking if page_of[eid] == page][:hits]
        moved = [pair for pair in fused if pair[0] in moving]
        rest = [pair for pair in fused if pair[0] not in moving]
        at = min(rank - 1, len(rest))
        # scored evenly between their new neighbours, so that the scores stay in the ranking's order (the
        # answerer reads them: evidences whose scores nearly tie are alike to it)
        high = rest[at - 1][1] if at > 0 else moved[0][1]
        low = rest[at][1] if at < len(rest) else min(high, moved[-1][1])
        step = (high - low) / (len(moved) + 1)
        placed = [(eid, high - step * (j + 1)) for j, (eid, _) in enumerate(moved)]
        fused = [*rest[:at], *placed, *rest[at:]]
    return fused


def fuse(
    lexical: Sequence[str],
    dense: Sequence[str],
    page_ranking: Sequence[str],
    page_of: Mapping[str, str],
    options: RetrievalOptions,
) -> list[tuple[str, float]]:
    """The fused ranking of the evidence ids of the lexical and dense rankings (best first, with scores): RRF of
    the two, plus each evidence's page's rank in the page-level ranking, then the rankings' heads kept."""
    opts = options
    fused = reciprocal_rank_fusion(
        [lexical, dense], k=opts.rrf_k, weights=[opts.lexical_weight, opts.dense_weight]
    )
    if page_ranking and opts.page_weight > 0:
        # every candidate evidence inherits its page's rank, so the page ranking re-orders the pool
        page_rank = {pid: r for r, pid in enumerate(page_ranking, start=1)}
        bonus = {
            eid: opts.page_weight / (opts.rrf_k + page_rank[pid])
            for eid, pid in page_of.items()
            if pid in page_rank
        }
        fused = sorted(((eid, s + bonus.get(eid, 0.0)) for eid, s in fused), key=lambda kv: -kv[1])
    if opts.mode == "hybrid" and opts.head_rank > 0:
        named = {"lexical": lexical, "dense": dense}
        heads = [named[name] for name in opts.head_rankings]
        fused = keep_ranking_heads(
            fused,
            heads,
            page_of,
            rank=opts.head_rank,
            top_k=opts.top_k,
            unseen_only=opts.heads_unseen_only,
            witnesses=[lexical, dense, page_ranking],
        )
    return fused


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], *, k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """RRF (Cormack et al. 2009): score(d) = sum over rankings of w / (k + rank(d)). Ties keep first-seen order."""
    scores: dict[str, float] = {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[i]
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


def _hits(scored: Sequence[ScoredEvidence]) -> list[Hit]:
    return [Hit(s.evidence.id, s.score, i + 1) for i, s in enumerate(scored)]


class Retriever:
    """Runs the retrieval stages over an index (any `EvidenceSearch`: the Chroma + BM25 one in `threadwise.index`)."""

    def __init__(
        self,
        *,
        index: EvidenceSearch,
        embedder: Embedder,
        reranker: Reranker | None = None,
        options: RetrievalOptions | None = None,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.reranker = reranker
        self.options = options or RetrievalOptions()

    def word_share(self, word: str) -> float:
        """The share of the indexed pages that hold `word`."""
        return self.index.word_share(word)

    def retrieve(self, query: str, scope: Scope | None = None) -> Retrieval:
        """The evidences for `query` among those `scope` allows (None: everything indexed)."""
        opts = self.options
        if scope is not None and scope.nothing:
            return Retrieval(query=query, evidences=[], lexical=[], dense=[], fused=[], reranked=[], pages=[])
        timings: dict[str, float] = {}
        pool: dict[str, Evidence] = {}

        lexical: list[ScoredEvidence] = []
        dense: list[ScoredEvidence] = []
        if opts.mode in ("hybrid", "lexical"):
            t = time.perf_counter()
            lexical = self.index.search_lexical(query, opts.candidates, scope)
            timings["lexical"] = (time.perf_counter() - t) * 1000
        if opts.mode in ("hybrid", "dense"):
            t = time.perf_counter()
            vector = self.embedder.embed_query(query)
            timings["embed_query"] = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            dense = self.index.search_dense(vector, opts.candidates, scope)
            timings["dense"] = (time.perf_counter() - t) * 1000
        for s in [*lexical, *dense]:
            pool.setdefault(s.evidence.id, s.evidence)

        page_ranking: list[tuple[str, float]] = []
        if opts.mode == "hybrid" and opts.page_weight > 0:
            t = time.perf_counter()
            page_ranking = self.index.search_pages(query, opts.page_candidates, scope)
            timings["pages"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        fused_pairs = fuse(
            [s.evidence.id for s in lexical],
            [s.evidence.id for s in dense],
            [pid for pid, _s in page_ranking],
            {eid: e.page_id for eid, e in pool.items()},
            opts,
        )
        fused = [Hit(eid, score, i + 1) for i, (eid, score) in enumerate(fused_pairs)]
        timings["fuse"] = (time.perf_counter() - t) * 1000

        reranked: list[Hit] = []
        if self.reranker is not None and fused:
            t = time.perf_counter()
            head = fused[: opts.rerank_depth]
            scores = self.reranker.score(query, [pool[h.evidence_id].context_text for h in head])
            order = sorted(zip(head, scores, strict=True), key=lambda hs: -hs[1])
            reranked = [Hit(h.evidence_id, float(s), i + 1) for i, (h, s) in enumerate(order)]
            timings["rerank"] = (time.perf_counter() - t) * 1000

        final = reranked or fused
        return Retrieval(
            query=query,
            evidences=[replace(pool[h.evidence_id], score=h.score) for h in final[: opts.top_k]],
            lexical=_hits(lexical),
            dense=_hits(dense),
            fused=fused,
            reranked=reranked,
            pages=[Hit(pid, score, i + 1) for i, (pid, score) in enumerate(page_ranking)],
            timings_ms=timings,
        )
