"""The HTML report's two pictures as inline SVG, written by hand: questions per day (answered / not found /
👎, stacked) and unanswered topics by size. No script, no font or library from the internet; each scales to
the screen's width (a phone's too) through its viewBox."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from threadwise.reports.model import DayCount, TopicGroup

# the legend says "voted down" in words: an SVG's emoji needs an emoji font, which a server or a phone may lack
COLOURS = {"answered": "#2e7d32", "not found": "#ef6c00", "voted down": "#c62828"}
WIDTH = 400  # the drawing's own width: on a phone it is drawn at about this size, so its text stays legible


def _legend(y: float) -> str:
    parts, x = [], 0.0
    for label, colour in COLOURS.items():
        parts.append(
            f'<rect x="{x:.0f}" y="{y:.0f}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{x + 16:.0f}" y="{y + 11:.0f}" font-size="12">{escape(label)}</text>'
        )
        x += 16 + 7 * len(label) + 14
    return "".join(parts)


def per_day_chart(days: Sequence[DayCount], *, width: int = WIDTH, height: int = 200) -> str:
    """Stacked bars, one a day: answered, not found, 👎 (bottom to top)."""
    top = max((d.answered + d.not_found + d.down_votes for d in days), default=0) or 1
    plot_h, left, bottom = height - 60, 34, height - 40
    step = (width - left - 16) / max(len(days), 1)  # room on the right for the last date
    bars = []
    for i, d in enumerate(days):
        x, y = left + i * step, float(bottom)
        for count, colour in zip((d.answered, d.not_found, d.down_votes), COLOURS.values(), strict=True):
            if not count:
                continue
            h = count / top * plot_h
            y -= h
            bars.append(
                f'<rect x="{x + step * 0.1:.1f}" y="{y:.1f}" width="{step * 0.8:.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{d.date}: {count}</title></rect>'
            )
    labels = [
        f'<text x="{left + i * step + step / 2:.1f}" y="{bottom + 14}" font-size="10" text-anchor="middle">'
        f"{d.date[5:]}</text>"
        for i, d in enumerate(days)
        if i % max(1, len(days) // 5) == 0
    ]
    axis = (
        f'<line x1="{left}" y1="{bottom}" x2="{width - 16}" y2="{bottom}" stroke="#999"/>'
        f'<text x="{left - 4}" y="{bottom - plot_h + 10:.0f}" font-size="10" text-anchor="end">{top}</text>'
        f'<text x="{left - 4}" y="{bottom}" font-size="10" text-anchor="end">0</text>'
    )
    total = sum(d.answered + d.not_found + d.down_votes for d in days)
    return (
        f'<svg id="chart-per-day" role="img" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg" font-family="sans-serif">'
        f"<title>Questions per day: {total} in {len(days)} days</title>"
        f"{axis}{''.join(bars)}{''.join(labels)}{_legend(height - 16)}</svg>"
    )


def topics_chart(groups: Sequence[TopicGroup], *, width: int = WIDTH, limit: int = 10) -> str:
    """Horizontal bars, the largest unanswered topics first: not found and 👎 apart."""
    shown = list(groups[:limit])
    row, label_h = 34, 14
    height = max(len(shown), 1) * row + 10
    top = max((g.count for g in shown), default=0) or 1
    bars = []
    for i, g in enumerate(shown):
        y = 4 + i * row
        topic = g.topic if len(g.topic) <= 60 else g.topic[:59] + "…"
        bars.append(f'<text x="0" y="{y + label_h - 3}" font-size="12">{escape(topic)}</text>')
        x = 0.0
        others = max(g.count - g.not_found, 0)
        for count, colour in ((g.not_found, COLOURS["not found"]), (others, COLOURS["voted down"])):
            if not count:
                continue
            w = count / top * (width - 40)
            bars.append(
                f'<rect x="{x:.1f}" y="{y + label_h}" width="{w:.1f}" height="12" fill="{colour}">'
                f"<title>{escape(g.topic)}: {count}</title></rect>"
            )
            x += w
        bars.append(f'<text x="{x + 4:.1f}" y="{y + label_h + 11}" font-size="11">{g.count}</text>')
    return (
        f'<svg id="chart-topics" role="img" viewBox="0 0 {width} {height}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg" font-family="sans-serif">'
        f"<title>Unanswered topics by size</title>{''.join(bars)}</svg>"
    )
