"""The embedded offline answerer: picks the shortest span of the top evidences that answers, and cites it.

No LLM. Candidate spans are the sentences of passages, the items of lists (a nested item keeps its parent), and
the rows of tables (rendered "Column: value; Column: value" with only the cells that matter). Each span is
scored by the cosine between the question's and the span's embeddings (one batch call to the injected
`Embedder`, which must be multilingual for German questions over English pages), plus lexical overlap with the
question, plus a prior for the evidence's retrieval rank: the top evidence is usually the right one, so a lower
ranked span has to be clearly better to win.

Whether to answer at all is a separate, simpler judgement: the confidence is the best span's cosine plus the
share of the question's terms that its evidence's contextualized text (page title, headings, text) contains.
A question the wiki does not cover may share a word or two with some sentence, but rarely its page's topic.
Under `min_confidence` the answerer says the out-of-scope sentence, in the question's language.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from threadwise.core.answer.spans import Span, candidate_spans, clip, render_cells
from threadwise.core.protocols import Embedder
from threadwise.core.retrieve.tokenize import tokenize
from threadwise.core.types import NOT_FOUND, NOT_FOUND_DE, Answer, Evidence

# --- language -------------------------------------------------------------------------------------------------

# Frequent function words that exist in one language only ("was", "in", "an", "so" are in both and left out).
_EN_WORDS = frozenset(
    "the a of is are what which who how does did do to for with and were has have this that when where why "
    "there their be been any used can should".split()
)
_DE_WORDS = frozenset(
    "der die das den dem des ein eine einer einem einen und ist sind wurde wurden welche welcher welches "
    "welchen wer wie wo wann warum mit von für zu zum zur im auf bei nach über gibt es hat haben nicht auch "
    "noch nur dass oder werden wird kann können sich diese dieser dieses ich wir ihr".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)


def is_german(text: str) -> bool:
    """Cheap language guess from function words (umlauts and ß break a tie)."""
    words = [w.lower() for w in _WORD.findall(text)]
    de = sum(w in _DE_WORDS for w in words)
    en = sum(w in _EN_WORDS for w in words)
    if de != en:
        return de > en
    return bool(re.search(r"[äöüß]", text.lower()))


def not_found_answer(question: str, *, answerer: str = "extractive") -> Answer:
    """The out-of-scope answer, in the language of the question."""
    return Answer(text=NOT_FOUND_DE if is_german(question) else NOT_FOUND, not_found=True, answerer=answerer)


# --- scoring --------------------------------------------------------------------------------------------------


def _weights(terms: Sequence[str]) -> dict[str, float]:
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
    """A span that is itself a question, or says nothing the question does not, cannot be the answer."""
    return text.rstrip().endswith("?") or not set(tokenize(text)) - question_terms.keys()


def _term_share(question_terms: dict[str, float], text: str) -> float:
    """Share of `text`'s own terms that the question mentions: how much a table header or value is asked about."""
    terms = set(tokenize(text))
    return len(terms & question_terms.keys()) / len(terms) if terms else 0.0


# --- expected answer type: "when" wants a date, "how many" a number, "who" a name ----------------------------

AnswerType = Literal["date", "number", "person"]
_TYPE_CUES: tuple[tuple[re.Pattern[str], AnswerType], ...] = (
    (
        re.compile(
            r"^\s*(?:when|since when|wann|seit wann)\b|\b(?:what|which) (?:date|day|year|month)\b", re.I
        ),
        "date",
    ),
    (re.compile(r"\b(?:how (?:many|much|long|often)|wie (?:viele?|lange|oft))\b", re.I), "number"),
    (re.compile(r"^\s*(?:who|whom|whose|wer|wem|wen|wessen)\b|\bby whom\b|\bvon wem\b", re.I), "person"),
)
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|januar|februar|märz|mai|juni|juli|oktober|dezember"
_DATE = re.compile(
    rf"\b(?:{_MONTHS})[a-z]*\.?\s+\d{{1,2}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\.?\s+(?:of\s+)?(?:{_MONTHS})[a-z]*\b"
    r"|\b(?:19|20)\d\d\b|\b\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}\b",
    re.I,
)
_NUMBER = re.compile(
    r"\b\d+\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|once|twice)\b", re.I
)
_NAME = re.compile(
    r"\b(?!(?:The|This|That|These|Those|A|An|In|On|At|For|If|It|All|Each|Der|Die|Das|Ein|Eine)\b)"
    r"[A-Z][a-z]+ [A-Z][a-z]+\b"
)


def expected_answer_type(question: str) -> AnswerType | None:
    """What kind of thing the question asks for, from its wh-word (English or German); None when unclear."""
    return next((kind for cue, kind in _TYPE_CUES if cue.search(question)), None)


def has_answer_type(kind: AnswerType, text: str) -> bool:
    """Whether `text` holds something of that kind (a date, a number, a First Last name)."""
    pattern = {"date": _DATE, "number": _NUMBER, "person": _NAME}[kind]
    return bool(pattern.search(text))


@dataclass(frozen=True)
class Scored:
    span: Span
    score: float  # for ranking spans: cosine, overlap, rank prior, bonuses
    text: str  # the rendered answer text (a row shows only its chosen cells)
    cosine: float = 0.0  # question-span cosine alone


@dataclass(kw_only=True)
class ExtractiveAnswerer:
    """Extractive answers over the top evidences; deterministic and safe to call from several threads.

    Built with keyword arguments only; everything but `embedder` has a default tuned on the dev split:
    - `embedder`: multilingual sentence embedder; all candidate spans are embedded in one batch call.
    - `top_evidences`: how many of the ranked evidences to quote from.
    - `min_confidence`: the not-found threshold on `confidence()` (best span's cosine + share of the question's
      terms in its evidence's context, 0..2); calibrated so that ~3% of the dev split's (answerable)
      questions fall under it.
    - `rank_penalty`: subtracted per retrieval rank, so the top evidence wins unless another is clearly better.
    - `combine_margin` / `max_spans`: runners-up within this margin of the best join the answer (up to
      `max_spans` spans and `max_answer_words` words).
    - `type_bonus`: for a span holding what the wh-word asks for (a date for "when", a number for "how many").
    - `echo_penalty`: for spans that are questions or only repeat the question's terms.
    - `max_cells`: a row shows its identifying cells plus at most this many asked-about cells.
    - `max_candidates` / `max_per_evidence` / `max_embed_words`: caps on what one call embeds (latency): an
      evidence with more spans keeps those with most lexical overlap; a long span is embedded by its start.
    """

    embedder: Embedder
    top_evidences: int = 3
    min_confidence: float = 0.55
    # dev split: 0.06 -> 0.25 raised EN token F1 0.188 -> 0.196 and the DE cited page's gold rate 0.754 -> 0.776
    rank_penalty: float = 0.25
    lexical_weight: float = 1.0
    combine_margin: float = 0.05
    max_spans: int = 2
    type_bonus: float = 0.1
    echo_penalty: float = 1.0
    max_span_words: int = 45
    max_answer_words: int = 45
    max_cells: int = 3
    max_candidates: int = 24
    max_embed_words: int = 30
    max_per_evidence: int = 8
    cache_size: int = 4096  # span embeddings kept for reuse
    name: str = "extractive"
    deterministic: bool = True
    _cache: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict, init=False, repr=False)
    _cache_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def warm_up(self) -> None:
        self.embedder.warm_up()

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        ranked = self.score_spans(question, evidences)
        if not ranked or self.confidence(question, evidences, ranked[0]) < self.min_confidence:
            return not_found_answer(question, answerer=self.name)
        chosen = [self._complete_intro(s, ranked) for s in self._combine(ranked)]
        return _render(chosen, answerer=self.name)

    @staticmethod
    def confidence(question: str, evidences: Sequence[Evidence], best: Scored) -> float:
        """How sure we are that the evidences answer the question at all (0..2): see the module docstring."""
        coverage = lexical_overlap(_weights(tokenize(question)), evidences[best.span.source].context_text)
        return best.cosine + coverage

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
        """Spans of the top evidences in rank order, capped so that embedding them stays fast."""
        spans: list[Span] = []
        for source, evidence in enumerate(evidences[: self.top_evidences]):
            own = candidate_spans(evidence, source, max_words=self.max_span_words)
            if len(own) > self.max_per_evidence:
                best = sorted(own, key=lambda s: (-lexical_overlap(terms, s.text), s.order))
                own = sorted(best[: self.max_per_evidence], key=lambda s: s.order)
            spans.extend(own)
        return spans[: self.max_candidates]

    def score_spans(self, question: str, evidences: Sequence[Evidence]) -> list[Scored]:
        """The candidate spans of the top evidences, scored, best first (ties: higher rank, then reading order)."""
        terms = _weights(tokenize(question))
        wanted = expected_answer_type(question)
        spans = self._candidates(terms, evidences)
        if not spans or not question.strip():
            return []
        # one batch: the question, every span, and each distinct table header (rows of a table share them)
        headers = sorted({h for s in spans for h, _ in s.cells if h})
        texts = list(
            dict.fromkeys([question, *(clip(s.text, self.max_embed_words) for s in spans), *headers])
        )
        vectors = self._embed(texts)
        cosine = dict(zip(texts, (vectors @ vectors[0]).tolist(), strict=True))

        scored = []
        for span in spans:
            similarity = cosine[clip(span.text, self.max_embed_words)]
            score = (
                similarity
                + self.lexical_weight * lexical_overlap(terms, span.text)
                - self.rank_penalty * span.source
                - (self.echo_penalty if _echoes(terms, span.text) else 0.0)
                + (self.type_bonus if wanted and has_answer_type(wanted, span.text) else 0.0)
            )
            text = render_cells(self._pick_cells(terms, span.cells, cosine)) if span.cells else span.text
            scored.append(Scored(span, score, text, similarity))
        scored.sort(key=lambda s: (-round(s.score, 6), s.span.source, s.span.order))
        return scored

    def _pick_cells(
        self, terms: dict[str, float], cells: Sequence[tuple[str, str]], cosine: dict[str, float]
    ) -> list[tuple[str, str]]:
        """The row's identifying cells (the first one, and any whose value the question names), plus the cells
        whose column the question asks about (by header overlap and header cosine), in column order."""
        if len(cells) <= 2:
            return list(cells)
        keep = {0} | {i for i, (_, value) in enumerate(cells) if _term_share(terms, value) >= 0.5}
        relevance = {
            i: _term_share(terms, header) + cosine.get(header, 0.0)
            for i, (header, _) in enumerate(cells)
            if i not in keep and header
        }
        if relevance:
            best = max(relevance.values())
            asked = sorted(
                (i for i, r in relevance.items() if r >= best - 0.1), key=lambda i: (-relevance[i], i)
            )
            keep |= set(asked[: self.max_cells])
        return [cells[i] for i in sorted(keep)]

    def _combine(self, ranked: list[Scored]) -> list[Scored]:
        """The best span, and runners-up of the same kind (rows with rows) that score nearly as well and fit
        the word budget: 'which machines ...' is often answered by two rows, 'what are ...' by two items."""
        best = ranked[0]
        chosen = [best]
        words = len(best.text.split())
        for other in ranked[1:]:
            if len(chosen) >= self.max_spans or best.score - other.score > self.combine_margin:
                break
            if bool(other.span.cells) != bool(best.span.cells) or any(other.text == c.text for c in chosen):
                continue
            if words + len(other.text.split()) > self.max_answer_words:
                continue
            chosen.append(other)
            words += len(other.text.split())
        return sorted(chosen, key=lambda s: (s.span.source, s.span.order))

    def _complete_intro(self, chosen: Scored, ranked: list[Scored]) -> Scored:
        """An intro ('It needs three things:') is completed by what follows it in the same evidence."""
        if not chosen.span.is_intro:
            return chosen
        following = sorted(
            (
                s.span
                for s in ranked
                if s.span.source == chosen.span.source and s.span.order > chosen.span.order
            ),
            key=lambda span: span.order,
        )
        text, words = chosen.text.rstrip(), len(chosen.text.split())
        parts: list[str] = []
        for span in following:
            piece = span.own or span.text
            words += len(piece.split())
            if parts and words > self.max_answer_words:
                break
            parts.append(piece.rstrip(";,. "))
        if not parts:
            return chosen
        return Scored(chosen.span, chosen.score, text + " " + "; ".join(parts))


def _render(chosen: list[Scored], *, answerer: str) -> Answer:
    """Join the chosen spans, citing each source once after its last span."""
    parts: list[str] = []
    for k, item in enumerate(chosen):
        text = item.text.rstrip()
        last_of_source = k + 1 == len(chosen) or chosen[k + 1].span.source != item.span.source
        parts.append(f"{text} [Source {item.span.source + 1}]" if last_of_source else text)
    cited = tuple(dict.fromkeys(s.span.source + 1 for s in chosen))
    return Answer(text=" ".join(parts), cited=cited, answerer=answerer)


__all__ = ["ExtractiveAnswerer", "is_german", "not_found_answer"]
