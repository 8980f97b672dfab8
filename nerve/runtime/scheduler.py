"""Reflexes: when each sense computes. Intervals, cron, ``on`` signals, throttle and grace.

- ``interval``: a fixed-rate timer (absolute due times, so no drift); ticks missed while the
  loop was busy are skipped (reason ``late``), not queued.
- ``schedule``: a cron expression in ``timezone`` (default: the machine's), DST-correct; the
  next fire is worked out on the wall clock and waited for on the monotonic one.
- ``jitter``: every tick of a sense is shifted by the same share of the jitter, fixed by the
  sense's name (so 200 senses on ``5s`` do not fire together, and a restart keeps the phase).
  Without it a sub-second interval sense still gets a small stable spread within its interval;
  senses on 1 s or longer share one phase, so ticks due together wake the daemon once.
- catch-up: ticks that fell in a downtime (the daemon was stopped: from the log's last event
  to the start) or a sleep (the wall clock ran ahead of the monotonic one) are run or skipped
  by the sense's ``catch_up``: ``skip`` none, ``once`` one (default), ``all`` every one (at most
  ``MAX_CATCH_UP``); only ticks inside ``catch_up_window`` may run, the rest are skipped
  (reason ``missed``).
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

from nerve.runtime.ticks import count_cron, jitter_ns, next_cron

NS = 1_000_000_000
MS = 1_000_000
GRID_NS = 2 * MS  # interval timers are grouped into 2 ms slots
SPREAD_STEP_MS = 5  # fast senses are spread over their interval in steps this long
COALESCE_MS = 1000  # interval senses this slow, without jitter, are not spread
WATCH_NS = NS  # how often the clocks are compared, to notice a sleep
SLEEP_NS = 3 * NS  # the wall clock ahead of the monotonic one by more than this: a sleep
MAX_CATCH_UP = 1000  # computes `catch_up: all` runs at most, however many ticks were missed
COUNT_CAP = 1_000_000  # missed cron fires counted at most

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
    cron: str | None = None
    timezone: str | None = None
    jitter_ms: int | None = None
    catch_up: str = "once"  # skip | once | all
    catch_up_window_ms: int | None = None


@dataclass
class _SenseClock:
    plan: Plan
    ready_ns: int  # end of grace
    last_start_ns: int | None = None
    deferred: Handle | None = None
    cron_timer: Handle | None = None
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
    """A stable offset: the sense's share of its ``jitter``; else, for a sub-second interval,
    a share of the interval, so fast senses do not all land in one loop turn. Slower senses
    keep one phase: a 2 s, a 5 s and a 10 s sense wake the machine 6 times in 10 s, not 16."""
    if plan.jitter_ms is not None:
        return jitter_ns(plan.sense, plan.jitter_ms)
    if plan.grace_ms or not plan.interval_ms or plan.interval_ms >= COALESCE_MS:
        return 0  # a grace period already says when to start
    digest = int.from_bytes(blake3.blake3(plan.sense.encode()).digest()[:8], "big")
    steps = max(1, min(plan.interval_ms, 1000) // SPREAD_STEP_MS)  # few wake-ups, full batches
    return (digest % steps) * SPREAD_STEP_MS * MS


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
        self._watch: Handle | None = None
        self._seen = (0, 0)  # (monotonic, wall) at the last clock comparison

    def now_ns(self) -> int:
        return self._timers.now_ns()

    def load(
        self, plans: list[Plan], *, keep_grace: bool = False, down_since_ns: int | None = None
    ) -> None:
        """Replace every plan; timers restart. ``keep_grace`` keeps senses already past grace.

        ``down_since_ns`` (wall) is when the daemon was last seen alive, on a start after a
        downtime: ticks due since then are caught up or skipped, and interval phases go on
        from then rather than from now."""
        old = self._senses
        self.stop()
        now, wall = self.now_ns(), self._timers.wall_ns()
        for plan in plans:
            previous = old.get(plan.sense)
            ready = now + (plan.grace_ms or 0) * MS
            if keep_grace and previous is not None:
                ready = min(ready, previous.ready_ns)
            clock = _SenseClock(plan, ready, previous.last_start_ns if previous else None)
            self._senses[plan.sense] = clock
            if plan.interval_ms:
                self._arm_interval(clock, self._first_due(clock, now, wall, down_since_ns))
            if plan.cron:  # a reflex may add an interval to a cron sense: both run
                self._arm_cron(clock)
            if down_since_ns is not None and down_since_ns < wall:
                self._catch_up(clock, down_since_ns, wall)
        self._seen = (now, wall)
        self._watch = self._timers.call_at(now + WATCH_NS, self._check_clocks)

    def _first_due(self, clock: _SenseClock, now: int, wall: int, down_since: int | None) -> int:
        """An interval sense's first tick: at once (plus its spread), or after a downtime the
        next tick of the phase that started when the daemon was last alive."""
        start = max(clock.ready_ns, now)
        step = (clock.plan.interval_ms or 1) * MS
        if down_since is not None and down_since < wall:
            downtime = wall - down_since
            start = max(start, now + step - downtime % step)
        return start + _spread(clock.plan)

    def stop(self) -> None:
        for clock in self._senses.values():
            for handle in (clock.deferred, clock.cron_timer):
                if handle is not None:
                    handle.cancel()
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        self._senses = {}

    # -- cron --------------------------------------------------------------------------

    def _arm_cron(self, clock: _SenseClock, after_wall: int | None = None) -> None:
        """Wait for the cron expression's next wall time (plus the sense's spread)."""
        plan = clock.plan
        assert plan.cron is not None
        now, wall = self.now_ns(), self._timers.wall_ns()
        fire = next_cron(plan.cron, plan.timezone, max(wall, after_wall or 0))
        due = now + (fire - wall) + _spread(plan)
        clock.cron_timer = self._timers.call_at(due, self._on_cron, clock, fire, due)

    def _on_cron(self, clock: _SenseClock, fire_wall: int, due: int) -> None:
        clock.cron_timer = None
        if self._senses.get(clock.plan.sense) is not clock:
            return
        clock.stats["ticks"] += 1
        self.trigger(clock.plan.sense, "schedule", due_ns=due)
        self._arm_cron(clock, after_wall=fire_wall)

    # -- sleep and catch-up ------------------------------------------------------------

    def _check_clocks(self) -> None:
        """Compare how far the two clocks moved since the last look: a wall clock far ahead
        means the machine slept (the monotonic clock stands still meanwhile)."""
        now, wall = self.now_ns(), self._timers.wall_ns()
        seen_mono, seen_wall = self._seen
        slept = (wall - seen_wall) - (now - seen_mono)
        self._seen = (now, wall)
        if slept > SLEEP_NS:
            self._woke(wall - slept, wall)
        elif slept < -SLEEP_NS:  # the wall clock was set back: cron times are worked anew
            self._rearm_crons()
        self._watch = self._timers.call_at(now + WATCH_NS, self._check_clocks)

    def _woke(self, asleep_since_wall: int, wall: int) -> None:
        for clock in self._senses.values():
            self._catch_up(clock, asleep_since_wall, wall)
        self._rearm_crons()

    def _rearm_crons(self) -> None:
        for clock in self._senses.values():
            if clock.plan.cron:
                if clock.cron_timer is not None:
                    clock.cron_timer.cancel()
                self._arm_cron(clock)

    def missed(self, plan: Plan, since_wall: int, until_wall: int) -> int:
        """How many ticks of ``plan`` fell due in ``(since_wall, until_wall]``."""
        if plan.cron:
            return count_cron(plan.cron, plan.timezone, since_wall, until_wall, COUNT_CAP)
        if plan.interval_ms:
            return (until_wall - since_wall) // (plan.interval_ms * MS)
        return 0

    def _catch_up(self, clock: _SenseClock, since_wall: int, until_wall: int) -> None:
        """Run or skip the ticks missed in the gap, as the sense's ``catch_up`` says."""
        plan = clock.plan
        total = self.missed(plan, since_wall, until_wall)
        if not total:
            return
        window = plan.catch_up_window_ms
        runnable = total
        if window is not None and until_wall - since_wall > window * MS:
            runnable = self.missed(plan, until_wall - window * MS, until_wall)
        run = {"skip": 0, "once": min(1, runnable), "all": min(runnable, MAX_CATCH_UP)}
        count = run.get(plan.catch_up, 1)
        if total > count:
            self._on_skip(plan.sense, "missed", total - count)
        if count:  # past throttle, but not before the end of a grace period
            at = max(clock.ready_ns, self.now_ns())
            self._timers.call_at(at, self._run_catch_up, clock, count)

    def _run_catch_up(self, clock: _SenseClock, count: int) -> None:
        if self._senses.get(clock.plan.sense) is clock:
            now = self.now_ns()
            for _ in range(count):
                self._fire(clock, "catch-up", now, now)

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
        now = self.now_ns()  # one reading for the slot: its senses fire together
        for clock, due_ns in self._slots.pop(slot, ()):
            self._on_interval(clock, due_ns, now)

    def _on_interval(self, clock: _SenseClock, due_ns: int, now: int) -> None:
        if self._senses.get(clock.plan.sense) is not clock:
            return
        clock.stats["ticks"] += 1
        self._trigger(clock, "interval", due_ns, now)
        step = (clock.plan.interval_ms or 1) * MS
        next_due = due_ns + step
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
        self._trigger(clock, reason, now if due_ns is None else due_ns, now)
        return True

    def _trigger(self, clock: _SenseClock, reason: str, due: int, now: int) -> None:
        if reason == "manual":
            self._fire(clock, reason, due, now)
            return
        gate = self._gate(clock, now)
        if gate <= now:
            self._fire(clock, reason, due, now)
        elif clock.deferred is None:
            clock.stats["deferred"] += 1
            clock.deferred = self._timers.call_at(gate, self._on_deferred, clock, reason, gate)
        else:
            clock.stats["coalesced"] += 1
            self._on_skip(clock.plan.sense, "grace" if clock.ready_ns > now else "throttle", 1)

    def _gate(self, clock: _SenseClock, now: int) -> int:
        """The earliest instant a non-manual trigger may start a compute."""
        earliest = clock.ready_ns
        if clock.plan.throttle_ms and clock.last_start_ns is not None:
            earliest = max(earliest, clock.last_start_ns + clock.plan.throttle_ms * MS)
        return earliest

    def _on_deferred(self, clock: _SenseClock, reason: str, due: int) -> None:
        clock.deferred = None
        if self._senses.get(clock.plan.sense) is clock:
            self._fire(clock, f"{reason}+deferred", due, self.now_ns())

    def _fire(self, clock: _SenseClock, reason: str, due: int, now: int) -> None:
        clock.last_start_ns = now
        clock.stats["dispatched"] += 1
        self._dispatch(clock.plan.sense, reason, due)
