"""What a page asks for, as SQL over ``events``: a time window and the event filters.

No reading here: :mod:`nerve.ui.data` runs what these build.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from nerve.clock import PHYSICAL_MAX
from nerve.errors import UsageError
from nerve.events import AGENT_ACCESS

__all__ = ["Filters", "Window", "quoted", "where_of", "window"]

_DAY_NS = 86_400 * 10**9


@dataclass(frozen=True)
class Window:
    """A span of wall time in ns, ``since`` inclusive, ``until`` exclusive."""

    since: int
    until: int

    def to_json(self) -> dict[str, Any]:
        from nerve.tail import format_times

        a, b = format_times([self.since, self.until])
        return {"since_ns": self.since, "until_ns": self.until, "since": a, "until": b}


def window(since: str | None, until: str | None, *, now_ns: int | None = None) -> Window:
    """``since``/``until`` as ns, an ISO time, an HLC stamp or a duration ago (``2h``);
    by default the day so far (local midnight to now)."""
    now = now_ns or time.time_ns()
    hi = _instant(until, "until", now) or now + 1
    lo = _instant(since, "since", now)
    if lo is None:
        lo = _midnight(now) if until is None else hi - _DAY_NS
    if lo >= hi:
        raise UsageError(f"since ({since}) must be before until ({until})", field="since")
    return Window(lo, hi)


def _instant(text: str | None, name: str, now: int) -> int | None:
    from nerve.tail import parse_instant

    if text is None or not text.strip():
        return None
    if text.strip().isdigit() and len(text.strip()) > 12:
        return _ns(text.strip(), name)
    try:
        return parse_instant(text, now_ns=now).physical_ns
    except UsageError as exc:
        raise UsageError(f"{name}: {exc}", field=name) from None


def _ns(digits: str, name: str) -> int:
    """Nanoseconds since the epoch, given as digits; past what a stamp holds is refused."""
    if len(digits.lstrip("0")) > len(str(PHYSICAL_MAX)) or int(digits) > PHYSICAL_MAX:
        shown = digits if len(digits) <= 24 else f"{digits[:20]}… ({len(digits)} digits)"
        raise UsageError(f"{name}: {shown} is past the last instant a stamp holds (2^63-1 ns)",
                         field=name)  # fmt: skip
    return int(digits)


def _midnight(now_ns: int) -> int:
    from datetime import datetime

    local = datetime.fromtimestamp(now_ns / 1e9).astimezone()
    return int(local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()) * 10**9


@dataclass(frozen=True)
class Filters:
    """What the events page and the live tail narrow to."""

    text: str = ""
    sources: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    subject: str = ""
    trust: str = ""
    everything: bool = False  # bookkeeping kinds too
    host: str = ""  # in a fleet: that host's shipped events ("": this host's log)


def where_of(f: Filters, win: Window | None) -> tuple[str, list[Any]]:
    from nerve.tail import tail_filter

    parts: list[str] = ["TRUE"]
    args: list[Any] = []
    filt = tail_filter(list(f.kinds), list(f.sources), all_kinds=f.everything)
    if win is not None:
        parts.append("physical_ns >= ? AND physical_ns < ?")
        args += [win.since, win.until]
    if filt.sources:
        parts.append(f"source IN ({', '.join(str(int(s)) for s in filt.sources)})")
    if filt.kinds:
        parts.append("list_contains(?::VARCHAR[], kind)")
        args.append(list(filt.kinds))
    hidden = {*filt.hidden, AGENT_ACCESS} if filt.hidden else set()
    if hidden:
        parts.append(f"kind NOT IN ({quoted(hidden)})")
    if f.subject:
        parts.append("subject = ?")
        args.append(f.subject)
    if f.trust:
        parts.append("lower(trust_name) = lower(?)")
        args.append(f.trust)
    if f.text:  # the text as given, any case; the payload's JSON text, unparsed
        needle = "lower(?::VARCHAR)"
        parts.append(f"(contains(lower(line), {needle}) OR "
                     f"contains(lower(TRY(decode(payload))), {needle}))")  # fmt: skip
        args += [f.text] * 2
    return " AND ".join(parts), args


def quoted(names: Any) -> str:
    return ", ".join("'" + str(n).replace("'", "''") + "'" for n in sorted(names))
