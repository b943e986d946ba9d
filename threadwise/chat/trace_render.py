"""Readable rendering of a turn's trace, for `threadwise trace`, `/trace` in chat, and Slack's private view."""

from __future__ import annotations

import json
from typing import Any


def _hits(title: str, hits: list[dict[str, Any]], limit: int = 10) -> list[str]:
    if not hits:
        return []
    lines = [f"  {title}:"]
    for h in hits[:limit]:
        lines.append(f"    {h['rank']:>2}. {h['evidence_id']:<24} {h['score']:.4f}")
    return lines


def render_trace(trace: dict[str, Any], *, prompts: bool = True) -> str:
    lines = [
        f"Turn {trace.get('turn_id', '?')}",
        f"  question:           {trace.get('question', '')}",
        f"  completed question: {trace.get('completed_question', '')}  ({trace.get('completion_method', '')})",
    ]
    if trace.get("error"):
        lines.append(f"  error: {trace['error']}")
    retrieval = trace.get("retrieval", {})
    for stage in ("lexical", "dense", "fused", "reranked"):
        lines += _hits(stage, retrieval.get(stage, []))
    if trace.get("sources"):
        lines.append("  sources shown:")
        for s in trace["sources"]:
            sc = s.get("scores", {})
            parts = [f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in sc.items()]
            lines.append(f"    [{s['number']}] {s['label']} ({s['kind']}) {' '.join(parts)}")
    if trace.get("timings_ms"):
        lines.append("  timings (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in trace["timings_ms"].items()))
    if trace.get("answerer"):
        lines.append(f"  answerer: {trace['answerer']}")
    if trace.get("confidence"):
        c = trace["confidence"]
        lines.append(f"  confidence: {c['score']:.2f} ({c['level']}: {c['reason']})")
    for call in trace.get("llm_calls", []) if prompts else []:
        lines.append(f"  --- {call['role']} call to {call['model']} ({call['ms']:.0f} ms) ---")
        for m in call["messages"]:
            lines.append(f"  [{m['role']}]\n{m['content']}")
        lines.append(f"  [completion]\n{call['completion']}")
    for name, answers in trace.get("counterfactual_answers", {}).items():
        lines.append(f"  counterfactual answers without {name}: " + json.dumps(answers, ensure_ascii=False))
    return "\n".join(lines)
