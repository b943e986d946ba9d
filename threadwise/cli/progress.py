"""Progress of long commands (sync, index, eval) on stderr.

On a terminal: one bar redrawn in place (done / total, rate, ETA). Elsewhere (logs, CI): one plain line every
`interval_s` seconds and one at the end, so a log shows the command is alive without a line per page.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class ProgressBar:
    """A callable `(done, total)` that draws the progress of one stage."""

    def __init__(
        self,
        label: str,
        *,
        unit: str = "pages",
        stream: TextIO | None = None,
        interval_s: float = 10.0,
        terminal: bool | None = None,
    ) -> None:
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.interval_s = interval_s if not self.terminal else 0.1
        self.started = time.monotonic()
        self._shown_at = -1e9
        self._finished = False

    def line(self, done: int, total: int) -> str:
        elapsed = time.monotonic() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"ETA {_duration((total - done) / rate)}" if 0 < rate and done < total else _duration(elapsed)
        counts = f"{done}/{total} {self.unit}, {rate:.1f} {self.unit}/s, {eta}"
        if not self.terminal:
            return f"{self.label}: {counts}"
        width = 24
        filled = int(width * done / total) if total else width
        return f"\r{self.label} [{'█' * filled}{'·' * (width - filled)}] {counts}\x1b[K"

    def __call__(self, done: int, total: int) -> None:
        if self._finished:
            return
        now = time.monotonic()
        last = done >= total
        if not last and now - self._shown_at < self.interval_s:
            return
        self._shown_at = now
        self.stream.write(self.line(done, total) + ("" if self.terminal and not last else "\n"))
        self.stream.flush()
        self._finished = last
