"""Counterfactual attribution (RAGonite, Algorithm 1): which sources *caused* an answer.

Idea: remove a group of redundant sources, answer again, and see how much the answer changes. A source
whose removal changes the answer a lot contributed a lot.

1. Cluster the evidences E by content (DBSCAN, cosine distance over embeddings of the raw evidence text,
   without its page context), so duplicates are removed together; noise points are clusters of their own.
2. For each cluster i and repeat j = 1..m: a_ij = answer(q, E with cluster i emptied);
   s_ij = cosine(embed(q + " " + a), embed(q + " " + a_ij)).
   "Emptied": the cluster's sources keep their places (number, page title, retrieval score) with no text,
   so only their content goes. Closing up the list instead (the paper's removal) moves every later source
   up a rank, and an answerer that weighs rank (the extractive one penalizes it; an LLM favours early
   sources) may then quote something else, or name other closest pages in a "not found" answer. Then
   removing a source the answer never used can change it more than removing the one it quoted, and that
   source takes the top share. Over the dev split's 277 explained conversational answers, keeping places
   moved the top share onto a gold page in 6 and off one in none (bench/attribution_dev.py,
   docs/benchmarks.md). Citations keep their numbers too.
3. Contribution c_i = 1 - mean_j s_ij; attribution = softmax(c_i / t) over the clusters whose removal changed
   the answer (c_i > 0); a cluster that changed nothing gets 0 (with the softmax over all clusters, six such
   clusters each showed 8% beside the one that mattered).
   Each evidence reports its cluster's share; the page roll-up splits a cluster's share evenly over its
   evidences and sums by page, so pages add up to 1.
4. Naive baseline (the paper's comparison): softmax(cosine(embed(a), embed(evidence)) / t_naive), the
   evidence as the answerer saw it (its contextualized text).

All clusters x m counterfactual answers run at once in a bounded thread pool, so the wall time is about
one answer call. A call that raises is retried once; a cluster none of whose repeats could be answered is
reported as unscored (with the error) and the shares are taken over the scored clusters.

Note: the paper's pseudo-code writes softmax(s_i) of the *similarity*; the text (and the idea) make the
contribution the *change*, so we take softmax over 1 - s_i.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from threadwise.core.answer.citations import strip_citations
from threadwise.core.answer.support import ReadsRankings
from threadwise.core.attribute.explanation import ClusterAttribution, Explanation, PageShare, SourceRef
from threadwise.core.protocols import Answerer, Embedder
from threadwise.core.types import Answer, Evidence

# Paper: t = 0.05 skews the distribution to the 1-3 evidences that matter.
DEFAULT_TEMPERATURE = 0.05
# DBSCAN radius in cosine distance between raw evidence texts, for the default embedder (USE multilingual v3).
# Measured on the 3,456 evidences the extractor makes of ConfQuestions: the 289 copies of a text on another
# page lie at 0; the same row in two tables, or a passage with a reworded phrase, at 0.003-0.0047; but
# distinct rows of one table come as close as 0.0051 (USE barely sees numbers: "HP 8300 ... n/a" vs "... yes").
# At 0.005 none of the 16,221 distinct same-table row pairs merge (5 at 0.0075, 9 at 0.01, 32 at 0.02).
# The paper's 0.005 was for bge-m3; other embedders want their own value.
DEFAULT_EPS = 0.005
DEFAULT_MIN_SAMPLES = 2
# Softmax temperature for the naive baseline. The paper does not give one; we use the same t as for the
# counterfactual shares so both distributions read alike. Accuracy only uses the argmax, which t does not
# change.
NAIVE_TEMPERATURE = DEFAULT_TEMPERATURE
# Evidences are clustered by their first words only: a whole table can run to thousands of words, which costs
# the embedder seconds, and texts that agree on their first 128 words are near-duplicates anyway.
CLUSTER_WORDS = 128
# The naive baseline compares the answer with each evidence's contextualized text, cut to this many characters
# (page, section, the evidence's start): a 42k-character table would cost the embedder seconds.
NAIVE_CHARS = 1200
# An evidence of at least this many words whose text sits inside another's is clustered with it.
MIN_CONTAINED_WORDS = 5
# Counterfactual answer calls in flight at once: 10 evidences x 3 repeats all go out together, so Explain
# takes about one answer call's latency. Lower it for an endpoint with tight rate limits.
DEFAULT_MAX_WORKERS = 30
# The largest contribution below this gets a caveat: no removal changed the answer much.
SLIGHT_CHANGE = 0.02
# A contribution below this counts as "the answer did not change".
UNCHANGED = 1e-4


# ---------------------------------------------------------------------------------------------------------
# The algorithm


def cluster_evidences(
    embeddings: np.ndarray, *, eps: float = DEFAULT_EPS, min_samples: int = DEFAULT_MIN_SAMPLES
) -> list[list[int]]:
    """Group evidences whose embeddings lie within cosine distance `eps` (DBSCAN); noise points stand alone.

    Returns 0-based evidence indices per cluster, clusters ordered by their first (best-ranked) member.
    """
    if len(embeddings) == 0:
        return []
    from sklearn.cluster import DBSCAN  # scikit-learn and scipy take ~1 s to import: only Explain pays it

    labels = DBSCAN(eps=eps, min_samples=min_samples, metric="cosine").fit(np.asarray(embeddings)).labels_
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        key = int(label) if label >= 0 else -1 - i  # each noise point is its own group
        groups.setdefault(key, []).append(i)
    return sorted(groups.values(), key=lambda members: members[0])


def merge_contained_evidence(groups: Sequence[Sequence[int]], texts: Sequence[str]) -> list[list[int]]:
    """Join the clusters of two evidences when one's text contains the other's, such as a whole table and
    one of its rows: removing either alone leaves the content in the prompt. Embeddings miss this (a row and
    its 40-row table lie far apart). Texts under `MIN_CONTAINED_WORDS` words are not matched."""
    flat = [" ".join(t.split()) for t in texts]
    cluster_of = {k: i for i, group in enumerate(groups) for k in group}
    root = list(range(len(groups)))

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    for small, inner in enumerate(flat):
        if len(inner.split()) < MIN_CONTAINED_WORDS:
            continue
        for big, outer in enumerate(flat):
            if big != small and len(outer) > len(inner) and inner in outer:
                root[find(cluster_of[small])] = find(cluster_of[big])
    merged: dict[int, list[int]] = {}
    for i, group in enumerate(groups):
        merged.setdefault(find(i), []).extend(group)
    return sorted((sorted(members) for members in merged.values()), key=lambda members: members[0])


def softmax(scores: Sequence[float], temperature: float) -> list[float]:
    """Numerically stable softmax of scores / temperature."""
    if not scores:
        return []
    scaled = np.asarray(scores, dtype=np.float64) / temperature
    weights = np.exp(scaled - scaled.max())
    return [float(w) for w in weights / weights.sum()]


@dataclass(frozen=True)
class _CallResult:
    cluster: int  # 0-based cluster
    text: str | None  # None when the call failed twice
    error: str
    attempts: int


def _counterfactual_call(
    answerer: Answerer,
    question: str,
    evidences: Sequence[Evidence],
    cluster: int,
    rankings_agree: bool = True,
) -> _CallResult:
    """Answer without one cluster (as the answer itself was: `rankings_agree`); one retry on failure, then give
    up and report why."""
    error = ""
    for attempt in (1, 2):
        try:
            if isinstance(answerer, ReadsRankings):
                text = answerer.answer(question, evidences, rankings_agree=rankings_agree).text
            else:
                text = answerer.answer(question, evidences).text
            return _CallResult(cluster, text, "", attempt)
        except Exception as exc:  # any answerer failure must cost only this cluster, not the explanation
            error = f"{type(exc).__name__}: {exc}"
    return _CallResult(cluster, None, error, 2)


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _evidence_vectors(
    evidences: Sequence[Evidence], embedder: Embedder, context_embeddings: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors of the raw texts' starts (to cluster by content) and of the contextualized texts (naive).

    One embedding call for whatever is not given.
    """
    if not evidences:
        return np.zeros((0, 1), dtype=np.float32), np.zeros((0, 1), dtype=np.float32)
    texts = [" ".join(e.text.split()[:CLUSTER_WORDS]) for e in evidences]
    if context_embeddings is None:
        both = _unit(embedder.embed(texts + [e.context_text[:NAIVE_CHARS] for e in evidences]))
        return both[: len(evidences)], both[len(evidences) :]
    if len(context_embeddings) != len(evidences):
        raise ValueError(f"{len(context_embeddings)} evidence embeddings for {len(evidences)} evidences")
    return _unit(embedder.embed(texts)), _unit(context_embeddings)


def _embed_distinct(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors of `texts`, embedding each distinct text once: a deterministic answerer mostly gives the
    same answer again, so most counterfactual answers repeat one another."""
    distinct = list(dict.fromkeys(texts))
    vectors = dict(zip(distinct, _unit(embedder.embed(distinct)), strict=True))
    return np.stack([vectors[t] for t in texts])


def emptied(evidence: Evidence) -> Evidence:
    """The evidence with its content taken out: same id, page, place and retrieval score, no text."""
    return replace(evidence, text="", context_text="", heading="", cells=())


def without_cluster(
    evidences: Sequence[Evidence], group: Sequence[int], *, keep_places: bool
) -> list[Evidence]:
    """The evidences an answer is recomputed from when cluster `group` is taken away: its sources emptied in
    their places (`keep_places`, the default of `explain`), or left out and the rest closed up."""
    members = set(group)
    if keep_places:
        return [emptied(e) if k in members else e for k, e in enumerate(evidences)]
    return [e for k, e in enumerate(evidences) if k not in members]


def _run_counterfactuals(
    question: str,
    evidences: Sequence[Evidence],
    groups: Sequence[Sequence[int]],
    answerer: Answerer,
    *,
    repeats: int,
    max_workers: int,
    keep_places: bool = True,
    rankings_agree: bool = True,
) -> list[_CallResult]:
    """All clusters x repeats counterfactual answers at once, in a pool of at most `max_workers` threads."""
    without = [without_cluster(evidences, group, keep_places=keep_places) for group in groups]
    jobs = [(i, kept) for i, kept in enumerate(without) for _ in range(repeats)]
    if not jobs:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(jobs)))) as pool:
        futures = [
            pool.submit(_counterfactual_call, answerer, question, kept, i, rankings_agree) for i, kept in jobs
        ]
        return [f.result() for f in futures]


def explain(
    question: str,
    answer: Answer,
    evidences: Sequence[Evidence],
    *,
    answerer: Answerer,
    embedder: Embedder,
    repeats: int | None = None,
    temperature: float = DEFAULT_TEMPERATURE,
    naive_temperature: float = NAIVE_TEMPERATURE,
    eps: float = DEFAULT_EPS,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    merge_contained: bool = True,
    max_workers: int = DEFAULT_MAX_WORKERS,
    evidence_embeddings: np.ndarray | None = None,
    keep_places: bool = True,
    rankings_agree: bool = True,
) -> Explanation:
    """Attribute `answer` to `evidences` (the sources the answerer saw, in that order) by removing each cluster.

    `evidence_embeddings`: the evidences' `context_text` vectors from the same `embedder` (the index has
    them), used by the naive baseline; embedded here when not given. `repeats` defaults to 1 for a
    deterministic answerer and 3 otherwise. `keep_places`: a removed cluster's sources are emptied in their
    places (default) rather than left out with the rest moving up (the paper's removal; see step 2 above).
    `rankings_agree`: what the answer was given (support.py): each counterfactual is answered alike, so a
    "not found" for rankings that disagreed is not explained by answers that ignore it.
    """
    started = time.perf_counter()
    m = repeats if repeats is not None else (1 if answerer.deterministic else 3)
    if m < 1:
        raise ValueError("repeats must be at least 1")
    content_vectors, context_vectors = _evidence_vectors(evidences, embedder, evidence_embeddings)

    t0 = time.perf_counter()
    groups = cluster_evidences(content_vectors, eps=eps, min_samples=min_samples)
    if merge_contained:
        groups = merge_contained_evidence(groups, [e.text for e in evidences])
    t1 = time.perf_counter()
    results = _run_counterfactuals(
        question,
        evidences,
        groups,
        answerer,
        repeats=m,
        max_workers=max_workers,
        keep_places=keep_places,
        rankings_agree=rankings_agree,
    )
    t2 = time.perf_counter()

    # One batch: the answer alone (naive), q + a, and q + each counterfactual answer. Citations are dropped:
    # their numbers shift when sources are removed.
    answered = [r for r in results if r.text is not None]
    plain = strip_citations(answer.text)
    texts = [plain, f"{question} {plain}"] + [f"{question} {strip_citations(r.text or '')}" for r in answered]
    vectors = _embed_distinct(embedder, texts) if evidences else np.zeros((len(texts), 1), dtype=np.float32)
    t3 = time.perf_counter()

    reference = vectors[1]
    similarities: dict[int, list[float]] = {i: [] for i in range(len(groups))}
    for r, vector in zip(answered, vectors[2:], strict=True):
        similarities[r.cluster].append(float(np.clip(vector @ reference, -1.0, 1.0)))
    naive = softmax([float(v @ vectors[0]) for v in context_vectors], naive_temperature)

    # rounded, so that float32 noise between equal answers does not decide ties (the naive score does)
    contributions = {i: round(max(0.0, 1.0 - float(np.mean(s))), 6) for i, s in similarities.items() if s}
    scored = sorted(contributions)
    degenerate = bool(scored) and len(groups) > 1 and all(contributions[i] < UNCHANGED for i in scored)
    # A cluster whose removal left the answer unchanged caused nothing: it gets 0, and the softmax runs over
    # the clusters that did change it (when none did, the shares stay even and the note says why).
    changed = (
        scored if degenerate or len(groups) == 1 else [i for i in scored if contributions[i] >= UNCHANGED]
    )
    shares = dict(zip(changed, softmax([contributions[i] for i in changed], temperature), strict=True))

    clusters = []
    for i, group in enumerate(groups):
        mine = [r for r in results if r.cluster == i]
        errors = sorted({r.error for r in mine if r.error})
        clusters.append(
            ClusterAttribution(
                index=i + 1,
                sources=tuple(_source_ref(k + 1, evidences[k]) for k in group),
                share=shares.get(i, 0.0),
                contribution=contributions.get(i),
                similarities=tuple(similarities[i]),
                counterfactual_answers=tuple(r.text for r in mine if r.text is not None),
                scored=i in contributions,
                error="; ".join(errors),
            )
        )

    evidence_shares = [0.0] * len(evidences)
    for c in clusters:
        for s in c.sources:
            evidence_shares[s.position - 1] = c.share
    return Explanation(
        question=question,
        answer=answer.text,
        cited=tuple(answer.cited),
        clusters=tuple(clusters),
        evidence_shares=tuple(evidence_shares),
        naive_shares=tuple(naive),
        pages=_page_roll_up(clusters),
        degenerate=degenerate,
        note=_note(clusters, degenerate, answer),
        answer_calls=sum(r.attempts for r in results),
        repeats=m,
        temperature=temperature,
        naive_temperature=naive_temperature,
        eps=eps,
        min_samples=min_samples,
        answerer=getattr(answerer, "name", ""),
        embedder=getattr(embedder, "name", ""),
        timings_ms={
            "cluster": (t1 - t0) * 1000,
            "counterfactual": (t2 - t1) * 1000,
            "embed": (t3 - t2) * 1000,
            "total": (time.perf_counter() - started) * 1000,
        },
    )


def _source_ref(position: int, e: Evidence) -> SourceRef:
    return SourceRef(position, e.id, e.page_id, e.page_title, e.url, e.label, e.kind)


def _page_roll_up(clusters: Sequence[ClusterAttribution]) -> tuple[PageShare, ...]:
    """Split each cluster's share evenly over its evidences and sum by page."""
    totals: dict[str, float] = {}
    first: dict[str, SourceRef] = {}
    for c in clusters:
        for s in c.sources:
            totals[s.page_id] = totals.get(s.page_id, 0.0) + c.share / len(c.sources)
            first.setdefault(s.page_id, s)
    pages = [PageShare(p, first[p].page_title, first[p].url, share) for p, share in totals.items()]
    return tuple(sorted(pages, key=lambda p: -p.share))


def _note(clusters: Sequence[ClusterAttribution], degenerate: bool, answer: Answer) -> str:
    unscored = [c.index for c in clusters if not c.scored]
    scored = [c for c in clusters if c.scored]
    if clusters and len(unscored) == len(clusters):
        return "No counterfactual answer could be computed, so the answer cannot be attributed."
    parts = []
    if degenerate:
        if answer.not_found:
            parts.append("The sources did not hold the answer, so no source caused it.")
        else:
            parts.append(
                "Removing any one group of sources left the answer unchanged: it does not rest on a single "
                "source (it may be stated in several, or not come from the sources at all)."
            )
    elif len(scored) > 1 and max(c.contribution or 0.0 for c in scored) < SLIGHT_CHANGE:
        parts.append(
            "Removing any one group of sources changed the answer only slightly, so the shares lie close "
            "together: the answer is likely stated in several sources."
        )
    if unscored:
        parts.append(
            f"Cluster{'s' if len(unscored) > 1 else ''} {', '.join(map(str, unscored))} could not be scored."
        )
    return " ".join(parts)
