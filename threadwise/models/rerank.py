"""Cross-encoder re-ranking through FlagEmbedding's `FlagReranker` (bge-reranker-v2-m3 in production)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any


class FlagCrossEncoder:
    """bge-reranker from a hub id or a local directory; loaded once, on first use or `warm_up()`."""

    def __init__(
        self,
        *,
        model: str = "BAAI/bge-reranker-v2-m3",
        device: str | None = None,
        use_fp16: bool = False,
        max_length: int = 512,
    ) -> None:
        self.name = model.rstrip("/").rsplit("/", 1)[-1]
        self.model_name_or_path = model
        self.device = device
        self.use_fp16 = use_fp16
        self.max_length = max_length
        self._model: Any = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        with self._lock:
            if self._model is None:
                from threadwise.models.extras import import_extra

                flag = import_extra("FlagEmbedding", what="Re-ranking (THREADWISE_RERANKER_MODEL)")
                self._model = flag.FlagReranker(
                    self.model_name_or_path, use_fp16=self.use_fp16, devices=self.device
                )

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        self.warm_up()
        scores = self._model.compute_score([[query, p] for p in passages], max_length=self.max_length)
        if isinstance(scores, float | int):
            scores = [scores]
        return [float(s) for s in scores]
