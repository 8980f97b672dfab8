"""Why a tick did not run: counted per sense and reason, recorded as ``sense.skipped``.

A tick is skipped when a compute returns ``nerve.Skip(reason)`` (``by: compute``) or when the
scheduler does not start it (``by: scheduler``): ``throttle``, ``grace``, ``overlap`` (the
previous compute still queued or running), ``paused``, ``backoff``, ``restarting`` (the group's
worker), ``late`` (interval ticks the loop fell behind on) and ``missed`` (ticks that fell in a
downtime or a sleep and that the sense's ``catch_up`` does not run).

A skip for a reason not recorded for its sense within the last ``fold`` window (60 s) is
recorded at once, and so is the first skip after a compute when the sense's newest record is
at least ``spacing`` (10 s) old. Repeats are folded: they are only counted, and the count
goes out as one record when the window ends (or when the daemon stops). So a sense writes at
most one record per reason per minute plus one per ten seconds, however often it ticks and
computes (200 senses skipping 20 times a second write at most ~20 records a second, not 4,000),
and reasons that alternate do not defeat the folding.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FOLD_NS = 60 * 1_000_000_000
SPACING_NS = 10 * 1_000_000_000  # a compute makes the next skip news again after this long
KIND = "sense.skipped"

Record = Callable[[str, str, dict[str, Any]], None]  # sense, line, payload


@dataclass
class _Pending:
    count: int = 0
    first_ns: int = 0
    last_ns: int = 0


@dataclass
class _SenseSkips:
    totals: dict[str, int] = field(default_factory=dict)  # reason -> skips since start
    recorded: dict[str, int] = field(default_factory=dict)  # reason -> when last recorded
    pending: dict[str, _Pending] = field(default_factory=dict)  # reason -> folded, unwritten
    by: dict[str, str] = field(default_factory=dict)  # reason -> compute | scheduler
    last_reason: str | None = None  # the newest reason noted
    computed: bool = True  # a compute ran since the last record
    last_record_ns: int = 0


class Skips:
    """The skip counters of every sense and the records they turn into."""

    def __init__(
        self,
        record: Record,
        *,
        clock: Callable[[], int] = time.time_ns,
        fold_ns: int = FOLD_NS,
        spacing_ns: int = SPACING_NS,
    ) -> None:
        self._record = record
        self._clock = clock
        self.fold_ns = fold_ns
        self.spacing_ns = spacing_ns
        self._senses: dict[str, _SenseSkips] = {}

    def note(self, sense: str, reason: str, count: int = 1, *, by: str = "scheduler") -> None:
        """``count`` ticks of ``sense`` did not run because of ``reason``."""
        if count <= 0:
            return
        now = self._clock()
        skips = self._senses.setdefault(sense, _SenseSkips())
        skips.totals[reason] = skips.totals.get(reason, 0) + count
        skips.by[reason] = by
        skips.last_reason = reason
        last = skips.recorded.get(reason)
        pending = skips.pending.pop(reason, None) or _Pending(0, now, now)
        pending.count += count
        pending.last_ns = now
        news = skips.computed and now - skips.last_record_ns >= self.spacing_ns
        if last is None or now - last >= self.fold_ns or news:
            self._write(sense, skips, reason, pending, now)
        else:
            skips.pending[reason] = pending

    def computed(self, sense: str) -> None:
        """A compute of ``sense`` ran: its next skip is news again."""
        skips = self._senses.get(sense)
        if skips is not None:
            skips.computed = True

    def flush(self, *, everything: bool = False) -> None:
        """Write the folded counts whose window has ended (all of them if ``everything``)."""
        now = self._clock()
        for sense, skips in self._senses.items():
            for reason in list(skips.pending):
                if everything or now - skips.recorded.get(reason, 0) >= self.fold_ns:
                    self._write(sense, skips, reason, skips.pending.pop(reason), now)

    def totals(self, sense: str) -> dict[str, int]:
        skips = self._senses.get(sense)
        return dict(skips.totals) if skips else {}

    def last_reason(self, sense: str) -> str | None:
        skips = self._senses.get(sense)
        return skips.last_reason if skips else None

    def _write(
        self, sense: str, skips: _SenseSkips, reason: str, pending: _Pending, now: int
    ) -> None:
        skips.recorded[reason] = now
        skips.last_record_ns = now
        skips.computed = False
        by = skips.by.get(reason, "scheduler")
        payload = {
            "sense": sense,
            "reason": reason,
            "by": by,
            "count": pending.count,
            "first_ns": pending.first_ns,
            "last_ns": pending.last_ns,
        }
        self._record(sense, line(sense, reason, pending.count, by), payload)


def line(sense: str, reason: str, count: int, by: str) -> str:
    """``cpu: skipped (throttle)``, ``cpu: 18 ticks skipped (throttle)``."""
    why = reason if by == "scheduler" else f"compute: {reason}"
    if count == 1:
        return f"{sense}: skipped ({why})"
    return f"{sense}: {count:,} ticks skipped ({why})"
