"""How the pages say a moment and a span: local 24-hour clock times and durations in words
(the templates' ``clock`` and ``duration`` filters, and the timeline's tooltips)."""

from __future__ import annotations

import time

__all__ = ["clock", "duration", "moment", "moment_after"]


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


def moment(stamp: int | str, now_ns: int | None = None) -> str:
    """A moment (ns, or an event's stamp ``physical.logical``) as a list shows it: the clock
    time for today's, with the day before it for another day's (``05 Dec 19:24:10``)."""
    ns = int(str(stamp).partition(".")[0])
    day = time.localtime(ns // 10**9)[:3]
    if day == time.localtime((now_ns or time.time_ns()) // 10**9)[:3]:
        return clock(ns)
    return time.strftime("%d %b ", time.localtime(ns // 10**9)) + clock(ns)


def moment_after(stamp: int | str, start: int | str, now_ns: int | None = None) -> str:
    """The end of a span that began at ``start``, as :func:`moment` says it but with its day
    whenever the span began on another day: ``30 Nov 04:47:22 → 07 Dec 04:47:22``, never
    ``30 Nov 04:47:22 → 04:47:22``, which reads as no time at all."""
    ns = int(str(stamp).partition(".")[0])
    began = int(str(start).partition(".")[0])
    if time.localtime(ns // 10**9)[:3] == time.localtime(began // 10**9)[:3]:
        return moment(ns, now_ns)
    return time.strftime("%d %b ", time.localtime(ns // 10**9)) + clock(ns)


def duration(ns: int | None) -> str:
    """A span in words a person reads: ``2 h 05 min``, ``12 min``, ``40 s``."""
    seconds = max(0, int(ns or 0) // 10**9)
    hours, rest = divmod(seconds, 3600)
    if hours:
        return f"{hours} h {rest // 60:02d} min"
    return f"{rest // 60} min" if rest >= 60 else f"{rest} s"
