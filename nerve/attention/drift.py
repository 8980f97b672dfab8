"""The drift rule: a reading that creeps steadily the way that matters, too slowly for any
one step to stand out (a memory leak of a few MiB a minute, a disk filling for hours).

The value probes judge each reading against its prediction, and a leak never grows by a
spread between two readings, so it is held or never fired. This rule looks at a window
instead. For each value probe whose direction of concern is ``rise`` or ``fall``
(:data:`nerve.attention.rules.CONCERNS`: memory used, swap, a process's resident size, free
disk), it keeps one sample per ``step_s`` seconds (the first reading at least that long after
the previous sample) over the last ``window_s`` seconds, and when a new sample comes it cuts the
window into ``BLOCKS`` equal spans of time and takes the median of each span's samples (the
lower middle of an even count; a span with none is left out, at least 3 must be left), so a
counter's own noise does not hide a slow climb:

- **steady**: the Mann–Kendall count ``S`` of the medians, over every pair ``i < j``, of +1
  when the later one moved the way of concern and −1 when it moved back, is at least
  ``steady_milli / 1000`` of the pairs (a leak's medians nearly all climb; a download, a
  compile or an app opened moves once and then holds still or falls back);
- **smooth**: no step between neighbouring medians carries more than half of the whole
  climb (first median to last), and no step between neighbouring samples is more than
  :data:`JUMP` times the typical (median) one: apps opened one after another climb in steps,
  a leak does not;
- **fast enough**: the robust slope of the samples themselves (Theil–Sen: the median of the
  pairs' slopes, in the reading's unit per hour, rounded toward zero) is at least the
  probe's least rate
  (:data:`RATES`, per ``sense.reading``, overridden by ``attention.rules.drift_rates``);
- the samples span at least ``window_s`` less one ``step_s`` (the window is full);
- **held**: once all of the above held, the drift is kept, judged at every sample, while
  it is fast enough and at least :data:`KEEP_MILLI` of the pairs climb (a counter's noise
  makes a slow leak's medians flicker); after ``hold_s`` seconds it fires if it is smooth
  then and its newest median is past the one the hold started with (else the hold starts
  again from there): noise can look steady and fast for a sample or two, a leak keeps
  climbing.

A sample alone in its span of time (its neighbours at least a span away, as at 5-minute
rows) that stands beyond both of them the same way by more than :data:`JUMP` times the step
between them is put back between them once the next sample comes (:func:`despike`): a
build or an app seen at one row only, which no span's median can drop where a span holds
one sample.

Samples are not taken while the machine's own work explains the reading, nor within a
``step_s`` of it on either side (:meth:`nerve.attention.rules.Rules.explained`: a build's
memory comes and goes with it, and the senses' rows are not taken at the same moment).

It then fires a highlight of kind ``drift`` in the direction of concern: its reading is the
newest sample, its baseline the oldest, its score ``1000 · S / pairs``; ``rate_per_h`` is the
slope and ``eta_s``, for a ``fall`` (free space, whose headroom is the reading itself), the
projected seconds until it reaches zero at that rate (0 when the headroom is not known).
The gate rules treat it as a confirmed excursion (the window was its persistence), and the
probe cannot drift-fire again for ``quiet_s`` seconds, or until the slope of its window is
no longer the way of concern (the leak stopped: the next one is news). Everything is integer
arithmetic on the readings and the observations' HLC times, so a replay decides the same,
bit for bit.
"""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nerve.attention.detector import Highlight

_S = 1_000_000_000
_HOUR_NS = 3600 * _S
BLOCKS = 6  # the window's spans of time, each summed up by its median
# Chosen on the tuning seeds 1-6 of attention_days_bench: a held drift is kept while at
# least this share of its medians' pairs climb (a leak's noise dips below the 700 it must
# start with), and a step between neighbouring samples more than JUMP times the typical one
# is an app opened or a file written at once, not a leak.
KEEP_MILLI = 600
JUMP = 6
# Readings at most this far apart keep a pair's rise times an hour in ns inside int64.
_NUMPY_SPAN = (2**63 - 1) // _HOUR_NS
_NUMPY_MOST = 512  # samples (130,816 pairs): a window of a day at one a minute is 1441

# sense.reading -> the least steady rate worth an interruption, in the reading's unit per
# hour: for memory two thirds of the slowest leak issue 40 names (15 MiB per 5 minutes,
# 180 MiB an hour; half let a counter's noise at 1-minute rows drift); for free disk the
# slowest fill itself (40 MiB per 5 minutes, 480 MiB an hour), as a workday's builds and
# logs take a few hundred MiB an hour (chosen on the tuning seeds 1-3 of
# attention_days_bench, where half let a day of builds drift).
RATES: dict[str, int] = {
    "memory.used_mib": 120,
    "memory.swap_used_mib": 120,
    "processes.top_rss_bytes": 120 * 1024 * 1024,
    "disk.free_mib": 480,
}


@dataclass(slots=True)
class _Track:
    samples: deque[tuple[int, int]] = field(default_factory=deque)  # (time ns, reading)
    quiet_until: int = 0  # ns: no drift fire before this
    since: int = 0  # ns: when the drift was first judged steady and fast enough (0: it is not)
    start: int = 0  # the newest median when the hold started


def steadiness(values: list[int], direction: int) -> int:
    """The Mann–Kendall count of ``values`` the way of ``direction``: each later value
    beyond an earlier one counts +1, each one back −1."""
    s = 0
    for i, a in enumerate(values):
        for b in values[i + 1 :]:
            d = direction * (b - a)
            s += (d > 0) - (d < 0)
    return s


def medians(samples: list[tuple[int, int]], start: int, span: int) -> list[tuple[int, int]]:
    """Each of :data:`BLOCKS` equal spans of ``[start, start + span]``: the median time and
    the median reading of its samples (lower middles), spans with none left out."""
    blocks: list[list[tuple[int, int]]] = [[] for _ in range(BLOCKS)]
    for t, v in samples:
        blocks[min(BLOCKS - 1, max(0, (t - start) * BLOCKS // span))].append((t, v))
    out = []
    for block in blocks:
        if block:
            mid = (len(block) - 1) // 2
            out.append((block[mid][0], sorted(v for _, v in block)[mid]))
    return out


def smooth(values: list[int], direction: int) -> bool:
    """No step between neighbours carries more than half the whole climb."""
    rise = direction * (values[-1] - values[0])
    steps = (direction * (b - a) for a, b in itertools.pairwise(values))
    return rise > 0 and all(2 * step <= rise for step in steps)


def jumps(samples: list[tuple[int, int]], times: int) -> bool:
    """Whether a step between neighbouring samples, per hour, exceeds ``times`` the typical
    (median) one: an app opened, not a leak (per hour: a step across samples left out is
    not a jump)."""
    steps = sorted(
        abs(b - a) * _HOUR_NS // (tb - ta) for (ta, a), (tb, b) in itertools.pairwise(samples)
    )
    return steps[-1] > times * max(steps[(len(steps) - 1) // 2], 1)


def despike(samples: deque[tuple[int, int]], times: int, block_ns: int) -> None:
    """Put the sample before the newest back between its neighbours if it is a lone spike:
    beyond both the same way by more than ``times`` the step between them (a build or an
    app seen at one row only, not the reading's level), and alone in its span of time (at
    least ``block_ns`` from either neighbour: where a span holds more, its median drops it)."""
    if len(samples) < 3:
        return
    (ta, a), (t, v), (tb, b) = samples[-3], samples[-2], samples[-1]
    near = min(v - a, v - b) if v > max(a, b) else min(a - v, b - v)
    alone = min(t - ta, tb - t) >= block_ns
    if alone and near > times * max(abs(b - a), 1):
        samples[-2] = (t, a + (b - a) * (t - ta) // (tb - ta))


def slope_per_hour(samples: list[tuple[int, int]], direction: int) -> int:
    """Theil–Sen: the median of the pairs' slopes (the way of ``direction``, in the reading's
    unit per hour, each rounded toward zero); the lower middle of an even count.

    The pairs are counted in numpy when every product fits in int64 (readings within
    :data:`_NUMPY_SPAN` of each other) and they are not too many, else in Python integers:
    the same slope either way."""
    values = [v for _, v in samples]
    if 2 < len(samples) <= _NUMPY_MOST and max(values) - min(values) <= _NUMPY_SPAN:
        return _slope_numpy(samples, direction)
    slopes = []
    for i, (ta, a) in enumerate(samples):
        for tb, b in samples[i + 1 :]:
            num = direction * (b - a) * _HOUR_NS
            slopes.append(num // (tb - ta) if num >= 0 else -(-num // (tb - ta)))
    slopes.sort()
    return slopes[(len(slopes) - 1) // 2]


def _slope_numpy(samples: list[tuple[int, int]], direction: int) -> int:
    """:func:`slope_per_hour` in int64: numpy's ``//`` floors as Python's does."""
    import numpy as np

    both = np.array(samples, dtype=np.int64)
    later, earlier = _pairs(len(samples))
    num = (both[later, 1] - both[earlier, 1]) * (direction * _HOUR_NS)
    den = both[later, 0] - both[earlier, 0]
    slopes = np.where(num >= 0, num // den, -(-num // den))
    middle = (len(slopes) - 1) // 2
    return int(np.partition(slopes, middle)[middle])


@functools.lru_cache(maxsize=4)
def _pairs(n: int) -> tuple[Any, Any]:
    """Every pair ``i < j`` of ``n`` samples, as (the j's, the i's)."""
    import numpy as np

    earlier, later = np.triu_indices(n, 1)
    return later, earlier


class Drift:
    """Samples by probe; :meth:`check` gives the drift fires of one observation's readings."""

    def __init__(
        self,
        window_s: int,
        step_s: int,
        steady_milli: int,
        quiet_s: int,
        rates: Mapping[str, int],
        hold_s: int = 0,
    ) -> None:
        self.window_ns, self.step_ns, self.quiet_ns = window_s * _S, step_s * _S, quiet_s * _S
        self.hold_ns = hold_s * _S
        self.steady_milli = steady_milli
        self.rates = dict(rates)
        self._tracks: dict[str, _Track] = {}

    def check(
        self, probe: str, key: str, value: int, direction: int, at: tuple[int, int], judge: bool
    ) -> Highlight | None:
        """Sample ``value`` of ``probe`` (``key``: its ``sense.reading``; ``direction``: +1
        for a rise concern, −1 for a fall) at ``at`` (the observation's seq and time, ns);
        a highlight when it drifts and ``judge`` (false: sampled, not judged)."""
        seq, now_ns = at
        rate = self.rates.get(key)
        if rate is None or direction == 0:
            return None
        track = self._tracks.setdefault(probe, _Track())
        samples = track.samples
        if samples and now_ns - samples[-1][0] < self.step_ns:
            return None
        samples.append((now_ns, value))
        despike(samples, JUMP, self.window_ns // BLOCKS)
        while now_ns - samples[0][0] > self.window_ns:
            samples.popleft()
        full = now_ns - samples[0][0] >= self.window_ns - self.step_ns
        if not full:
            track.since = 0
            return None
        if now_ns < track.quiet_until:
            track.since = 0
            if slope_per_hour(list(samples), direction) <= 0:
                track.quiet_until = 0  # the drift stopped: the next one is news again
            return None
        if not judge:
            return None
        return self._judge(track, probe, rate, direction, seq, now_ns)

    def forget(self, probe: str, since_ns: int) -> None:
        """Drop the samples of ``probe`` taken at ``since_ns`` or later (what the machine's
        own work moved, seen only once it was under way)."""
        track = self._tracks.get(probe)
        while track is not None and track.samples and track.samples[-1][0] >= since_ns:
            track.samples.pop()

    def _judge(
        self, track: _Track, probe: str, rate: int, direction: int, seq: int, now_ns: int
    ) -> Highlight | None:
        samples = list(track.samples)
        points = medians(samples, now_ns - self.window_ns, self.window_ns)
        n = len(points)
        pairs = n * (n - 1) // 2
        if n < 3:
            return None
        values = [v for _, v in points]
        s = steadiness(values, direction)
        even = smooth(values, direction) and not jumps(samples, JUMP)
        bar = KEEP_MILLI if track.since else self.steady_milli
        steady = s * 1000 >= bar * pairs and (even or bool(track.since))
        # the slope (every pair of samples) only for a window that passes the rest: most do not
        slope = slope_per_hour(samples, direction) if steady else 0
        if not steady or slope < max(rate, 1):
            track.since = 0
            return None
        if not track.since:
            track.since, track.start = now_ns, values[-1]
        if now_ns - track.since < self.hold_ns:
            return None
        if direction * (values[-1] - track.start) <= 0:
            track.since, track.start = now_ns, values[-1]
            return None
        if not even:
            return None
        track.quiet_until, track.since = now_ns + self.quiet_ns, 0
        first, last = track.samples[0][1], track.samples[-1][1]
        eta = last * 3600 // slope if direction < 0 and last > 0 else 0
        score = min(1000, s * 1000 // pairs)
        return Highlight(probe, last, first, 0, score, seq, "drift", direction, slope, eta)

    def snapshot(self) -> dict[str, Any]:
        """Plain JSON state: each probe's samples and quiet time."""
        return {
            probe: {
                "samples": [list(p) for p in t.samples],
                "quiet_until": t.quiet_until,
                "since": t.since,
                "start": t.start,
            }
            for probe, t in sorted(self._tracks.items())
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace the samples with ``snapshot``'s (``ValueError``/``KeyError`` if malformed)."""
        self._tracks = {
            str(probe): _Track(
                deque((int(t), int(v)) for t, v in raw["samples"]),
                int(raw["quiet_until"]),
                int(raw.get("since", 0)),  # absent before the drift's hold
                int(raw.get("start", 0)),  # absent before the hold had to keep climbing
            )
            for probe, raw in snapshot.items()
        }
