"""Counterfactual attribution (Algorithm 1) with deterministic fakes for the answerer and the embedder."""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from threadwise.core.attribute.attribution import (
    cluster_evidences,
    emptied,
    explain,
    merge_contained_evidence,
    without_cluster,
)
from threadwise.core.attribute.explanation import Explanation, render_explanation, share_bar
from threadwise.core.protocols import ChatError
from threadwise.core.types import NOT_FOUND, Answer, Evidence
from threadwise.evaluation.attribution_metrics import explanation_accuracy, naive_accuracy, top_source

QUESTION = "Which TPM version did the Dell Optiplex 7040 use?"


class HashEmbedder:
    """Bag of words hashed into 512 buckets, L2-normalized: same words, same vector."""

    name = "hash-bow"
    dim = 512
    max_tokens = 512

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def warm_up(self) -> None:
        pass

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class KeywordAnswerer:
    """Answers with the first source that mentions the keyword, citing it; NOT_FOUND otherwise."""

    name = "keyword"
    deterministic = True

    def __init__(self, keyword: str) -> None:
        self.keyword = keyword
        self.calls = 0
        self._lock = threading.Lock()

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        with self._lock:
            self.calls += 1
        for n, e in enumerate(evidences, start=1):
            if self.keyword in e.text:
                return Answer(text=f"{e.text} [Source {n}]", cited=(n,), answerer=self.name)
        return Answer(text=NOT_FOUND, not_found=True, answerer=self.name)


def present(evidences: Sequence[Evidence]) -> set[str]:
    """The ids of the evidences an answerer was given with their content (Explain empties removed ones)."""
    return {e.id for e in evidences if e.text}


def evidence(n: int, text: str, page: str = "") -> Evidence:
    page = page or f"p{n}"
    return Evidence(
        id=f"{page}:{n}",
        page_id=page,
        space="TEST",
        page_title=f"Page {page}",
        url=f"https://wiki.example/{page}",
        page_version=1,
        kind="passage",
        position=n,
        text=text,
        context_text=f"Page {page} / {text}",
    )


FILLERS = [
    "The build server runs nightly jobs for the installer images.",
    "Release notes are published on the project mailing list every quarter.",
    "Contributors sign the license agreement before their first patch.",
    "The measurement tests cover Intel TXT and the boot chain.",
]
ANSWER_TEXT = "The Dell Optiplex 7040 used TPM version 2.0 in the measurement tests."


def sources(*texts: str) -> list[Evidence]:
    """Evidence n (1-based) with the n-th text, on page pn."""
    return [evidence(n, text) for n, text in enumerate(texts, start=1)]


def explain_own_answer(
    answerer: KeywordAnswerer | WindowAnswerer,
    evidences: Sequence[Evidence],
    answer: Answer | None = None,
    **options: Any,
) -> Explanation:
    """Explain the answer `answerer` gives over all `evidences` (or `answer`), with the hashing embedder."""
    answer = answer or answerer.answer(QUESTION, evidences)
    return explain(QUESTION, answer, evidences, answerer=answerer, embedder=HashEmbedder(), **options)


# --- clustering -------------------------------------------------------------------------------------------


def test_clustering_merges_duplicates_and_keeps_distinct_evidence_apart() -> None:
    embedder = HashEmbedder()
    texts = [FILLERS[0], ANSWER_TEXT, FILLERS[1], ANSWER_TEXT, FILLERS[2], FILLERS[0]]
    groups = cluster_evidences(embedder.embed(texts), eps=0.02, min_samples=2)
    assert groups == [[0, 5], [1, 3], [2], [4]]  # ordered by best-ranked member; noise points alone


def test_clustering_edge_cases() -> None:
    assert cluster_evidences(np.zeros((0, 4))) == []
    assert cluster_evidences(np.eye(3)) == [[0], [1], [2]]
    # a larger neighbourhood requirement keeps even identical pairs apart
    same = np.ones((2, 4))
    assert cluster_evidences(same, min_samples=2) == [[0, 1]]
    assert cluster_evidences(same, min_samples=3) == [[0], [1]]


TABLE = "Row 1 in Table 1: Platform is Dell Latitude 7490, and TPM is 2.0\nRow 2 in Table 1: Platform is Dell Optiplex 7040, and TPM is 2.0"
ROW = "Row 2 in Table 1: Platform is Dell Optiplex 7040, and TPM is 2.0"


def test_a_table_and_its_rows_are_clustered_together() -> None:
    texts = [TABLE, FILLERS[0], ROW, "TPM is 2.0"]  # the last is too short to count as contained
    assert merge_contained_evidence([[0], [1], [2], [3]], texts) == [[0, 2], [1], [3]]
    assert merge_contained_evidence([[0, 1], [2], [3]], [FILLERS[0], FILLERS[0], ROW, TABLE]) == [
        [0, 1],
        [2, 3],
    ]

    # Through explain: removing the row alone changes nothing (the table still says it), so only the
    # pair explains the answer.
    evidences = sources(FILLERS[0], TABLE, FILLERS[1], ROW)
    answerer = KeywordAnswerer("7040")
    expl = explain_own_answer(answerer, evidences)
    top = max(expl.clusters, key=lambda c: c.share)
    assert top.positions == (2, 4) and top.share > 0.95
    assert len(explain_own_answer(answerer, evidences, merge_contained=False).clusters) == 4


def test_ties_go_to_the_cited_source_then_the_better_ranked_one() -> None:
    evidences = sources(FILLERS[0], ANSWER_TEXT, FILLERS[1], ANSWER_TEXT)
    answerer = KeywordAnswerer("TPM")
    cites_four = Answer(text=f"{ANSWER_TEXT} [Source 4]", cited=(4,))
    top = top_source(explain_own_answer(answerer, evidences, cites_four))
    assert top is not None and top.position == 4
    uncited = Answer(text=ANSWER_TEXT)
    top = top_source(explain_own_answer(answerer, evidences, uncited))
    assert top is not None and top.position == 2


# --- the algorithm ----------------------------------------------------------------------------------------


def test_removing_the_only_evidence_with_the_answer_moves_the_attribution_to_it() -> None:
    evidences = sources(FILLERS[0], FILLERS[1], ANSWER_TEXT, FILLERS[3])
    answerer = KeywordAnswerer("TPM")
    expl = explain_own_answer(answerer, evidences)

    top = max(expl.clusters, key=lambda c: c.share)
    assert top.positions == (3,)
    assert top.share > 0.95
    assert top.counterfactual_answers == (NOT_FOUND,)
    assert [c.contribution for c in expl.clusters if c is not top] == [0.0, 0.0, 0.0]
    assert expl.evidence_shares[2] == top.share
    assert sum(expl.evidence_shares) == pytest.approx(1.0)
    assert expl.pages[0].page_id == "p3" and sum(p.share for p in expl.pages) == pytest.approx(1.0)
    assert not expl.degenerate and expl.note == ""
    assert expl.repeats == 1 and expl.answer_calls == 4  # deterministic: one call per cluster
    assert explanation_accuracy(expl, {"p3"}) and explanation_accuracy(expl, {"https://wiki.example/p3"})
    assert not explanation_accuracy(expl, {"p1"})


def test_renumbered_citations_do_not_count_as_a_change() -> None:
    # Left out rather than emptied, source 1 makes the answer cite [Source 2] instead of [Source 3]: the
    # same answer.
    evidences = sources(FILLERS[0], FILLERS[1], ANSWER_TEXT)
    answerer = KeywordAnswerer("TPM")
    expl = explain_own_answer(answerer, evidences, keep_places=False)
    assert expl.clusters[0].counterfactual_answers == (f"{ANSWER_TEXT} [Source 2]",)
    assert expl.clusters[0].contribution == 0.0
    # emptied in its place (the default), the citation keeps its number
    expl = explain_own_answer(answerer, evidences)
    assert expl.clusters[0].counterfactual_answers == (f"{ANSWER_TEXT} [Source 3]",)
    assert expl.clusters[0].contribution == 0.0


class WindowAnswerer:
    """Reads only the first `window` places, like an answerer that quotes from its top sources: answers with
    the source there that holds most of the question's words, among those with the keyword."""

    name = "window"
    deterministic = True

    def __init__(self, keyword: str, window: int = 2) -> None:
        self.keyword, self.window = keyword, window
        self.seen: list[list[str]] = []
        self._lock = threading.Lock()

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        with self._lock:
            self.seen.append([e.text for e in evidences])
        words = set(re.findall(r"\w+", question.lower()))
        read = [(n, e) for n, e in enumerate(evidences[: self.window], start=1) if self.keyword in e.text]
        if not read:
            return Answer(text=NOT_FOUND, not_found=True, answerer=self.name)
        n, best = max(read, key=lambda r: len(words & set(re.findall(r"\w+", r[1].text.lower()))))
        return Answer(text=f"{best.text} [Source {n}]", cited=(n,), answerer=self.name)


WEAK = "A TPM upgrade was planned for later."


def test_a_removed_source_keeps_its_place_so_later_ones_do_not_move_up() -> None:
    # The answer quotes source 2; source 1 is a filler it did not use. Left out, the filler would let source
    # 3 into the answerer's window and change the answer as much as removing source 2 does, so the filler
    # took a share of the cause. Emptied in its place, it changes nothing and gets nothing.
    evidences = sources(FILLERS[0], WEAK, ANSWER_TEXT)
    answerer = WindowAnswerer("TPM")
    assert answerer.answer(QUESTION, evidences).cited == (2,)

    closed_up = explain_own_answer(answerer, evidences, keep_places=False)
    assert closed_up.clusters[0].counterfactual_answers == (f"{ANSWER_TEXT} [Source 2]",)
    assert (closed_up.clusters[0].contribution or 0) > 0.1 and closed_up.evidence_shares[0] > 0.3

    answerer.seen.clear()
    kept = explain_own_answer(answerer, evidences)
    assert kept.clusters[0].counterfactual_answers == (f"{WEAK} [Source 2]",)
    assert kept.clusters[0].contribution == 0.0 and kept.evidence_shares[0] == 0.0
    assert kept.clusters[1].counterfactual_answers == (NOT_FOUND,)
    assert kept.evidence_shares == pytest.approx((0.0, 1.0, 0.0))
    top = top_source(kept)
    assert top is not None and top.position == 2 and explanation_accuracy(kept, {"p2"})
    # each counterfactual call saw all three places, the removed one with no text
    assert sorted(answerer.seen[1:]) == sorted(
        [["", WEAK, ANSWER_TEXT], [FILLERS[0], "", ANSWER_TEXT], [FILLERS[0], WEAK, ""]]
    )


def test_an_emptied_source_keeps_its_identity_and_loses_its_content() -> None:
    row = replace(
        evidence(7, "Row 2 in Table 1: Platform is Dell Optiplex 7040"),
        heading="Results",
        cells=(("Platform", "Dell Optiplex 7040"),),
        score=0.42,
    )
    empty = emptied(row)
    assert (empty.id, empty.page_id, empty.page_title, empty.url, empty.position, empty.score) == (
        row.id,
        row.page_id,
        row.page_title,
        row.url,
        row.position,
        0.42,
    )
    assert (empty.text, empty.context_text, empty.heading, empty.cells) == ("", "", "", ())
    three = sources(FILLERS[0], ANSWER_TEXT, FILLERS[1])
    assert without_cluster(three, [0, 2], keep_places=True) == [
        emptied(three[0]),
        three[1],
        emptied(three[2]),
    ]
    assert without_cluster(three, [0, 2], keep_places=False) == [three[1]]


def test_redundant_copies_are_removed_together() -> None:
    # The answer sits in two identical evidences: removing one alone changes nothing (the paper's reason for
    # clustering); removing the cluster does.
    evidences = sources(FILLERS[0], ANSWER_TEXT, FILLERS[1], ANSWER_TEXT)
    answerer = KeywordAnswerer("TPM")
    clustered = explain_own_answer(answerer, evidences)
    top = max(clustered.clusters, key=lambda c: c.share)
    assert top.positions == (2, 4) and top.share > 0.95
    assert clustered.evidence_shares[1] == clustered.evidence_shares[3] == top.share
    assert clustered.pages[0].share == pytest.approx(top.share / 2)  # p2 and p4 split the cluster's share

    unclustered = explain_own_answer(answerer, evidences, min_samples=99)
    assert len(unclustered.clusters) == 4
    assert unclustered.degenerate
    assert unclustered.evidence_shares == pytest.approx((0.25, 0.25, 0.25, 0.25))
    assert "unchanged" in unclustered.note
    # with no causal signal the top source falls back to the cited one
    assert explanation_accuracy(unclustered, {"p2", "p4"})


class ScriptedAnswerer:
    """A nondeterministic answerer: for each removed source, a queue of replies handed out in turn."""

    name = "scripted"
    deterministic = False

    def __init__(self, evidences: Sequence[Evidence], replies: dict[str, list[str]]) -> None:
        self.all_ids = {e.id for e in evidences}
        self.replies = {key: list(queue) for key, queue in replies.items()}
        self._lock = threading.Lock()

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        (removed,) = self.all_ids - present(evidences)
        with self._lock:
            return Answer(text=self.replies[removed].pop(0), answerer=self.name)


def test_monte_carlo_repeats_are_averaged() -> None:
    evidences = sources(FILLERS[0], ANSWER_TEXT)
    answer = Answer(text=ANSWER_TEXT)
    replies = {
        "p1:1": [ANSWER_TEXT, ANSWER_TEXT, "The Optiplex 7040 used TPM 2.0."],
        "p2:2": [NOT_FOUND, "TPM 1.2 was used.", NOT_FOUND],
    }
    embedder = HashEmbedder()
    expl = explain(
        QUESTION, answer, evidences, answerer=ScriptedAnswerer(evidences, replies), embedder=embedder
    )

    assert expl.repeats == 3 and expl.answer_calls == 6  # default m = 3 for a nondeterministic answerer
    vectors = embedder.embed([f"{QUESTION} {t}" for t in [ANSWER_TEXT, *replies["p1:1"], *replies["p2:2"]]])
    expected = vectors[1:] @ vectors[0]
    for cluster, sims in zip(expl.clusters, (expected[:3], expected[3:]), strict=True):
        assert sorted(cluster.similarities) == pytest.approx(sorted(sims), abs=1e-6)
        assert cluster.contribution == pytest.approx(1 - float(np.mean(sims)), abs=1e-6)
        assert len(cluster.counterfactual_answers) == 3
    assert sorted(expl.clusters[1].counterfactual_answers) == sorted(replies["p2:2"])
    assert expl.clusters[1].share > expl.clusters[0].share


def test_slight_changes_only_get_a_caveat() -> None:
    evidences = sources(FILLERS[0], ANSWER_TEXT)
    reworded = f"{ANSWER_TEXT} (TPM)"  # the same answer with an aside
    replies = {"p1:1": [ANSWER_TEXT] * 3, "p2:2": [reworded] * 3}
    answerer = ScriptedAnswerer(evidences, replies)
    expl = explain(QUESTION, Answer(text=ANSWER_TEXT), evidences, answerer=answerer, embedder=HashEmbedder())
    assert 0 < (expl.clusters[1].contribution or 0) < 0.02 and not expl.degenerate
    assert "changed the answer only slightly" in expl.note


def test_lower_temperature_sharpens_the_distribution() -> None:
    evidences = sources(FILLERS[0], ANSWER_TEXT, FILLERS[2])
    # every removal changes the answer, the middle one most
    replies = {
        "p1:1": [f"{ANSWER_TEXT} (TPM)"],
        "p2:2": [NOT_FOUND],
        "p3:3": [f"{ANSWER_TEXT} Nightly jobs run too."],
    }
    shares = {
        t: explain(
            QUESTION,
            Answer(text=ANSWER_TEXT),
            evidences,
            answerer=ScriptedAnswerer(evidences, replies),
            repeats=1,
            embedder=HashEmbedder(),
            temperature=t,
        ).evidence_shares
        for t in (0.05, 0.2, 1.0)
    }
    assert shares[0.05][1] > shares[0.2][1] > shares[1.0][1] > 1 / 3
    assert all(int(np.argmax(s)) == 1 for s in shares.values())
    assert all(min(s) > 0 for s in shares.values())


def test_a_cluster_whose_removal_changed_nothing_gets_zero() -> None:
    evidences = sources(*FILLERS[:3], ANSWER_TEXT, FILLERS[3])
    expl = explain_own_answer(KeywordAnswerer("TPM"), evidences)
    assert expl.evidence_shares == pytest.approx((0.0, 0.0, 0.0, 1.0, 0.0))
    unchanged = [c for c in expl.clusters if c.positions != (4,)]
    assert len(unchanged) == 4 and all(c.scored and c.contribution == 0.0 for c in unchanged)
    assert not expl.degenerate and expl.pages[0].page_id == "p4"


def test_naive_baseline_follows_similarity_to_the_answer() -> None:
    evidences = sources(FILLERS[0], FILLERS[1], ANSWER_TEXT)
    answerer = KeywordAnswerer("TPM")
    expl = explain_own_answer(answerer, evidences)
    assert int(np.argmax(expl.naive_shares)) == 2 and sum(expl.naive_shares) == pytest.approx(1.0)
    assert naive_accuracy(expl, {"p3"}) and not naive_accuracy(expl, {"p1"})
    assert expl.naive_temperature == 0.05


def test_clusters_by_raw_text_and_embeds_in_two_batches() -> None:
    # The same text on two pages is redundant content even though its page context differs.
    evidences = sources(FILLERS[0], ANSWER_TEXT, FILLERS[2], ANSWER_TEXT)
    assert evidences[1].context_text != evidences[3].context_text
    answerer = KeywordAnswerer("TPM")
    embedder = HashEmbedder()
    answer = answerer.answer(QUESTION, evidences)
    expl = explain(QUESTION, answer, evidences, answerer=answerer, embedder=embedder)
    assert [c.positions for c in expl.clusters] == [(1,), (2, 4), (3,)]
    raw, contextualized = [e.text for e in evidences], [e.context_text for e in evidences]
    assert embedder.batches[0] == raw + contextualized  # one call for both views of the evidence
    # then a, q + a and q + a_i per cluster, each distinct text once: removing 1 or 3 leaves q + a unchanged
    answers = [ANSWER_TEXT, f"{QUESTION} {ANSWER_TEXT}", f"{QUESTION} {NOT_FOUND}"]
    assert embedder.batches[1:] == [answers]

    # the index's context vectors are used for the naive baseline instead of embedding them again
    embedder.batches.clear()
    given = np.ones((4, 512), dtype=np.float32)  # all alike: the naive shares come out uniform
    expl = explain(
        QUESTION, answer, evidences, answerer=answerer, embedder=embedder, evidence_embeddings=given
    )
    assert embedder.batches[0] == raw and expl.naive_shares == pytest.approx((0.25,) * 4)
    with pytest.raises(ValueError):
        explain(
            QUESTION, answer, evidences, answerer=answerer, embedder=embedder, evidence_embeddings=given[:2]
        )


# --- failures and concurrency -----------------------------------------------------------------------------


class FailingAnswerer(KeywordAnswerer):
    """Fails whenever source `missing` is removed: `failures` times in a row, then answers."""

    def __init__(self, keyword: str, missing: str, failures: int) -> None:
        super().__init__(keyword)
        self.missing, self.failures = missing, failures

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        if self.missing not in present(evidences):
            with self._lock:
                self.failures -= 1
                fail = self.failures >= 0
            if fail:
                raise ChatError("the model endpoint timed out")
        return super().answer(question, evidences)


def test_a_failing_call_is_retried_once() -> None:
    evidences = sources(FILLERS[0], ANSWER_TEXT, FILLERS[2])
    answerer = FailingAnswerer("TPM", missing="p2:2", failures=1)
    expl = explain_own_answer(answerer, evidences)
    assert all(c.scored for c in expl.clusters)
    assert expl.answer_calls == 4  # three clusters, one of them answered on the retry
    assert answerer.calls == 1 + 3  # the original answer and three counterfactual ones
    assert max(expl.clusters, key=lambda c: c.share).positions == (2,)


def test_a_cluster_that_keeps_failing_is_reported_unscored() -> None:
    evidences = sources(FILLERS[0], ANSWER_TEXT, FILLERS[2])
    answerer = FailingAnswerer("TPM", missing="p2:2", failures=99)
    expl = explain_own_answer(answerer, evidences)
    failed = expl.clusters[1]
    assert not failed.scored and failed.share == 0.0 and failed.contribution is None
    assert failed.error == "ChatError: the model endpoint timed out"
    assert expl.answer_calls == 4  # 2 attempts for the failing cluster, 1 each for the others
    assert [c.scored for c in expl.clusters] == [True, False, True]
    assert sum(expl.evidence_shares) == pytest.approx(1.0)
    assert "Cluster 2 could not be scored" in expl.note
    assert "not scored (ChatError: the model endpoint timed out) cluster 2" in render_explanation(expl)


def test_a_cluster_with_some_repeats_answered_is_scored_over_those() -> None:
    evidences = sources(FILLERS[0], ANSWER_TEXT, FILLERS[2])
    answerer = FailingAnswerer("TPM", missing="p2:2", failures=2)  # one repeat fails, and its retry too
    expl = explain_own_answer(answerer, evidences, repeats=3, max_workers=1)
    partly = expl.clusters[1]
    assert partly.scored and len(partly.similarities) == 2 and partly.error.startswith("ChatError")
    assert expl.answer_calls == 3 * 3 + 1
    assert expl.note == ""


class BarrierAnswerer(KeywordAnswerer):
    """Every call waits until `parties` calls are in flight together; records the most seen at once."""

    def __init__(self, keyword: str, parties: int) -> None:
        super().__init__(keyword)
        self.barrier = threading.Barrier(parties, timeout=10)
        self.in_flight = self.max_in_flight = 0

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self.barrier.wait()  # raises BrokenBarrierError if the calls do not overlap
            return super().answer(question, evidences)
        finally:
            with self._lock:
                self.in_flight -= 1


def test_all_counterfactual_calls_run_concurrently() -> None:
    evidences = [evidence(n, FILLERS[n % 4] + f" Item {n}.") for n in range(1, 9)] + [
        evidence(9, ANSWER_TEXT)
    ]
    answerer = BarrierAnswerer("TPM", parties=9 * 3)
    expl = explain_own_answer(answerer, evidences, Answer(text=ANSWER_TEXT), repeats=3, max_workers=32)
    assert len(expl.clusters) == 9 and all(c.scored for c in expl.clusters)
    assert answerer.calls == expl.answer_calls == 27
    assert answerer.max_in_flight == 27


def test_concurrency_is_bounded_by_max_workers() -> None:
    evidences = [evidence(n, FILLERS[n - 1]) for n in range(1, 4)] + [evidence(4, ANSWER_TEXT)]
    answerer = BarrierAnswerer("TPM", parties=2)
    expl = explain_own_answer(answerer, evidences, Answer(text=ANSWER_TEXT), max_workers=2)
    assert all(c.scored for c in expl.clusters) and answerer.calls == 4
    assert answerer.max_in_flight == 2


# --- output -----------------------------------------------------------------------------------------------


def test_explanation_round_trips_through_json() -> None:
    evidences = [evidence(1, FILLERS[0]), evidence(2, ANSWER_TEXT, page="p1"), evidence(3, FILLERS[2])]
    answerer = FailingAnswerer("TPM", missing="p3:3", failures=99)
    expl = explain_own_answer(answerer, evidences)
    restored = Explanation.from_dict(json.loads(json.dumps(expl.to_dict())))
    assert restored == expl
    assert restored.pages[0].page_id == "p1"  # two evidences of p1 summed


def test_share_bar_uses_eighth_blocks() -> None:
    assert share_bar(0.673) == "██████▊"
    assert share_bar(1.0) == "██████████"
    assert share_bar(0.05) == "▌"
    assert share_bar(0.0) == ""


def test_rendering_lists_clusters_by_share_with_bars_and_sources() -> None:
    evidences = sources(FILLERS[0], ANSWER_TEXT, FILLERS[2], ANSWER_TEXT)
    answerer = KeywordAnswerer("TPM")
    expl = explain_own_answer(answerer, evidences, temperature=0.2)
    lines = render_explanation(expl, show_answers=True).splitlines()
    assert lines[0].startswith("Which sources caused the answer")
    cluster_lines = [line for line in lines if " cluster " in line]
    assert re.fullmatch(r"\d+\.\d% [█▏▎▍▌▋▊▉]+ cluster 2 — \[2\] Page p2, \[4\] Page p4", cluster_lines[0])
    percentages = [float(line.split("%")[0]) for line in cluster_lines]
    assert percentages == sorted(percentages, reverse=True) and sum(percentages) == pytest.approx(
        100, abs=0.2
    )
    assert f"    without it: {NOT_FOUND}" in lines


def test_nothing_to_explain() -> None:
    answerer = KeywordAnswerer("TPM")
    expl = explain(
        QUESTION, Answer(text=NOT_FOUND, not_found=True), [], answerer=answerer, embedder=HashEmbedder()
    )
    assert expl.clusters == () and expl.answer_calls == 0 and answerer.calls == 0
    assert render_explanation(expl) == "No sources to explain."
    assert not explanation_accuracy(expl, {"p1"}) and not naive_accuracy(expl, {"p1"})


def test_not_found_answer_is_degenerate_with_a_plain_note() -> None:
    evidences = sources(FILLERS[0], FILLERS[1])
    answerer = KeywordAnswerer("TPM")
    expl = explain_own_answer(answerer, evidences)
    assert expl.degenerate and "did not hold the answer" in expl.note
    assert expl.evidence_shares == pytest.approx((0.5, 0.5))


def test_calls_per_cluster_counted_by_cluster() -> None:
    # sanity for the trace: each cluster's counterfactual answers came from calls without that cluster
    evidences = sources(FILLERS[0], ANSWER_TEXT, ANSWER_TEXT)
    seen: dict[frozenset[str], int] = defaultdict(int)

    class Recording(KeywordAnswerer):
        def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer:
            with self._lock:
                seen[frozenset(present(evidences))] += 1
            return super().answer(question, evidences)

    answerer = Recording("TPM")
    explain_own_answer(answerer, evidences, repeats=2)
    seen[frozenset({"p1:1", "p2:2", "p3:3"})] -= 1  # the original answer
    assert {k: v for k, v in seen.items() if v} == {frozenset({"p2:2", "p3:3"}): 2, frozenset({"p1:1"}): 2}


class RankingReader(KeywordAnswerer):
    """A KeywordAnswerer that, like the extractive one, refuses when retrieval's rankings disagreed."""

    reads_rankings = True

    def __init__(self, keyword: str) -> None:
        super().__init__(keyword)
        self.flags: list[bool] = []

    def answer(self, question: str, evidences: Sequence[Evidence], *, rankings_agree: bool = True) -> Answer:  # type: ignore[override]
        with self._lock:
            self.flags.append(rankings_agree)
        if not rankings_agree:
            return Answer(text=NOT_FOUND, not_found=True, answerer=self.name)
        return super().answer(question, evidences)


def test_counterfactuals_are_answered_as_the_answer_was_when_rankings_disagreed() -> None:
    """A 'not found' given because the lexical and dense rankings disagreed is explained by counterfactuals
    that weigh the same: none of them answers, so no source caused it (before, each was answered as if the
    rankings agreed, found the keyword, and the other sources took the blame for a "not found")."""
    answerer = RankingReader("TPM")
    evidences = sources(ANSWER_TEXT, *FILLERS)
    refused = answerer.answer(QUESTION, evidences, rankings_agree=False)
    expl = explain(
        QUESTION, refused, evidences, answerer=answerer, embedder=HashEmbedder(), rankings_agree=False
    )
    assert answerer.flags[1:] and not any(answerer.flags[1:])
    assert "no source caused it" in expl.note
    ignoring = explain(QUESTION, refused, evidences, answerer=RankingReader("TPM"), embedder=HashEmbedder())
    assert "no source caused it" not in ignoring.note  # what Explain said before: fillers to blame
    answerer.flags.clear()
    explain(
        QUESTION, answerer.answer(QUESTION, evidences), evidences, answerer=answerer, embedder=HashEmbedder()
    )
    assert answerer.flags and all(answerer.flags)
