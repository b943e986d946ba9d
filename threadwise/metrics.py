"""Prometheus metrics: what the bot does, served at `/metrics` on the Slack and Teams ports.

The platform-neutral code records (`conversations.py`: questions, stages, Explain, votes; `sync/sync.py` and
`sync/permission_sync.py`: runs; `models/openai_chat.py`: LLM calls and tokens); the front ends only serve
`exposition()`. With PROMETHEUS_MULTIPROC_DIR set (replicas or workers
sharing a host; the folder must exist and be emptied before the processes start) every process writes its
samples there and a scrape sums them, as prometheus-client's multi-process mode does. The index's size and
the questions waiting for a worker are read at scrape time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

if TYPE_CHECKING:
    from threadwise.index.store import EvidenceIndex

_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)

REGISTRY = CollectorRegistry(auto_describe=True)

QUESTIONS = Counter(
    "threadwise_questions",
    "Questions asked, by platform and outcome (answered, not_found, refused, failed)",
    ["platform", "outcome"],
    registry=REGISTRY,
)
ANSWER_SECONDS = Histogram(
    "threadwise_answer_seconds",
    "Time from a question to its stored answer, by platform",
    ["platform"],
    buckets=_SECONDS,
    registry=REGISTRY,
)
STAGE_SECONDS = Histogram(
    "threadwise_stage_seconds",
    "Time of one stage: completion, retrieval, answer (of a question), attribution (of an Explain)",
    ["stage"],
    buckets=_SECONDS,
    registry=REGISTRY,
)
EXPLAINS = Counter(
    "threadwise_explains",
    "Explain requests, by result (computed, cached, failed)",
    ["result"],
    registry=REGISTRY,
)
VOTES = Counter("threadwise_votes", "Votes on answers, by vote (up, down)", ["vote"], registry=REGISTRY)
LLM_ERRORS = Counter(
    "threadwise_llm_errors",
    "Questions and Explains the language model failed, by what",
    ["what"],
    registry=REGISTRY,
)
LLM_CALLS = Counter(
    "threadwise_llm_calls",
    "Requests to the language model, by model and result (ok, error: after the client's retries)",
    ["model", "result"],
    registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "threadwise_llm_tokens",
    "Tokens the language model reported, by model and kind (prompt, completion)",
    ["model", "kind"],
    registry=REGISTRY,
)
SYNC_RUNS = Counter(
    "threadwise_sync_runs",
    "Sync runs of a space, by result (ok, partial, failed, busy)",
    ["result"],
    registry=REGISTRY,
)
SYNC_PAGES = Counter(
    "threadwise_sync_pages",
    "Pages a sync changed, by change (added, updated, deleted, failed)",
    ["change"],
    registry=REGISTRY,
)
SYNC_SECONDS = Histogram(
    "threadwise_sync_seconds",
    "Duration of a sync run of a space",
    buckets=(1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0),
    registry=REGISTRY,
)
SYNC_LAST_OK = Gauge(
    "threadwise_sync_last_success_timestamp_seconds",
    "When a sync run of a space last ended ok or partial (Unix time)",
    multiprocess_mode="max",
    registry=REGISTRY,
)
PERMISSION_RUNS = Counter(
    "threadwise_permission_sync_runs",
    "Permission sync runs of a space, by result (ok, failed, busy, skipped)",
    ["result"],
    registry=REGISTRY,
)
PERMISSION_LAST_OK = Gauge(
    "threadwise_permission_sync_last_success_timestamp_seconds",
    "When a permission sync of a space last ended ok (Unix time)",
    multiprocess_mode="max",
    registry=REGISTRY,
)

QUEUE_WAIT_SECONDS = Histogram(
    "threadwise_queue_wait_seconds",
    "Time a question or Explain waited in the fair pool before a worker took it up",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
    registry=REGISTRY,
)

# the text format every Prometheus reads (prometheus-client's own default names a newer version, for the same body)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
IndexSize = Callable[[], tuple[int, int]]  # (pages, evidences)


def outcome(*, failed: bool, withheld: bool, not_found: bool) -> str:
    """failed (an error reply), refused (the answer held pages only the asker may read: told privately, not in
    the channel), not_found, or answered."""
    if failed:
        return "failed"
    if withheld:
        return "refused"
    return "not_found" if not_found else "answered"


def question(platform: str, outcome: str, seconds: float, stages_ms: dict[str, float]) -> None:
    """Record one answered (or not) question: its outcome, its time and its stages' times."""
    QUESTIONS.labels(platform=platform or "unknown", outcome=outcome).inc()
    ANSWER_SECONDS.labels(platform=platform or "unknown").observe(seconds)
    for stage in ("completion", "retrieval", "answer"):
        if stage in stages_ms:
            STAGE_SECONDS.labels(stage=stage).observe(stages_ms[stage] / 1000)


def llm_call(model: str, *, ok: bool, usage: Any = None) -> None:
    """One request to the language model; `usage` as its reply reports it (some servers report none)."""
    LLM_CALLS.labels(model=model, result="ok" if ok else "error").inc()
    for kind in ("prompt", "completion"):
        tokens = getattr(usage, f"{kind}_tokens", None)
        if isinstance(tokens, int) and tokens > 0:
            LLM_TOKENS.labels(model=model, kind=kind).inc(tokens)


def sync_run(status: str, added: int, updated: int, deleted: int, failed: int, seconds: float) -> None:
    SYNC_RUNS.labels(result=status).inc()
    for change, n in (("added", added), ("updated", updated), ("deleted", deleted), ("failed", failed)):
        if n:
            SYNC_PAGES.labels(change=change).inc(n)
    if status != "busy":
        SYNC_SECONDS.observe(seconds)
    if status in ("ok", "partial"):
        SYNC_LAST_OK.set_to_current_time()


def permission_sync(status: str) -> None:
    PERMISSION_RUNS.labels(result=status).inc()
    if status == "ok":
        PERMISSION_LAST_OK.set_to_current_time()


class _ScrapeTime:
    """What is read when scraped: the index's size, the questions waiting for a worker of this process (a
    failing read leaves its gauges out)."""

    def __init__(self, size: IndexSize | None, waiting: Callable[[], int] | None) -> None:
        self.size = size
        self.waiting = waiting

    def collect(self) -> Iterator[Metric]:
        if self.waiting is not None:
            yield GaugeMetricFamily(
                "threadwise_questions_waiting",
                "Questions and Explains queued for a worker of this process",
                value=self.waiting(),
            )
        if self.size is None:
            return
        try:
            pages, evidences = self.size()
        except Exception:  # the database away: the scrape still answers, without these two
            return
        yield GaugeMetricFamily("threadwise_index_pages", "Pages in the evidence index", value=pages)
        yield GaugeMetricFamily(
            "threadwise_index_evidences", "Evidences in the evidence index", value=evidences
        )


def exposition(
    index_size: IndexSize | None = None, *, waiting: Callable[[], int] | None = None
) -> tuple[bytes, str]:
    """The body and content type of a `/metrics` reply (every process's samples in multi-process mode);
    `index_size` and `waiting` are read now."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client.multiprocess import MultiProcessCollector

        MultiProcessCollector(registry)
    else:
        registry.register(_Own())
    registry.register(_ScrapeTime(index_size, waiting))
    return generate_latest(registry), CONTENT_TYPE


class _Own:
    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def index_size_of(index: EvidenceIndex) -> IndexSize:
    """(pages, evidences) of an index."""

    def size() -> tuple[int, int]:
        return len(index.page_states()), index.count()

    return size
