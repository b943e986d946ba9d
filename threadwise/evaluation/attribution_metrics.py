"""How Explain is scored in the benchmark (paper Sec. 7.1): is the top-attributed evidence on a gold page?"""

from __future__ import annotations

from collections.abc import Collection

from threadwise.core.attribute.explanation import Explanation, SourceRef


def top_source(expl: Explanation) -> SourceRef | None:
    """The evidence with the highest share. Ties (the members of one cluster, or a degenerate result) go to
    a source the answer cites, then to the better-ranked one: the answerer's and the retriever's word."""
    sources = expl.sources()
    if not sources:
        return None
    return max(
        sources,
        key=lambda s: (expl.evidence_shares[s.position - 1], s.position in expl.cited, -s.position),
    )


def naive_top_source(expl: Explanation) -> SourceRef | None:
    """The evidence most similar to the answer (the paper's naive attribution)."""
    sources = expl.sources()
    if not sources:
        return None
    return max(sources, key=lambda s: (expl.naive_shares[s.position - 1], -s.position))


def _is_gold(source: SourceRef | None, gold_pages: Collection[str]) -> bool:
    return source is not None and (source.page_id in gold_pages or source.url in gold_pages)


def explanation_accuracy(expl: Explanation, gold_pages: Collection[str]) -> bool:
    """Whether the top-attributed evidence comes from a gold page (given as page ids or URLs)."""
    return _is_gold(top_source(expl), gold_pages)


def naive_accuracy(expl: Explanation, gold_pages: Collection[str]) -> bool:
    """Whether the evidence most similar to the answer comes from a gold page (given as page ids or URLs)."""
    return _is_gold(naive_top_source(expl), gold_pages)
