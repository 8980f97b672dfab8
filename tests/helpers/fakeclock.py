"""A fake clock for the scheduler: monotonic and wall time that move only when told."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

NS = 1_000_000_000


class _Handle:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeTimers:
    """``nerve.runtime.scheduler.Timers`` over a heap of alarms; ``advance`` runs what falls due.

    ``sleep`` moves the wall clock alone, as a machine's suspend does (the monotonic clock
    stands still while it sleeps)."""

    def __init__(self, wall_ns: int, mono_ns: int = 1_000 * NS) -> None:
        self.mono = mono_ns
        self.wall = wall_ns
        self._heap: list[tuple[int, int, _Handle, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = itertools.count()

    def now_ns(self) -> int:
        return self.mono

    def wall_ns(self) -> int:
        return self.wall

    def call_at(self, when_ns: int, fn: Callable[..., None], *args: Any) -> _Handle:
        handle = _Handle()
        heapq.heappush(self._heap, (when_ns, next(self._seq), handle, fn, args))
        return handle

    def advance(self, ns: int) -> None:
        """Let ``ns`` pass on both clocks, running every alarm due meanwhile, in order."""
        end = self.mono + ns
        while self._heap and self._heap[0][0] <= end:
            when, _, handle, fn, args = heapq.heappop(self._heap)
            self.wall += max(0, when - self.mono)
            self.mono = max(self.mono, when)
            if not handle.cancelled:
                fn(*args)
        self.wall += end - self.mono
        self.mono = end

    def sleep(self, ns: int) -> None:
        """The machine sleeps for ``ns``: wall time passes, monotonic time does not."""
        self.wall += ns
