"""The embedded offline answerer: ranks the candidate units of the top evidences and quotes the best one as a
whole fact, cited.

No LLM. Candidate units are the sentences of passages, the items of lists (a nested item keeps its parent),
and the rows of tables. Each is scored by features measured on the ConfQuestions dev split: the cosine between
the question's and the unit's embeddings (one batch call to the injected multilingual `Embedder`), lexical
overlap with the question, a prior for the evidence's retrieval rank (with `tie_margin`, evidences whose retrieval
scores nearly tie share one and are read in a fixed order; off by default, README), small bonuses for a unit of the
top evidence's page and for the first unit of an evidence, whether the unit holds what the wh-word asks for (a date
for "when"), and a penalty for units that only echo the question.

The best unit is then quoted with what qualifies it (see `compose.py`): a row with its column names, a
sentence with its neighbours, an item with its parent and siblings, up to a word budget; a question that asks
several things gets the best unit for each part; a failure row is said to be one, next to a passing row of
the same thing; a quote from a page in another language than the question says which language it is.

Whether to answer at all is a separate judgement (`answerable`): the best unit must be close enough (its
cosine plus the share of the question's terms in its evidence, and its cosine alone, more so when retrieval's
rankings disagree), and the evidences must mention what the question is about (support.py). Otherwise the
answer says, in plain words and the question's language, that the synced pages do not hold it, and names the
closest pages.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from threadwise.core.answer.compose import Piece, compose, render
from threadwise.core.answer.conflicts import disagrees
from threadwise.core.answer.question import (
    expected_answer_type,
    has_answer_type,
    is_german,
    own_and_history,
    question_parts,
)
from threadwise.core.answer.spans import Span, candidate_spans, clip
from threadwise.core.answer.support import not_found_answer, supported
from threadwise.core.language import evidence_is_german
from threadwise.core.protocols import Embedder
from threadwise.core.retrieve.tokenize import tokenize
from threadwise.core.types import Answer, Evidence


def score_tiers(evidences: Sequence[Evidence], margin: float) -> list[int]:
    """Each evidence's retrieval tier: how many of the others scored more than `margin` above it, so that
    evidences whose retrieval scores nearly tie share a tier (their rank when a score is missing)."""
    scores = [e.score for e in evidences if e.score is not None]
    if len(scores) < len(evidences):
        return list(range(len(evidences)))
    return [sum(1 for t in scores if t > s + margin) for s in scores]


def canonical_order(evidences: Sequence[Evidence], margin: float) -> list[int]:
    """The evidences' indices by tier, and within a tier by id: the order the answerer reads them in, the
    same whichever way a near-tie fell (a perturbation of 1e-4 in the scores can swap two ranks)."""
    tiers = score_tiers(evidences, margin)
    return sorted(range(len(evidences)), key=lambda i: (tiers[i], evidences[i].id))


# --- scoring features -----------------------------------------------------------------------------------------


def weights(terms: Sequence[str]) -> dict[str, float]:
    """Question terms and their weights: numbers, versions and issue keys identify things, so they count double."""
    return {t: (2.0 if any(c.isdigit() for c in t) else 1.0) for t in terms}


def lexical_overlap(question_terms: dict[str, float], text: str) -> float:
    """Weighted share of the question's terms that occur in `text` (0..1)."""
    total = sum(question_terms.values())
    if not total:
        return 0.0
    found = set(tokenize(text))
    return sum(w for t, w in question_terms.items() if t in found) / total


def _echoes(question_terms: dict[str, float], text: str) -> bool:
    """A unit that is itself a question, or says nothing the question does not, cannot be the answer."""
    return text.rstrip().endswith("?") or not set(tokenize(text)) - question_terms.keys()


@dataclass(frozen=True)
class Scored:
    span: Span
    score: float  # for ranking units: cosine, overlap, rank prior, bonuses
    cosine: float = 0.0  # question-unit cosine alone


@dataclass(kw_only=True)
class ExtractiveAnswerer:
    """Extractive answers over the top evidences; deterministic and safe to call from several threads.

    Built with keyword arguments only; everything but `embedder` has a default tuned on the dev split:
    - `embedder`: multilingual sentence embedder; all candidate units are embedded in one batch call.
    - `top_evidences`: how many of the ranked evidences to quote from.
    - `min_confidence`: the not-found threshold on `confidence()` (best unit's cosine + share of the question's
      terms in its evidence's context, 0..2).
    - `min_cosine` / `disputed_cosine` / `min_coverage`: the rest of the not-found judgement (`answerable`):
      the best unit's cosine, and its cosine when retrieval's lexical and dense rankings disagree (the
      pipeline says so: `rankings_agree`); the share of the question's content words on the quoted pages.
    - `rank_penalty`: subtracted per retrieval rank, so the top evidence wins unless another is clearly better.
    - `tie_margin`: evidences whose retrieval scores (`Evidence.score`) are within this of each other share a
      rank and are read in a fixed order (`canonical_order`), so swapping them cannot change the answer.
    - `type_bonus`: for a unit holding what the wh-word asks for (a date for "when", a number for "how many").
    - `echo_penalty`: for units that are questions or only repeat the question's terms.
    - `budget_words`: the answer's length; the best unit is quoted whole and its context fills the rest.
    - `second_margin`: a unit of another evidence of the same page joins the answer when it scores within
      this of the best; `other_page_margin` the same for another page (a row that disagrees always joins).
    - `top_page_bonus`: for a unit of the top evidence's page (the page retrieval is surest of holds the best
      unit most of the time, in whichever of its evidences).
    - `lead_bonus`: for the first unit of its evidence (a section's or a list's opening line often states what
      the rest details).
    - `page_evidences`: units are also taken from up to this many further evidences of the top evidence's page
      among the top 10 (a page retrieval is sure of often holds the answer in a section ranked lower); they
      are penalized as the last of the top evidences.
    - `followup_pieces` / `followup_margin` / `followup_budget`: for a follow-up completed offline, which is
      scored by its own few words and so is less sure of its best unit, up to this many units of the page
      within this margin, in a shorter budget each (`max_pieces`, `second_margin`, `budget_words` otherwise).
    A question completed offline ("the question ← earlier questions") is scored by its own part only: the
    earlier questions chose the evidences already, and their words would pull units of earlier answers up.
    - `max_candidates` / `max_per_evidence` / `max_embed_words`: caps on what one call embeds (latency): an
      evidence with more units keeps those with most lexical overlap; a long unit is embedded by its start.
    """

    embedder: Embedder
    top_evidences: int = 4
    # dev split (completed/conversational x EN/DE): 0.55 refused 0.7-12.7% of the (answerable) questions, 0.3
    # 0-4%, 0.25 0-0.7% with recall equal or higher; out-of-scope questions over the sample wiki score 0.02-0.22
    min_confidence: float = 0.25
    # issue 28, dev split and bench/dev_sets/unanswerable.json: bench/not_found_dev.py, README
    min_cosine: float = 0.1
    disputed_cosine: float = 0.25
    min_coverage: float = 0.5
    reads_rankings: bool = True
    rank_penalty: float = 0.25  # dev split: 0.1 lost 0.01-0.03 token recall in all four settings
    # 0: the retrieval order decides; a margin made answers less stable under perturbed dense scores (README)
    tie_margin: float = 0.0
    lexical_weight: float = 1.0
    type_bonus: float = 0.1
    echo_penalty: float = 1.0
    budget_words: int = (
        70  # dev split numbers of this and the bonuses below: README, "How the offline answerer"
    )
    second_margin: float = 0.3
    other_page_margin: float = 0.0
    max_pieces: int = 2
    max_span_words: int = 45
    max_candidates: int = 24
    max_embed_words: int = 30
    max_per_evidence: int = 8
    top_page_bonus: float = 0.1
    lead_bonus: float = 0.05
    page_evidences: int = 2
    followup_pieces: int = 3
    followup_margin: float = 0.6
    followup_budget: int = 55
    cache_size: int = 4096  # unit embeddings kept for reuse
    name: str = "extractive"
    deterministic: bool = True
    _cache: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict, init=False, repr=False)
    _cache_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def warm_up(self) -> None:
        self.embedder.warm_up()

    def answer(self, question: str, evidences: Sequence[Evidence], *, rankings_agree: bool = True) -> Answer:
        """Answer from `evidences` (best first) as if near-tied ones came in a fixed order (`canonical_order`),
        citing them by their numbers as given; "not found" when they do not hold the answer (`answerable`)."""
        order = canonical_order(evidences, self.tie_margin)
        evidences = [evidences[i] for i in order]
        own, history = own_and_history(question)
        parts = question_parts(own)
        ranked = self.score_spans(question, evidences, parts=parts)
        if not ranked or not self.answerable(question, evidences, ranked, rankings_agree=rankings_agree):
            return not_found_answer(question, evidences, answerer=self.name)
        followup = bool(history)  # completed offline from earlier questions
        pieces = self._choose(
            ranked,
            [e.page_id for e in evidences],
            max_pieces=self.followup_pieces if followup else self.max_pieces,
            margin=self.followup_margin if followup else self.second_margin,
        )
        chunks = compose(
            pieces,
            evidences,
            question_terms=weights(tokenize(question)),
            budget=self.followup_budget if followup else self.budget_words,
            german=is_german(question),
            question=question,
        )
        return render([(text, order[k]) for text, k in chunks], answerer=self.name)

    def answerable(
        self,
        question: str,
        evidences: Sequence[Evidence],
        ranked: list[list[Scored]],
        *,
        rankings_agree: bool = True,
    ) -> bool:
        """Whether the evidences hold an answer at all: the best unit is close enough (`confidence`,
        `min_cosine`; `disputed_cosine` when retrieval's rankings disagree), every key term of the question
        is in some evidence, and (same language) the quoted pages hold `min_coverage` of its content words.
        A follow-up completed offline is judged by the first two alone: its own few words are little to go by."""
        best = ranked[0][0]
        if self.confidence(question, evidences, best) < self.min_confidence:
            return False
        own, history = own_and_history(question)
        quoted = {part[0].span.source for part in ranked}
        if history:  # a follow-up completed offline says too little by itself for the rest
            return supported(own, evidences, quoted, min_coverage=0.0)
        if best.cosine < self.min_cosine or (not rankings_agree and best.cosine < self.disputed_cosine):
            return False
        return supported(own, evidences, quoted, min_coverage=self.min_coverage)

    @staticmethod
    def confidence(question: str, evidences: Sequence[Evidence], best: Scored) -> float:
        """How sure we are that the evidences answer the question at all (0..2): see the module docstring.
        Words cannot match across languages, so for an evidence in another language the cosine stands in."""
        evidence = evidences[best.span.source]
        coverage = lexical_overlap(weights(tokenize(question)), evidence.context_text)
        if evidence_is_german(evidence) != is_german(question):
            coverage = max(coverage, best.cosine)
        return best.cosine + coverage

    def _choose(
        self, ranked: list[list[Scored]], pages: Sequence[str], *, max_pieces: int, margin: float
    ) -> list[Piece]:
        """The best unit of each part of the question; for a one-part question, also a close runner-up
        from another evidence (several rows often answer together): within `second_margin` of the best on
        the same page; on another page within `other_page_margin`, or when it is a row that disagrees with
        the best one (said so in the answer, see compose.py)."""
        pieces: list[Piece] = []
        for part in ranked:
            best = part[0]
            if not any(p.span == best.span for p in pieces):
                pieces.append(Piece(best.span))
        best = ranked[0][0]
        sources = {p.span.source for p in pieces}
        limit = max_pieces + len(ranked) - 1  # one more per further part of the question
        for other in ranked[0][1:]:
            if len(pieces) >= limit or best.score - other.score > margin:
                break
            same_page = pages[other.span.source] == pages[best.span.source]
            if not same_page and best.score - other.score > self.other_page_margin:
                if not disagrees(best.span, other.span):  # a page that says otherwise is always shown
                    continue
            if other.span.source not in sources:
                pieces.append(Piece(other.span))
                sources.add(other.span.source)
        return pieces

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in one batch call, reusing recent vectors: Explain re-answers the same question over
        subsets of the same evidences, so its counterfactual runs mostly hit the cache."""
        with self._cache_lock:
            known = {t: self._cache[t] for t in texts if t in self._cache}
        missing = [t for t in texts if t not in known]
        if missing:
            fresh = dict(zip(missing, self.embedder.embed(missing), strict=True))
            with self._cache_lock:
                self._cache.update(fresh)
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            known.update(fresh)
        return np.stack([known[t] for t in texts])

    def _candidates(self, terms: dict[str, float], evidences: Sequence[Evidence]) -> list[Span]:
        """Units of the top evidences (and of `page_evidences` more of the top page) in rank order, capped so
        that embedding them stays fast."""
        spans: list[Span] = []
        chosen = list(range(min(self.top_evidences, len(evidences))))
        if self.page_evidences and evidences:
            extra = [
                k
                for k in range(self.top_evidences, min(10, len(evidences)))
                if evidences[k].page_id == evidences[0].page_id
            ]
            chosen += extra[: self.page_evidences]
        for source in chosen:
            evidence = evidences[source]
            own = candidate_spans(evidence, source, max_words=self.max_span_words)
            if len(own) > self.max_per_evidence:
                best = sorted(own, key=lambda s: (-lexical_overlap(terms, s.text), s.order))
                own = sorted(best[: self.max_per_evidence], key=lambda s: s.order)
            spans.extend(own)
        return spans[: self.max_candidates]

    def score_spans(
        self, question: str, evidences: Sequence[Evidence], *, parts: Sequence[str] = ()
    ) -> list[list[Scored]]:
        """For each part of the question (the question itself when it asks one thing), the candidate units
        scored against that part, best first (ties: higher rank, then reading order)."""
        parts = list(parts) or [own_and_history(question)[0]]
        spans = self._candidates(weights(tokenize(question)), evidences)
        if not spans or not question.strip():
            return []
        texts = list(dict.fromkeys([*parts, *(clip(s.text, self.max_embed_words) for s in spans)]))
        vectors = self._embed(texts)
        index = {t: i for i, t in enumerate(texts)}
        german = is_german(question)
        other_language = {s.source for s in spans if evidence_is_german(evidences[s.source]) != german}
        tiers = score_tiers(evidences, self.tie_margin)
        top_pages = {e.page_id for e, tier in zip(evidences, tiers, strict=True) if tier == 0}
        top_page = {s.source for s in spans if evidences[s.source].page_id in top_pages}
        return [
            self._rank(part, spans, vectors, index, vectors[index[part]], other_language, top_page, tiers)
            for part in parts
        ]

    def _rank(
        self,
        part: str,
        spans: list[Span],
        vectors: np.ndarray,
        index: dict[str, int],
        query: np.ndarray,
        other_language: set[int],
        top_page: set[int],
        tiers: Sequence[int],
    ) -> list[Scored]:
        """Units scored against one part of the question. Words cannot match across languages: for a unit
        of an evidence in another language than the question, the cosine stands in for the word overlap."""
        terms = weights(tokenize(part))
        wanted = expected_answer_type(part)
        scored = []
        for span in spans:
            similarity = float(vectors[index[clip(span.text, self.max_embed_words)]] @ query)
            overlap = lexical_overlap(terms, span.text)
            if span.source in other_language:
                overlap = max(overlap, similarity)
            score = (
                similarity
                + self.lexical_weight * overlap
                - self.rank_penalty * min(tiers[span.source], self.top_evidences)
                - (self.echo_penalty if _echoes(terms, span.text) else 0.0)
                + (self.type_bonus if wanted and has_answer_type(wanted, span.text) else 0.0)
                + (self.top_page_bonus if span.source in top_page else 0.0)
                + (self.lead_bonus if span.order == 0 else 0.0)
            )
            scored.append(Scored(span, score, similarity))
        scored.sort(key=lambda s: (-round(s.score, 6), s.span.source, s.span.order))
        return scored


__all__ = ["ExtractiveAnswerer", "is_german", "not_found_answer"]
