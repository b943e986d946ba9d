"""The result of Explain (counterfactual attribution): clusters of sources, their shares, and the trace.

Stored with the turn as JSON (`Explanation.to_dict` / `from_dict`); computed by
`threadwise.core.attribute.attribution.explain`. Below the data: the evaluation helpers (is the top-attributed source on
a gold page?) and the plain-text rendering.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class SourceRef:
    """One evidence as the explanation shows it: its source number in the answer prompt, and where it is from."""

    position: int  # 1-based source number, as in "[Source N]"
    evidence_id: str
    page_id: str
    page_title: str
    url: str
    label: str  # "Page title (row 7)"
    kind: str


@dataclass(frozen=True)
class ClusterAttribution:
    """A group of redundant evidences, removed together, and what removing it did to the answer."""

    index: int  # 1-based; clusters are numbered by their best-ranked source
    sources: tuple[SourceRef, ...]
    share: float  # attribution, 0..1 (0 when unscored)
    contribution: float | None  # c_i = 1 - mean similarity; None when unscored
    similarities: tuple[float, ...]  # s_ij of the repeats that could be answered
    counterfactual_answers: tuple[str, ...]  # a_ij, the answers without this cluster
    scored: bool = True
    error: str = ""  # why (some) counterfactual calls failed

    @property
    def positions(self) -> tuple[int, ...]:
        return tuple(s.position for s in self.sources)


@dataclass(frozen=True)
class PageShare:
    """The attribution rolled up to a page."""

    page_id: str
    page_title: str
    url: str
    share: float


@dataclass(frozen=True)
class Explanation:
    """The result of Explain: store it with the turn (`to_dict`), show it with `render_explanation`."""

    question: str
    answer: str
    cited: tuple[int, ...]  # the source numbers the answer cites
    clusters: tuple[ClusterAttribution, ...]  # in cluster-number order
    evidence_shares: tuple[float, ...]  # by source position (index 0 = [Source 1]): its cluster's share
    naive_shares: tuple[float, ...]  # by source position
    pages: tuple[PageShare, ...]  # largest share first
    degenerate: bool  # no removal changed the answer: the shares are uniform and say nothing
    note: str  # one sentence for users when the shares need a caveat ("" otherwise)
    answer_calls: int  # counterfactual answer calls made, retries included
    repeats: int
    temperature: float
    naive_temperature: float
    eps: float
    min_samples: int
    answerer: str = ""
    embedder: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)  # cluster, counterfactual, embed, total

    def sources(self) -> list[SourceRef]:
        """All evidences, by source position."""
        return sorted((s for c in self.clusters for s in c.sources), key=lambda s: s.position)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Explanation:
        clusters = tuple(
            ClusterAttribution(
                **{
                    **c,
                    "sources": tuple(SourceRef(**s) for s in c["sources"]),
                    "similarities": tuple(c["similarities"]),
                    "counterfactual_answers": tuple(c["counterfactual_answers"]),
                }
            )
            for c in data["clusters"]
        )
        return cls(
            **{
                **data,
                "clusters": clusters,
                "evidence_shares": tuple(data["evidence_shares"]),
                "naive_shares": tuple(data["naive_shares"]),
                "cited": tuple(data.get("cited", ())),  # absent in explanations stored before it was kept
                "pages": tuple(PageShare(**p) for p in data["pages"]),
                "timings_ms": dict(data.get("timings_ms", {})),
            }
        )


# ---------------------------------------------------------------------------------------------------------
# Rendering

_PARTIAL_BLOCKS = " ▏▎▍▌▋▊▉"  # 0/8 .. 7/8 of a character cell


def share_bar(share: float, width: int = 10) -> str:
    """A bar `width` cells long at 100%, in eighths of a cell: 0.673 -> '██████▊'."""
    eighths = round(max(0.0, min(1.0, share)) * width * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + _PARTIAL_BLOCKS[rest]).rstrip()


def render_explanation(expl: Explanation, *, show_answers: bool = False) -> str:
    """One line per cluster, largest share first: '67.3% ██████▊ cluster 1 — [1] Page (row 7), [2] …'."""
    if not expl.clusters:
        return "No sources to explain."
    seconds = expl.timings_ms.get("total", 0.0) / 1000
    lines = [
        f"Which sources caused the answer (each group removed and the question answered again; "
        f"{expl.answer_calls} answer call{'s' if expl.answer_calls != 1 else ''}, {seconds:.1f} s):"
    ]
    if expl.note:
        lines.append(expl.note)
    ordered = sorted(expl.clusters, key=lambda c: (not c.scored, -c.share, c.index))
    for c in ordered:
        sources = ", ".join(f"[{s.position}] {s.label}" for s in c.sources)
        if c.scored:
            head = f"{c.share * 100:.1f}% {share_bar(c.share)}".rstrip()
        else:
            head = f"not scored ({c.error})" if c.error else "not scored"
        lines.append(f"{head} cluster {c.index} — {sources}")
        if show_answers:
            lines.extend(f"    without it: {_one_line(a)}" for a in c.counterfactual_answers)
    return "\n".join(lines)


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
