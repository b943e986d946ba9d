"""What another process has used so far, read from /proc (Linux): its CPU seconds and its memory."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak) of a process, in kB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def memory_mb(pid: int) -> dict[str, int]:
    """A process's resident memory now (`rss`) and at its highest so far (`peak`), in MB."""
    kb = memory_kb(pid)
    return {"rss": round(kb["VmRSS"] / 1024), "peak": round(kb["VmHWM"] / 1024)}
