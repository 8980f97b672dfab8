"""Value probes: each (sense, reading) a sense declares is a probe the detector follows.

A sense puts integer readings in its observation's payload as ``readings: {name: int}``
(see :func:`readings_of`). Each ``(subject, name)`` pair keeps its own state, and a reading
``x`` is judged against the prediction that has lately fitted best:

- ``level``: an EMA of the readings (weight ``alpha_num / alpha_den``);
- ``daily`` and ``weekly``: an EMA per hour of the day (24 slots) and per hour of the week
  (168 slots) of the reading's HLC time, used once that slot has seen ``season_min``
  readings, so a daily or weekly cycle is expected, not surprising.

Each prediction keeps an EMA of its absolute error (weight ``err_num / err_den``, slower
than the level, and each error clamped to ``clamp_milli / 1000`` times that EMA so one spike
does not widen it). The surprise is ``z = |x − p| / max(err, floor)`` in thousandths, where
``floor = max(min_dev_milli / 1000, |p| · rel_floor_milli / 1000000)``: rises and drops alike.

Spikes that are the norm: ``peak`` is the largest recent surprise, losing ``1 / 2^peak_shift``
of itself per reading. A reading fires when, after ``warmup`` readings and outside the
``debounce`` after a fire, ``z > k_milli`` and ``z > peak · peak_ratio_milli / 1000``; a
spike every hour keeps ``peak`` high, so only a larger one fires. Its score is
``1000 · (z − bar) / z`` with ``bar`` the larger of the two thresholds.

Values never seen (``range_bins > 0``): each probe also keeps the range ``[lo, hi]`` of
every reading so far, cut into ``range_bins`` equal bins, and which bins a reading has
fallen in (carried over to the wider bins when the range grows). A reading past the range
by more than ``1 / extreme_bins`` of its width (a new record high or low) scores
``extreme_milli``; one in a bin never visited scores ``unseen_milli``. None fires before
``warmup`` readings and ``novel_warmup_s`` seconds from the probe's first (a range takes
time to learn), within ``novel_quiet`` readings or ``novel_quiet_s`` seconds of the last,
and none of the predictions above fires within ``novel_hold`` readings of one. The
predictions' scores are weighed by ``blend_milli / 1000``, so a value never seen outranks
one merely far from its prediction, and of one observation's readings only the strongest
fire is kept (one interruption per observation). ``range_bins = 0`` turns all this off.

At most ``max_probes`` probes are followed. A new probe past the cap evicts the least
recently seen probe of the sense that holds the most (the new probe's own sense when it holds
as many; else the first such sense by name), and counts it in :attr:`ValueDetector.evicted`
(kept in the snapshot). So a sense whose reading names churn (mount points, container ids)
recycles its own probes, and one holding fewer than ``max_probes / senses`` is never evicted
for another's sake. "Recently" is the order of the readings in the log, never wall time.

Everything is integer arithmetic (values in thousandths of the reading's unit, divisions
rounded half-up, no floats), so a replay reproduces every decision bit for bit.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nerve.attention.detector import Highlight
from nerve.attention.observer import round_div
from nerve.errors import EventError

SNAPSHOT_VERSION = 1
VALUE_PREFIX = "value:"
MAX_READINGS = 32  # per observation; more are ignored (sorted by name, the first kept)
MAX_NAME = 64
MAX_ABS = 2**53 - 1  # readings beyond JSON's exact integers are ignored
_F = 1000  # readings are held in thousandths of their unit
_HOUR_NS = 3_600_000_000_000
_MINUTE_NS = 60_000_000_000
_S = 1_000_000_000
RATE = "per_min"  # the reading every sense gets: its observations in the last minute
MAX_RATE = 1000  # a sense's rate counts at most this many
_DAY, _WEEK = 24, 168
# 1970-01-01 was a Thursday: shift so slot 0 of the week is Monday 00:00 UTC.
_WEEK_SHIFT = 72


class ValueParams(BaseModel):
    """Tuning of the value probes, all integers (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    alpha_num: Annotated[int, Field(ge=1)] = 1
    alpha_den: Annotated[int, Field(ge=1)] = 16
    err_num: Annotated[int, Field(ge=1)] = 1
    err_den: Annotated[int, Field(ge=1)] = 64
    season_num: Annotated[int, Field(ge=1)] = 1
    season_den: Annotated[int, Field(ge=1)] = 4
    season_min: Annotated[int, Field(ge=1)] = 4
    season_bias_milli: Annotated[int, Field(ge=0, le=1000)] = 700
    clamp_milli: Annotated[int, Field(ge=1000)] = 6000
    k_milli: Annotated[int, Field(ge=0)] = 5000
    peak_ratio_milli: Annotated[int, Field(ge=0)] = 1500
    peak_shift: Annotated[int, Field(ge=1, le=30)] = 11
    sustain: Annotated[int, Field(ge=1)] = 6
    trend_num: Annotated[int, Field(ge=1)] = 1
    trend_den: Annotated[int, Field(ge=1)] = 4
    trend_k_milli: Annotated[int, Field(ge=0)] = 3000
    min_dev_milli: Annotated[int, Field(ge=1)] = 100
    rel_floor_milli: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    spike_weight_milli: Annotated[int, Field(ge=0, le=1000)] = 50
    debounce: Annotated[int, Field(ge=0)] = 12
    warmup: Annotated[int, Field(ge=0)] = 8
    max_probes: Annotated[int, Field(ge=1)] = 4096
    range_bins: Annotated[int, Field(ge=0, le=64)] = 32
    extreme_bins: Annotated[int, Field(ge=1)] = 128
    extreme_milli: Annotated[int, Field(ge=0, le=1000)] = 1000
    unseen_milli: Annotated[int, Field(ge=0, le=1000)] = 900
    novel_quiet: Annotated[int, Field(ge=0)] = 20
    novel_hold: Annotated[int, Field(ge=0)] = 100
    blend_milli: Annotated[int, Field(ge=0, le=1000)] = 600
    novel_warmup_s: Annotated[int, Field(ge=0)] = 3600
    novel_quiet_s: Annotated[int, Field(ge=0)] = 3600

    @model_validator(mode="after")
    def _weights_at_most_one(self) -> ValueParams:
        for num, den in (
            (self.alpha_num, self.alpha_den),
            (self.err_num, self.err_den),
            (self.season_num, self.season_den),
            (self.trend_num, self.trend_den),
        ):
            if num > den:
                raise ValueError(f"weight {num}/{den} must be at most 1")
        return self


def readings_of(payload: Any) -> dict[str, int]:
    """The ``readings`` of an observation's payload: names to integers, others skipped.

    A reading is a text name (1..64 characters) and an integer (not a bool) within
    ±(2^53 − 1); anything else
    in the mapping is ignored, and a payload without one gives ``{}``.
    """
    if not isinstance(payload, Mapping):
        return {}
    raw = payload.get("readings")
    if not isinstance(raw, Mapping):
        return {}
    good = {
        name: value
        for name, value in raw.items()
        if isinstance(name, str)
        and 0 < len(name) <= MAX_NAME
        and isinstance(value, int)
        and not isinstance(value, bool)
        and -MAX_ABS <= value <= MAX_ABS
    }
    return {name: good[name] for name in sorted(good)[:MAX_READINGS]}


def probe_name(subject: str, reading: str) -> str:
    """The probe a reading is followed as: ``value:<sense>.<reading>``."""
    return f"{VALUE_PREFIX}{subject}.{reading}"


@dataclass(slots=True)
class _Fit:
    """One prediction's running absolute error (thousandths)."""

    err: int = 0
    n: int = 0


@dataclass(slots=True)
class _Probe:
    n: int = 0
    level: int = 0  # thousandths
    quiet: int = 0
    peak: int = 0  # the largest recent spike surprise, milli-errors
    run: int = 0  # readings in a row beyond k
    run_min: int = 0  # the smallest surprise of that run
    held: int = 0  # the largest recent sustained surprise
    last: int = 0  # the previous reading (thousandths)
    slope: int = 0  # EMA of the clamped steps (thousandths)
    step_err: int = 0  # EMA of the absolute steps
    fired: int = 0  # the score of the latest fire
    climb: int = 0  # the steepest recent trend
    lo: int = 0  # the range of every reading so far (thousandths)
    hi: int = 0
    bins: int = 0  # bit b: a reading has fallen in bin b of the range
    novel_q: int = 0  # readings left with no novelty fire
    hold: int = 0  # readings left with no prediction fire
    since: int = 0  # the time of the first reading (ns)
    novel_at: int = 0  # the time of the latest novelty fire (ns)
    sense: str = ""  # the sense whose readings these are (kept in the snapshot's recency)
    surprise: int = 0  # the latest reading's surprise against its best prediction (not kept)
    fits: list[_Fit] = field(default_factory=lambda: [_Fit(), _Fit(), _Fit()])
    daily: dict[int, list[int]] = field(default_factory=dict)  # slot -> [mean, count]
    weekly: dict[int, list[int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            **{name: getattr(self, name) for name in (*_SCALARS, *_RANGE)},
            "fits": [[f.err, f.n] for f in self.fits],
            "daily": sorted([k, *v] for k, v in self.daily.items()),
            "weekly": sorted([k, *v] for k, v in self.weekly.items()),
        }


_SCALARS = (
    "n", "level", "quiet", "peak", "run", "run_min", "held", "last", "slope", "step_err", "fired",
    "climb",
)  # fmt: skip
# Absent in snapshots taken before values never seen (they restore as 0).
_RANGE = ("lo", "hi", "bins", "novel_q", "hold", "since", "novel_at")
_NOTHING = (0, "", 0)  # no novelty: score, kind, direction
_Preds = tuple[int | None, int | None, int | None]  # level, day and week predictions


def _bin(x: int, lo: int, hi: int, bins: int) -> int:
    """The bin of ``x`` when ``[lo, hi]`` is cut into ``bins`` equal bins."""
    return min(bins - 1, (x - lo) * bins // max(hi - lo, 1))


def _remap(mask: int, lo: int, hi: int, new_lo: int, new_hi: int, bins: int) -> int:
    """The bins of ``[new_lo, new_hi]`` that overlap a marked bin of ``[lo, hi]``
    (:func:`_bin` written out: this runs at every new record).

    The bins of ``[lo, hi]`` tile its integers, so a run of marked bins covers one stretch
    of them; when the new bins are at least an integer wide, the stretch's image has no gap
    and the run is mapped at once (a range visited all over is one run), else bin by bin."""
    span, width, top, out = max(hi - lo, 1), max(new_hi - new_lo, 1), bins - 1, 0
    whole = width >= bins
    while mask:
        b = (mask & -mask).bit_length() - 1  # the lowest marked bin
        rest = mask >> b
        e = b + ((rest + 1) & ~rest).bit_length() - 2 if whole else b  # the run's last
        mask &= ~((2 << e) - (1 << b))
        first = lo + (b * span + top) // bins
        last = hi if e == top else lo + ((e + 1) * span - 1) // bins
        if first > last:
            continue
        start = min(top, (first - new_lo) * bins // width)
        end = min(top, (last - new_lo) * bins // width)
        out |= (2 << end) - (1 << start)  # bins start..end
    return out


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def _over(z: int, bar: int) -> int:
    """A surprise's score: how far ``z`` is past ``bar``, as a share of ``z`` (0..1000)."""
    return min(1000, round_div((z - bar) * 1000, z)) if z > bar else 0


def _trend(
    step: int, n: int, slope: int, step_err: int, climb: int, floor: int, p: ValueParams
) -> tuple[int, int, int, int]:
    """Score of a steady climb or fall, the ``n``-th reading of its probe moving by
    ``step`` from the last: the EMA of clamped steps (``slope``) against their size (the
    EMA ``step_err``); the slope, step size and steepest recent climb after it."""
    if n == 0:
        return 0, slope, step_err, climb
    scale = step_err if step_err > floor else floor
    scale = scale if scale > _F else _F
    cap = (2 * scale * p.clamp_milli + 1000) // 2000
    moved = step if step > 0 else -step
    if n > 1:
        clamped = cap if step > cap else -cap if step < -cap else step
        num, den = p.trend_num, p.trend_den
        slope += (2 * (clamped - slope) * num + den) // (2 * den)
        num, den = (1, n) if n * p.err_num < p.err_den else (p.err_num, p.err_den)
        moved = moved if moved < cap else cap
        step_err += (2 * (moved - step_err) * num + den) // (2 * den)
    else:
        step_err = moved
    z = (2000 * (slope if slope > 0 else -slope) + scale) // (2 * scale)
    bar = climb if climb > p.trend_k_milli else p.trend_k_milli
    if z > bar:  # a climb that fired is the one to beat for a while
        return _over(z, bar), slope, step_err, z
    return 0, slope, step_err, climb - (climb >> p.peak_shift)


def _figures(
    s: _Probe,
    figures: tuple[int, ...],
    errs: tuple[int, int, int],
    day: list[int] | None,
    week: list[int] | None,
) -> tuple[Any, ...]:
    """A probe's figures but its counts and the three that decay: ``figures`` (the ones
    :meth:`ValueDetector.run` holds), each fit's error, the range and its times, and the
    means of the hour's two slots (the only ones a reading in that hour touches)."""
    return (
        figures, errs, s.lo, s.hi, s.bins, s.since, s.novel_at,
        None if day is None else day[0], None if week is None else week[0],
    )  # fmt: skip


def _fitted(err: int, n: int, miss: int, clamp: int, err_num: int, err_den: int) -> int:
    """A fit's error after its ``n``-th ``miss`` (thousandths): the first miss, then an EMA
    weighing ``1 / n`` until that falls below ``err_num / err_den``, each miss clamped to
    ``clamp / 1000`` times the error so far (at least one unit). A pending run passes 1000:
    it widens no error beyond one unit a reading (so it stays a run, while an integer hum
    still learns its spread)."""
    if n == 1:
        return miss
    cap = (2 * (err if err > _F else _F) * clamp + 1000) // 2000
    num, den = (1, n) if n * err_num < err_den else (err_num, err_den)
    return err + (2 * ((miss if miss < cap else cap) - err) * num + den) // (2 * den)


def _rest(
    peak: int, held: int, climb: int, surprise: int, shift: int, times: int
) -> tuple[int, int, int]:
    """The peak, the sustained surprise and the climb after ``times`` readings at rest (see
    :meth:`ValueDetector.run`): each decays by ``1 / 2^shift`` of itself at every reading, the
    peak not below the reading's own ``surprise``, as a step would wear them down."""
    for _ in range(times):
        decayed = peak - (peak >> shift)
        worn = (surprise if surprise > decayed else decayed, held - (held >> shift),
                climb - (climb >> shift))  # fmt: skip
        if worn == (peak, held, climb):  # worn down as far as they go
            break
        peak, held, climb = worn
    return peak, held, climb


class ValueDetector:
    """Value probes keyed by probe name; :meth:`step` decides, then folds the reading in."""

    def __init__(self, params: ValueParams | None = None) -> None:
        self.params = params or ValueParams()
        self._probes: dict[str, _Probe] = {}
        # Per sense: its probes, the least recently seen first.
        self._recency: dict[str, OrderedDict[str, None]] = {}
        self.evicted: dict[str, int] = {}  # per sense: its probes evicted to make room
        self._times: dict[str, deque[int]] = {}  # per sense: its observations' times, newest last
        self.latest: dict[str, int] = {}  # the last observation's readings, by probe (not state)

    def observe(
        self, subject: str, readings: Mapping[str, int], seq: int, now_ns: int
    ) -> list[Highlight]:
        """Step each reading (by name) of one observation, then the sense's own rate
        (``per_min``: its observations in the minute up to this one); return the fires."""
        named = {name: readings[name] for name in sorted(readings) if name != RATE}
        if subject:
            named[RATE] = self._rate(subject, now_ns)
        self.latest = {probe_name(subject, n): v for n, v in named.items()}
        fires = (
            self.step(probe_name(subject, n), v, seq, now_ns, subject) for n, v in named.items()
        )
        found = [h for h in fires if h is not None]
        if self.params.range_bins and len(found) > 1:
            # One observation interrupts once: its strongest reading (the first by name of a tie).
            return [max(found, key=lambda h: h.score_milli)]
        return found

    def _rate(self, subject: str, now_ns: int) -> int:
        times = self._times.get(subject)
        if times is None:
            if len(self._times) >= self.params.max_probes:
                return 0
            times = self._times[subject] = deque(maxlen=MAX_RATE)
        times.append(now_ns)
        while times[0] <= now_ns - _MINUTE_NS:
            times.popleft()
        return len(times)

    def step(
        self, probe: str, value: int, seq: int, now_ns: int, sense: str = ""
    ) -> Highlight | None:
        """Decide one reading ``value`` (an integer in the reading's unit) at ``now_ns``;
        ``sense`` is the sense the probe belongs to (its share of ``max_probes``)."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise EventError(f"value probe {probe!r}: reading {value!r} is not an integer")
        state = self._probes.get(probe)
        if state is None:
            state = self._admit(probe, sense)
        else:
            self._recency[state.sense].move_to_end(probe)
        fired = self.run(probe, state, (value,), (seq,), (now_ns,), [])
        return fired[0][1] if fired else None

    def run(  # noqa: PLR0915 (one loop, see the docstring's third paragraph)
        self,
        probe: str,
        state: _Probe,
        values: Sequence[int],
        seqs: Sequence[int],
        times: Sequence[int],
        levels: list[int],
        expects: list[int] | None = None,
    ) -> list[tuple[int, Highlight]]:
        """Step ``probe`` (its ``state``) through its integer readings ``values`` in order
        (their observations' ``seqs`` and ``times``); return the fires as ``(position in
        values, highlight)`` and append the level after each reading to ``levels`` (and what
        :meth:`expected` gives then to ``expects``). Admission and recency are the caller's.
        This is the one step of a reading (:meth:`step` runs it for one).

        Each reading: the predictions (the level, and the day's and the week's slot once each
        has ``season_min`` readings), the values never seen (:meth:`_novelty`), the
        predictions' fire (the best fit's surprise as a spike or a sustained run, or the
        trend), their blend (:meth:`_blend`), then the reading folded into each fit's error,
        the level and the hour's two slots (unless a run not yet sustained is pending: the
        level does not learn it, so the run stays visible).

        A month's replay steps millions of readings, so the probe's figures are held in
        local names for the whole series (written back at the end, and before the rare
        calls that read them), and EMAs and half-up divisions (``(2a + d) // 2d``) are
        spelled out rather than called: each figure is the one the formulas in the module
        docstring give.

        A reading at rest is counted, not stepped: once a step of a reading equal to the
        last one (in the same hour) left every figure as it was but the counts and the three
        that decay (the peak, the sustained surprise, the climb), with every count the step
        consults past the point where it changes the step (``n`` past 2, every fit and both
        slots of the hour past ``season_min``) and the slope within ``trend_k_milli``, the
        same reading in that hour can only move the counts again and wear the three down
        (:func:`_rest`). An EMA that did not move stays put, as a new reading's weight only
        falls as its count grows; no score was above 0 (any would have moved a run or the
        range), so the surprise is at most ``k_milli`` and no spike or run can beat a bar of
        at least that however far the peak decays; a slope within ``trend_k_milli`` gives a
        trend's surprise of at most that, so no trend can beat its bar however far the
        climb decays. Most readings of a steady probe (a sense's own rate, an error counter
        at 0) are such repeats."""
        p = self.params
        need, bias, warmup, debounce = p.season_min, p.season_bias_milli, p.warmup, p.debounce
        k, ratio, shift, sustain = p.k_milli, p.peak_ratio_milli, p.peak_shift, p.sustain
        weight, clamp, err_num, err_den = p.spike_weight_milli, p.clamp_milli, p.err_num, p.err_den
        trend_k = p.trend_k_milli
        alpha_num, alpha_den, season_num, season_den = (
            p.alpha_num, p.alpha_den, p.season_num, p.season_den
        )  # fmt: skip
        min_dev, rel_floor, bins = p.min_dev_milli, p.rel_floor_milli, p.range_bins
        s, daily, weekly, (f0, f1, f2) = state, state.daily, state.weekly, state.fits
        e0, e1, e2, c0, c1, c2 = f0.err, f1.err, f2.err, f0.n, f1.n, f2.n
        n, level, quiet, peak, run, run_min, held = (
            s.n, s.level, s.quiet, s.peak, s.run, s.run_min, s.held
        )  # fmt: skip
        last, slope, step_err, fired, climb, novel_q, hold, surprise = (
            s.last, s.slope, s.step_err, s.fired, s.climb, s.novel_q, s.hold, s.surprise
        )  # fmt: skip
        fires: list[tuple[int, Highlight]] = []
        keep_level, keep_expect = levels.append, expects.append if expects is not None else None
        at_rest, rest_hour, expect, j, size = None, -1, 0, 0, len(values)
        while j < size:
            value, now = values[j], times[j]
            hour = now // _HOUR_NS
            if value == at_rest and hour == rest_hour:  # counted, not stepped
                again = 1
                while j + again < size and values[j + again] == value:
                    if times[j + again] // _HOUR_NS != hour:
                        break
                    again += 1
                n, c0, c1, c2 = n + again, c0 + again, c1 + again, c2 + again
                daily[hour % _DAY][1] += again
                weekly[(hour + _WEEK_SHIFT) % _WEEK][1] += again
                peak, held, climb = _rest(peak, held, climb, surprise, shift, again)
                levels.extend(repeat(level, again))
                if expects is not None:
                    expects.extend(repeat(expect, again))
                j += again
                continue
            x, slot_d, slot_w = value * _F, hour % _DAY, (hour + _WEEK_SHIFT) % _WEEK
            day, week = daily.get(slot_d), weekly.get(slot_w)
            before = None
            if x == last:  # the figures a reading at rest must leave as they are
                figures = (level, quiet, run, run_min, slope, step_err, fired, novel_q, hold)
                before = _figures(s, figures, (e0, e1, e2), day, week)
            # the predictions: the level, the day's slot, the week's slot
            p0 = level if n else None
            p1 = day[0] if day is not None and day[1] >= need else None
            p2 = week[0] if week is not None and week[1] >= need else None
            novel = _NOTHING
            if bins:
                lo, hi, mask = s.lo, s.hi, s.bins
                if (
                    not mask
                    or x < lo
                    or x > hi
                    or not mask >> min(bins - 1, (x - lo) * bins // (hi - lo if hi > lo else 1)) & 1
                ):  # not in a bin already visited
                    s.level = level
                    novel = self._novelty(s, x, now)
            # the best fit: the smallest error, a season's weighed by season_bias_milli
            pred, err, least = None, 0, -1  # -1: no fit chosen yet
            if p0 is not None and c0 >= need:
                pred, err, least = p0, e0, e0
            if p1 is not None and c1 >= need:
                weighed = (2 * e1 * bias + 1000) // 2000
                if least < 0 or weighed < least:
                    pred, err, least = p1, e1, weighed
            if p2 is not None and c2 >= need:
                weighed = (2 * e2 * bias + 1000) // 2000
                if least < 0 or weighed < least:
                    pred, err = p2, e2
            was_quiet = quiet
            quiet = quiet - 1 if quiet > 0 else 0
            fire = None
            if pred is not None:
                floor = min_dev
                if rel_floor:
                    floor = max(floor, (2 * abs(pred) * rel_floor + 1_000_000) // 2_000_000)
                sigma = err if err > floor else floor
                miss = x - pred
                surprise = z = (2000 * (miss if miss > 0 else -miss) + sigma) // (2 * sigma)
                # a spike beyond k and the recent peak
                bar = (2 * peak * ratio + 1000) // 2000
                bar = bar if bar > k else k
                spike = (2 * _over(z, bar) * weight + 1000) // 2000 if z > bar else 0
                peak -= peak >> shift
                peak = z if z > peak else peak
                if z > k:
                    run_min = run_min if run and run_min < z else z
                    run += 1
                else:
                    run = run_min = 0
                held -= held >> shift
                if run >= sustain:  # a run of sustain readings beyond k: a shift
                    bar = (2 * held * ratio + 1000) // 2000
                    shifted = _over(run_min, bar if bar > k else k)
                    spike = shifted if shifted > spike else spike
                    held = run_min if run_min > held else held
                trend, slope, step_err, climb = _trend(
                    x - last, n, slope, step_err, climb, floor, p
                )
                score = spike if spike > trend else trend
                # Within the debounce only a surprise twice as strong fires (a spike, then
                # its run).
                if n >= warmup and score and not (was_quiet > 0 and score <= 2 * fired):
                    quiet, fired = debounce, score
                    kind, direction = (
                        ("trend", _sign(slope)) if trend > spike else ("surprise", _sign(miss))
                    )
                    value_milli, expected = round_div(x, _F), round_div(pred, _F)
                    fire = Highlight(probe, value_milli, expected, round_div(sigma, _F), score,
                                     seqs[j], kind, direction)  # fmt: skip
            if novel is not _NOTHING or (fire is not None and bins):
                s.novel_q, s.hold, s.n, s.level = novel_q, hold, n, level
                fire = self._blend(probe, s, x, novel, fire, seqs[j], now)
                novel_q, hold = s.novel_q, s.hold
            elif bins:  # _blend with nothing new and no fire: only its counters move
                novel_q = novel_q - 1 if novel_q > 0 else 0
                hold = hold - 1 if hold > 0 else 0
            # Fold the reading into each fit's error: a pending run widens none beyond one
            # unit a reading (so it stays a run, while an integer hum still learns its
            # spread); otherwise up to clamp times.
            learn = not 0 < run < sustain
            widen = clamp if learn else 1000
            if p0 is not None:
                c0 += 1
                e0 = _fitted(e0, c0, x - p0 if x > p0 else p0 - x, widen, err_num, err_den)
            if p1 is not None:
                c1 += 1
                e1 = _fitted(e1, c1, x - p1 if x > p1 else p1 - x, widen, err_num, err_den)
            if p2 is not None:
                c2 += 1
                e2 = _fitted(e2, c2, x - p2 if x > p2 else p2 - x, widen, err_num, err_den)
            last, n = x, n + 1
            if learn:
                level = (
                    level + (2 * (x - level) * alpha_num + alpha_den) // (2 * alpha_den)
                    if n > 1
                    else x
                )
                if day is None:
                    day = daily[slot_d] = [x, 1]
                else:
                    day[0] += (2 * (x - day[0]) * season_num + season_den) // (2 * season_den)
                    day[1] += 1
                if week is None:
                    week = weekly[slot_w] = [x, 1]
                else:
                    week[0] += (2 * (x - week[0]) * season_num + season_den) // (2 * season_den)
                    week[1] += 1
            if fire is not None:
                fires.append((j, fire))
            at_rest = None
            if (
                before is not None
                and fire is None
                and n > 2
                and day is not None
                and day[1] > need
                and week is not None
                and week[1] > need
                and c0 > need
                and c1 > need
                and c2 > need
                and -trend_k <= slope <= trend_k
                and before
                == _figures(
                    s,
                    (level, quiet, run, run_min, slope, step_err, fired, novel_q, hold),
                    (e0, e1, e2),
                    day,
                    week,
                )
            ):
                at_rest, rest_hour = value, hour
            if keep_expect is not None:  # what expected() gives now (see _expect)
                expect, least = level, e0 if c0 >= need else -1  # -1: no fit chosen yet
                if day is not None and day[1] >= need and c1 >= need:
                    weighed = (2 * e1 * bias + 1000) // 2000
                    if least < 0 or weighed < least:
                        expect, least = day[0], weighed
                if week is not None and week[1] >= need and c2 >= need:
                    weighed = (2 * e2 * bias + 1000) // 2000
                    if least < 0 or weighed < least:
                        expect = week[0]
                keep_expect(expect)
            keep_level(level)
            j += 1
        f0.err, f1.err, f2.err, f0.n, f1.n, f2.n = e0, e1, e2, c0, c1, c2
        s.n, s.level, s.quiet, s.peak, s.run, s.run_min, s.held = (
            n, level, quiet, peak, run, run_min, held
        )  # fmt: skip
        s.last, s.slope, s.step_err, s.fired, s.climb, s.novel_q, s.hold, s.surprise = (
            last, slope, step_err, fired, climb, novel_q, hold, surprise
        )  # fmt: skip
        return fires

    def _admit(self, probe: str, sense: str) -> _Probe:
        """Follow a new probe of ``sense``, evicting one first when at ``max_probes``."""
        if len(self._probes) >= self.params.max_probes:
            self._evict(sense)
        state = self._probes[probe] = _Probe(sense=sense)
        self._recency.setdefault(sense, OrderedDict())[probe] = None
        return state

    def _evict(self, sense: str) -> None:
        """Drop the least recently seen probe of the sense holding the most: ``sense``
        itself when it holds as many, else the first such sense by name."""
        held = self._recency
        victim = min(held, key=lambda name: (-len(held[name]), name))
        if len(held.get(sense, ())) >= len(held[victim]):
            victim = sense
        probes = held[victim]
        gone, _ = probes.popitem(last=False)
        del self._probes[gone]
        if not probes:
            del held[victim]
        self.evicted[victim] = self.evicted.get(victim, 0) + 1

    def _novelty(self, s: _Probe, x: int, now_ns: int) -> tuple[int, str, int]:
        """Score, kind and direction of a reading never seen: past the range so far
        (``record``), or in a bin not yet visited (``unseen``); ``(0, "", 0)`` otherwise.
        Then widen the range and mark the bin."""
        p = self.params
        if not s.bins:  # the first reading (or one restored from before ranges)
            s.lo = s.hi = x
            s.bins, s.since = 1, now_ns
            return _NOTHING
        lo, hi = s.lo, s.hi
        if lo <= x <= hi:  # within the range: the common case, no record
            b = min(p.range_bins - 1, (x - lo) * p.range_bins // (hi - lo if hi > lo else 1))
            if s.bins >> b & 1:
                return _NOTHING
            s.bins |= 1 << b
            return p.unseen_milli, "unseen", _sign(x - s.level)
        span = hi - lo
        over = x - hi if x > hi else lo - x
        extreme = span == 0 or over * p.extreme_bins > span
        # the bins widen: mark the new ones the visited ones overlap
        lo, hi = min(lo, x), max(hi, x)
        s.bins = _remap(s.bins, s.lo, s.hi, lo, hi, p.range_bins)
        s.lo, s.hi = lo, hi
        b = _bin(x, lo, hi, p.range_bins)
        unseen = not s.bins >> b & 1
        s.bins |= 1 << b
        if extreme:
            return p.extreme_milli, "record", 1 if x > lo else -1
        return (p.unseen_milli, "unseen", _sign(x - s.level)) if unseen else _NOTHING

    def _blend(
        self,
        probe: str,
        s: _Probe,
        x: int,
        novel: tuple[int, str, int],
        fire: Highlight | None,
        seq: int,
        now_ns: int,
    ) -> Highlight | None:
        """A novelty fire first; else the predictions' fire, weighed, unless held."""
        p = self.params
        quiet, hold = s.novel_q, s.hold
        s.novel_q = quiet - 1 if quiet > 0 else 0
        s.hold = hold - 1 if hold > 0 else 0
        score, kind, direction = novel
        if score and not quiet:
            warm = s.n >= p.warmup and now_ns - s.since >= p.novel_warmup_s * _S
            recent = s.novel_at and now_ns - s.novel_at < p.novel_quiet_s * _S
            if warm and not recent:
                s.novel_q, s.hold, s.novel_at = p.novel_quiet, p.novel_hold, now_ns
                width = max(1, round_div(s.hi - s.lo, p.range_bins))
                level, sigma = round_div(s.level, _F), round_div(width, _F)
                return Highlight(probe, round_div(x, _F), level, sigma, score, seq, kind, direction)
        if fire is None or hold:
            return None
        return replace(fire, score_milli=round_div(fire.score_milli * p.blend_milli, 1000))

    def _best(self, s: _Probe, preds: _Preds) -> int:
        """Which prediction has lately fitted best (see :meth:`run`); -1 if none has
        ``season_min`` readings yet."""
        need, bias, best, least = self.params.season_min, self.params.season_bias_milli, -1, 0
        for i, fit in enumerate(s.fits):
            if preds[i] is None or fit.n < need:
                continue
            weighed = fit.err if i == 0 else (2 * fit.err * bias + 1000) // 2000
            if best < 0 or weighed < least:
                best, least = i, weighed
        return best

    def _expect(self, s: _Probe, hour: int) -> int:
        """The best prediction of a reading in ``hour`` (thousandths), else the level."""
        day, week = s.daily.get(hour % _DAY), s.weekly.get((hour + _WEEK_SHIFT) % _WEEK)
        need = self.params.season_min
        preds = (  # as run makes them
            s.level if s.n else None,
            day[0] if day and day[1] >= need else None,
            week[0] if week and week[1] >= need else None,
        )
        best = self._best(s, preds)
        pred = preds[best] if best >= 0 else None
        return s.level if pred is None else pred

    def level(self, probe: str) -> int | None:
        """The probe's level (its readings' EMA) in the reading's unit; None if not followed."""
        state = self._probes.get(probe)
        return None if state is None or not state.n else round_div(state.level, _F)

    def expected(self, probe: str, now_ns: int) -> int | None:
        """What the probe expects of a reading at ``now_ns``, in the reading's unit: the
        prediction that has lately fitted best (a daily or weekly cycle, once learnt, or the
        level); None if not followed."""
        state = self._probes.get(probe)
        if state is None or not state.n:
            return None
        return round_div(self._expect(state, now_ns // _HOUR_NS), _F)

    def snapshot(self) -> dict[str, Any]:
        """Plain JSON state: each probe's counters, level, fits and seasonal slots; each
        sense's probes, least recently seen first; the probes evicted, by sense."""
        return {
            "v": SNAPSHOT_VERSION,
            "probes": {name: s.to_json() for name, s in sorted(self._probes.items())},
            "times": {name: list(t) for name, t in sorted(self._times.items())},
            "recency": {sense: list(probes) for sense, probes in sorted(self._recency.items())},
            "evicted": dict(sorted(self.evicted.items())),
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace state with ``snapshot``; raises ``EventError`` if it is malformed."""
        if snapshot.get("v") != SNAPSHOT_VERSION:
            raise EventError(f"value snapshot version {snapshot.get('v')!r} is not 1")
        probes = snapshot.get("probes")
        if not isinstance(probes, Mapping):
            raise EventError("value snapshot needs a probes map")
        try:
            self._probes = {str(k): _read_probe(v) for k, v in probes.items()}
            self._times = {
                str(k): deque((_int(t) for t in v), maxlen=MAX_RATE)
                for k, v in snapshot.get("times", {}).items()
            }
            self._recency = _read_recency(snapshot.get("recency"), self._probes)
            self.evicted = {str(k): _int(v) for k, v in snapshot.get("evicted", {}).items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise EventError(f"value snapshot is malformed: {exc!r}") from None


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{v!r} is not an integer")
    return v


def _read_recency(
    raw: Mapping[str, Any] | None, probes: Mapping[str, _Probe]
) -> dict[str, OrderedDict[str, None]]:
    """Each sense's probes, least recently seen first, as the snapshot lists them (each
    probe once); a snapshot from before eviction groups by name (``value:<sense>.``)."""
    if raw is None:
        raw = {}
        for name in sorted(probes):
            raw.setdefault(_sense_of(name), []).append(name)
    out = {str(sense): OrderedDict.fromkeys(str(p) for p in names) for sense, names in raw.items()}
    listed = [(name, sense) for sense, names in out.items() for name in names]
    if len(listed) != len(probes) or {name for name, _ in listed} != probes.keys():
        raise ValueError("recency must list every probe once")
    for name, sense in listed:
        probes[name].sense = sense
    return out


def _sense_of(probe: str) -> str:
    """The sense in a probe's name ``value:<sense>.<reading>``; ``""`` for another name."""
    head, dot, _ = probe.removeprefix(VALUE_PREFIX).partition(".")
    return head if probe.startswith(VALUE_PREFIX) and dot else ""


def _read_probe(data: Mapping[str, Any]) -> _Probe:
    def slots(rows: Any) -> dict[int, list[int]]:
        return {_int(k): [_int(m), _int(c)] for k, m, c in rows}

    fits = [_Fit(_int(e), _int(n)) for e, n in data["fits"]]
    if len(fits) != 3:
        raise ValueError("fits must hold three entries")
    probe = _Probe(fits=fits, daily=slots(data["daily"]), weekly=slots(data["weekly"]))
    for name in _SCALARS:
        setattr(probe, name, _int(data[name]))
    for name in _RANGE:
        setattr(probe, name, _int(data.get(name, 0)))
    return probe
