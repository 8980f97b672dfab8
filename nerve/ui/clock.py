"""How the pages say a moment and a span: local 24-hour clock times and durations in words
(the templates' ``clock`` and ``duration`` filters, and the timeline's tooltips)."""

from __future__ import annotations

import time

__all__ = ["clock", "duration"]


def clock(ns: int | None, seconds: bool = True) -> str:
    """A moment as local 24-hour time: ``14:03:22`` (``14:03`` without seconds)."""
    if ns is None:
        return ""
    t = time.localtime(int(ns) // 10**9)
    return (
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
        if seconds
        else f"{t.tm_hour:02d}:{t.tm_min:02d}"
    )


def duration(ns: int | None) -> str:
    """A span in words a person reads: ``2 h 05 min``, ``12 min``, ``40 s``."""
    seconds = max(0, int(ns or 0) // 10**9)
    hours, rest = divmod(seconds, 3600)
    if hours:
        return f"{hours} h {rest // 60:02d} min"
    return f"{rest // 60} min" if rest >= 60 else f"{rest} s"
