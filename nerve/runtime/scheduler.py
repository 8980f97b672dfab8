"""Reflexes: when each sense computes. Intervals, ``on`` signals, throttle and grace.

- ``interval``: a fixed-rate timer (absolute due times, so no drift); ticks missed while the
  loop was busy are skipped (reason ``late``), not queued.
- ``on``: another sense's signal triggers this one (through the bus, never from the log).
- ``throttle``: at least this long between compute starts; a trigger inside the window becomes
  at most one deferred trigger at the window's end (further ones are skipped: ``throttle``).
- ``grace_period``: no compute before this long after the daemon (or the sense) started;
  triggers meanwhile collapse into one at the end of the grace (the rest: ``grace``).
- manual triggers run at once, past throttle and grace.

Time comes from a :class:`Timers` (the event loop's monotonic clock and the wall clock), so
tests drive the scheduler with a fake one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import blake3

NS = 1_000_000_000
MS = 1_000_000
GRID_NS = 2 * MS  # interval timers are grouped into 2 ms slots

Dispatch = Callable[[str, str, int], None]  # sense, reason, due (monotonic ns)
OnSkip = Callable[[str, str, int], None]  # sense, reason, how many ticks


class Handle(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """The scheduler's clocks and alarm: monotonic and wall nanoseconds, a call at an instant."""

    def now_ns(self) -> int: ...

    def wall_ns(self) -> int: ...

    def call_at(self, when_ns: int, fn: Callable[..., None], *args: Any) -> Handle: ...


class LoopTimers:
    """The running event loop's clock (monotonic) and ``time.time_ns`` for the wall."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()

    def now_ns(self) -> int:
        return int(self._loop.time() * NS)

    def wall_ns(self) -> int:
        return time.time_ns()

    def call_at(self, when_ns: int, fn: Callable[..., None], *args: Any) -> Handle:
        return self._loop.call_at(when_ns / NS, fn, *args)


@dataclass(frozen=True)
class Plan:
    sense: str
    interval_ms: int | None = None
    on: tuple[str, ...] = ()
    throttle_ms: int | None = None
    grace_ms: int | None = None


@dataclass
class _SenseClock:
    plan: Plan
    ready_ns: int  # end of grace
    last_start_ns: int | None = None
    deferred: Handle | None = None
    stats: dict[str, int] = field(
        default_factory=lambda: {
            "ticks": 0,
            "dispatched": 0,
            "skipped": 0,
            "deferred": 0,
            "coalesced": 0,
        }
    )


def _spread(plan: Plan) -> int:
    """A stable offset (within the interval, at most 1 s) so senses do not all fire at once."""
    if plan.grace_ms or not plan.interval_ms:
        return 0  # a grace period already says when to start
    digest = int.from_bytes(blake3.blake3(plan.sense.encode()).digest()[:8], "big")
    return (digest % min(plan.interval_ms, 1000)) * MS


def _no_skip(sense: str, reason: str, count: int) -> None:
    return None


class Scheduler:
    def __init__(
        self,
        dispatch: Dispatch,
        *,
        on_skip: OnSkip = _no_skip,
        timers: Timers | None = None,
    ) -> None:
        self._dispatch = dispatch
        self._on_skip = on_skip
        self._timers: Timers = timers or LoopTimers()
        self._senses: dict[str, _SenseClock] = {}
        self._slots: dict[int, list[tuple[_SenseClock, int]]] = {}

    def now_ns(self) -> int:
        return self._timers.now_ns()

    def load(self, plans: list[Plan], *, keep_grace: bool = False) -> None:
        """Replace every plan; timers restart. ``keep_grace`` keeps senses already past grace."""
        old = self._senses
        self.stop()
        now = self.now_ns()
        for plan in plans:
            previous = old.get(plan.sense)
            ready = now + (plan.grace_ms or 0) * MS
            if keep_grace and previous is not None:
                ready = min(ready, previous.ready_ns)
            clock = _SenseClock(plan, ready, previous.last_start_ns if previous else None)
            self._senses[plan.sense] = clock
            if plan.interval_ms:
                self._arm_interval(clock, max(ready, now) + _spread(plan))

    def stop(self) -> None:
        for clock in self._senses.values():
            if clock.deferred is not None:
                clock.deferred.cancel()
        self._senses = {}

    def subscribers(self) -> dict[str, list[str]]:
        """For each sense, the senses that listen ``on`` it."""
        subs: dict[str, list[str]] = {}
        for name, clock in self._senses.items():
            for source in clock.plan.on:
                subs.setdefault(source, []).append(name)
        return subs

    def stats(self, sense: str) -> dict[str, int]:
        return dict(self._senses[sense].stats) if sense in self._senses else {}

    def _arm_interval(self, clock: _SenseClock, due_ns: int) -> None:
        """Senses due within one grid step share a timer: many fast senses, few wake-ups.

        Lateness is still measured from each sense's own due time.
        """
        slot = -(-due_ns // GRID_NS)
        entries = self._slots.get(slot)
        if entries is None:
            entries = self._slots[slot] = []
            self._timers.call_at(slot * GRID_NS, self._on_slot, slot)
        entries.append((clock, due_ns))

    def _on_slot(self, slot: int) -> None:
        for clock, due_ns in self._slots.pop(slot, ()):
            self._on_interval(clock, due_ns)

    def _on_interval(self, clock: _SenseClock, due_ns: int) -> None:
        if self._senses.get(clock.plan.sense) is not clock:
            return
        clock.stats["ticks"] += 1
        self.trigger(clock.plan.sense, "interval", due_ns=due_ns)
        step = (clock.plan.interval_ms or 1) * MS
        next_due, now = due_ns + step, self.now_ns()
        if next_due <= now:
            missed = (now - next_due) // step + 1
            clock.stats["skipped"] += missed
            self._on_skip(clock.plan.sense, "late", missed)
            next_due += missed * step
        self._arm_interval(clock, next_due)

    def trigger(self, sense: str, reason: str, *, due_ns: int | None = None) -> bool:
        """Ask for a compute; returns False if the sense is unknown."""
        clock = self._senses.get(sense)
        if clock is None:
            return False
        now = self.now_ns()
        due = now if due_ns is None else due_ns
        if reason == "manual":
            self._fire(clock, reason, due)
            return True
        gate = self._gate(clock, now)
        if gate <= now:
            self._fire(clock, reason, due)
        elif clock.deferred is None:
            clock.stats["deferred"] += 1
            clock.deferred = self._timers.call_at(gate, self._on_deferred, clock, reason, gate)
        else:
            clock.stats["coalesced"] += 1
            self._on_skip(sense, "grace" if clock.ready_ns > now else "throttle", 1)
        return True

    def _gate(self, clock: _SenseClock, now: int) -> int:
        """The earliest instant a non-manual trigger may start a compute."""
        earliest = clock.ready_ns
        if clock.plan.throttle_ms and clock.last_start_ns is not None:
            earliest = max(earliest, clock.last_start_ns + clock.plan.throttle_ms * MS)
        return earliest

    def _on_deferred(self, clock: _SenseClock, reason: str, due: int) -> None:
        clock.deferred = None
        if self._senses.get(clock.plan.sense) is clock:
            self._fire(clock, f"{reason}+deferred", due)

    def _fire(self, clock: _SenseClock, reason: str, due: int) -> None:
        clock.last_start_ns = self.now_ns()
        clock.stats["dispatched"] += 1
        self._dispatch(clock.plan.sense, reason, due)
