"""Report on change, with keyframes: a sense's readings are news when one moved by its band
since the readings last sent, or when ``keyframe_s`` passed since then.

A key's first ``warmup`` computes are all news: attention's value probes build a baseline from
their first readings (8 by default), and a machine at rest would otherwise take eight minutes
to give them, so a CPU hog in a daemon's first minutes would go unjudged.

A machine at rest reads nearly the same every few seconds; storing each reading costs disk
and tells nothing new. What was last sent is kept in the worker, not in state: a restarted
worker sends its first readings at once, so a gap never hides a change.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

KEYFRAME_S = 60
WARMUP = 8  # attention's value probes' warm-up (ValueParams.warmup)


class Band(NamedTuple):
    """A reading moved when it changed by ``absolute`` or by ``share`` of its last value."""

    absolute: int
    share: float = 0.0

    def moved(self, before: int, now: int) -> bool:
        return abs(now - before) >= max(self.absolute, abs(before) * self.share, 1)


class Deadband:
    def __init__(self, warmup: int = WARMUP) -> None:
        self._warmup = warmup
        self._sent: dict[str, tuple[int, dict[str, int]]] = {}
        self._seen: dict[str, int] = {}

    def news(
        self,
        key: str,
        readings: dict[str, int],
        bands: dict[str, Band],
        every_ns: int,
        now_ns: int | None = None,
    ) -> bool:
        """Whether ``readings`` are to be sent (and if so, they become the last sent)."""
        now_ns = time.monotonic_ns() if now_ns is None else now_ns
        last = self._sent.get(key)
        seen = self._seen.get(key, 0)
        if seen < self._warmup:
            self._seen[key] = seen + 1
        due = (
            seen < self._warmup
            or last is None
            or every_ns == 0
            or now_ns - last[0] >= every_ns
            or set(last[1]) != set(readings)
            or any(bands.get(k, Band(1)).moved(last[1][k], v) for k, v in readings.items())
        )
        if due:
            self._sent[key] = (now_ns, dict(readings))
        return due

    def forget(self, key: str) -> None:
        self._sent.pop(key, None)
        self._seen.pop(key, None)


def keyframe_ns(options: dict[str, Any], name: str, default: float = KEYFRAME_S) -> int:
    """The ``keyframe_s`` option in nanoseconds (0: every compute sends its readings)."""
    value = options.get("keyframe_s", default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(
            f"senses.{name}.options.keyframe_s must be a number, 0 or more, got {value!r}"
        )
    return int(value * 1e9)
