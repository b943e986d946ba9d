"""Ranked lists as the retrieval stages produce them, kept whole for the trace."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hit:
    """One entry of a ranked list: which evidence, its score in that stage, its 1-based rank."""

    evidence_id: str
    score: float
    rank: int
