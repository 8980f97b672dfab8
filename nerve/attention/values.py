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
from operator import attrgetter
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
_Cells = tuple[list[int] | None, list[int] | None]  # a reading's day and week slots, if any
_Preds = tuple[int | None, int | None, int | None]  # level, day and week predictions
# The figures a reading at rest only wears down, each by ``1 / 2^peak_shift`` of itself.
_DECAYING = ("peak", "held", "climb")
# Every figure of a probe but its counts (``n``) and those: what a repeated reading may leave
# as it is.
_FIGURES = attrgetter(*(name for name in (*_SCALARS, *_RANGE) if name not in ("n", *_DECAYING)))


def _bin(x: int, lo: int, hi: int, bins: int) -> int:
    """The bin of ``x`` when ``[lo, hi]`` is cut into ``bins`` equal bins."""
    return min(bins - 1, (x - lo) * bins // max(hi - lo, 1))


def _remap(mask: int, lo: int, hi: int, new_lo: int, new_hi: int, bins: int) -> int:
    """The bins of ``[new_lo, new_hi]`` that overlap a marked bin of ``[lo, hi]``
    (:func:`_bin` written out: this runs at every new record)."""
    span, width, top, out = max(hi - lo, 1), max(new_hi - new_lo, 1), bins - 1, 0
    for b in range(bins):
        if not mask >> b & 1:
            continue
        first = lo + (b * span + top) // bins
        last = hi if b == top else lo + ((b + 1) * span - 1) // bins
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


def _figures(s: _Probe, hour: int) -> tuple[Any, ...]:
    """The probe's figures but its counts: the scalars, each fit's error and the means of
    the hour's two slots (the only ones a reading in that hour touches)."""
    day = s.daily.get(hour % _DAY)
    week = s.weekly.get((hour + _WEEK_SHIFT) % _WEEK)
    return (
        _FIGURES(s),
        [f.err for f in s.fits],
        None if day is None else day[0],
        None if week is None else week[0],
    )


def _settled(s: _Probe, before: tuple[Any, ...], hour: int, p: ValueParams) -> bool:
    """True when a reading whose step (the reading equal to the last one) left the
    probe's figures as they were (``before``), but for the three that decay, would do so
    again whenever it comes again within ``hour``. Each count a step consults has then passed
    the point where it would change the step: ``n`` past 2, every fit and both slots of the
    hour past ``season_min`` (all three predictions in use). An EMA that did not move stays
    put: the weight of a new reading only falls as its count grows. No score was above 0 (any
    would have moved a run or the range), so neither ``warmup`` nor a debounce held a fire.

    The decaying three (:func:`_repeat` wears them down): the run stayed at 0, so the
    surprise is at most ``k_milli`` and no spike can beat a bar of at least that, however far
    the peak decays, nor a run start; a slope of at most ``trend_k_milli`` thousandths gives a
    trend's surprise (``slope · 1000 / scale``, ``scale`` at least 1000, rounded) of at most
    that, so no trend can beat a bar of at least that either, however far the climb decays."""
    day = s.daily.get(hour % _DAY)
    week = s.weekly.get((hour + _WEEK_SHIFT) % _WEEK)
    need = p.season_min
    return (
        s.n > 2
        and day is not None
        and day[1] > need
        and week is not None
        and week[1] > need
        and all(f.n > need for f in s.fits)
        and abs(s.slope) <= p.trend_k_milli
        and _figures(s, hour) == before
    )


def _repeat(s: _Probe, hour: int, shift: int) -> None:
    """A reading again within ``hour`` at a settled probe (see :func:`_settled`): the
    counts move, and the peak, the sustained surprise and the climb decay as a step would
    decay them (by ``1 / 2^shift``; the peak not below the reading's own surprise)."""
    s.n += 1
    for f in s.fits:
        f.n += 1
    s.daily[hour % _DAY][1] += 1
    s.weekly[(hour + _WEEK_SHIFT) % _WEEK][1] += 1
    peak, held, climb = s.peak, s.held, s.climb
    s.peak = max(s.surprise, peak - (peak >> shift))
    s.held = held - (held >> shift)
    s.climb = climb - (climb >> shift)


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
        return self._step(probe, state, value, seq, now_ns)

    def run(
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
        (their observations' ``seqs`` and ``times``), as :meth:`step` one by one would;
        return the fires as ``(position in values, highlight)`` and append the level after
        each reading to ``levels`` (and what :meth:`expected` gives then to ``expects``).
        Admission and recency are the caller's.

        A reading that comes again within the same hour, after a step of it that changed
        nothing but counts (:func:`_settled`), would change nothing but counts again: it is
        counted (:func:`_repeat`) rather than stepped. Most readings of a steady probe (a
        sense's own rate, an error counter at 0) are such repeats."""
        fires: list[tuple[int, Highlight]] = []
        settled: tuple[int, int] | None = None  # (reading, hour) at which the probe is settled
        expect = 0
        for j, value in enumerate(values):
            now = times[j]
            hour = now // _HOUR_NS
            if settled == (value, hour):
                _repeat(state, hour, self.params.peak_shift)  # it expects what it did
            else:
                before = _figures(state, hour) if value * _F == state.last else None
                fire = self._step(probe, state, value, seqs[j], now)
                if fire is not None:
                    fires.append((j, fire))
                settled = None
                if (
                    before is not None
                    and fire is None
                    and _settled(state, before, hour, self.params)
                ):
                    settled = (value, hour)
                if expects is not None:
                    expect = self._expect(state, hour)
            levels.append(state.level)
            if expects is not None:
                expects.append(expect)
        return fires

    def _step(
        self, probe: str, state: _Probe, value: int, seq: int, now_ns: int
    ) -> Highlight | None:
        """One reading of ``probe``: the predictions (the level, and the day's and the
        week's slot once each has ``season_min`` readings), the values never seen, the
        predictions' fire, their blend, then the reading folded in.

        This runs for every reading of every observation, so the steps below spell out
        an EMA's update and :func:`nerve.attention.observer.round_div` (``(2a + d) // 2d``)
        rather than call functions for them; each figure is the one those give."""
        x, hour = value * _F, now_ns // _HOUR_NS
        slots = (hour % _DAY, (hour + _WEEK_SHIFT) % _WEEK)
        day, week = cells = (state.daily.get(slots[0]), state.weekly.get(slots[1]))
        need = self.params.season_min
        preds = (
            state.level if state.n else None,
            day[0] if day and day[1] >= need else None,
            week[0] if week and week[1] >= need else None,
        )
        bins = self.params.range_bins
        novel = _NOTHING
        if bins and not self._seen_bin(state, x, bins):
            novel = self._novelty(state, x, now_ns)
        fire = self._judge(probe, state, x, preds, seq)
        if novel is not _NOTHING or (fire is not None and bins):
            fire = self._blend(probe, state, x, novel, fire, seq, now_ns)
        elif bins:  # _blend with nothing new and no fire: only its counters move
            state.novel_q = state.novel_q - 1 if state.novel_q > 0 else 0
            state.hold = state.hold - 1 if state.hold > 0 else 0
        self._fold(state, x, preds, slots, cells)
        return fire

    @staticmethod
    def _seen_bin(s: _Probe, x: int, bins: int) -> bool:
        """True when ``x`` falls within the range, in a bin already visited: the reading is
        nothing new and :meth:`_novelty` would change nothing."""
        lo, hi = s.lo, s.hi
        if not s.bins or x < lo or x > hi:
            return False
        return bool(s.bins >> min(bins - 1, (x - lo) * bins // (hi - lo if hi > lo else 1)) & 1)

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

    def _judge(self, probe: str, s: _Probe, x: int, preds: _Preds, seq: int) -> Highlight | None:
        """The predictions' fire: a surprise against the prediction that has lately fitted
        best, or a trend. That fit is the one of smallest error among those with
        ``season_min`` readings, a season's error counting ``season_bias_milli / 1000`` of
        itself (a cycle, once seen, is preferred to a level that happens to fit as well)."""
        p = self.params
        best = self._best(s, preds)
        quiet = s.quiet
        s.quiet = quiet - 1 if quiet > 0 else 0
        if best < 0:
            return None
        pred, err = preds[best], s.fits[best].err
        assert pred is not None
        floor = p.min_dev_milli
        if p.rel_floor_milli:
            floor = max(floor, (2 * abs(pred) * p.rel_floor_milli + 1_000_000) // 2_000_000)
        sigma = err if err > floor else floor
        s.surprise = (2000 * abs(x - pred) + sigma) // (2 * sigma)
        spike = self._spike(s, s.surprise)
        trend = self._trend(s, x, floor)
        score = spike if spike > trend else trend
        # Within the debounce only a surprise twice as strong fires (a spike, then its run).
        if s.n < p.warmup or score == 0 or (quiet > 0 and score <= 2 * s.fired):
            return None
        s.quiet, s.fired = p.debounce, score
        kind, direction = (
            ("trend", _sign(s.slope)) if trend > spike else ("surprise", _sign(x - pred))
        )
        value, expected = round_div(x, _F), round_div(pred, _F)
        return Highlight(probe, value, expected, round_div(sigma, _F), score, seq, kind, direction)

    def _best(self, s: _Probe, preds: _Preds) -> int:
        """Which prediction has lately fitted best (see :meth:`_judge`); -1 if none has
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
        preds = (  # as _step makes them
            s.level if s.n else None,
            day[0] if day and day[1] >= need else None,
            week[0] if week and week[1] >= need else None,
        )
        best = self._best(s, preds)
        pred = preds[best] if best >= 0 else None
        return s.level if pred is None else pred

    def _spike(self, s: _Probe, z: int) -> int:
        """Score of a spike beyond k and the recent peak, or of a run of ``sustain``
        readings beyond k whose smallest surprise beats the recent sustained ones."""
        p = self.params
        k, ratio, shift = p.k_milli, p.peak_ratio_milli, p.peak_shift
        peak = s.peak
        bar = max(k, (2 * peak * ratio + 1000) // 2000)
        spike = (2 * _over(z, bar) * p.spike_weight_milli + 1000) // 2000 if z > bar else 0
        s.peak = max(z, peak - (peak >> shift))
        if z > k:
            s.run_min = min(s.run_min, z) if s.run else z
            s.run += 1
        else:
            s.run = s.run_min = 0
        held = s.held - (s.held >> shift)
        s.held = held
        if s.run < p.sustain:
            return spike
        run_min = s.run_min
        shift_score = _over(run_min, max(k, (2 * held * ratio + 1000) // 2000))
        s.held = max(held, run_min)
        return max(spike, shift_score)

    def _trend(self, s: _Probe, x: int, floor: int) -> int:
        """Score of a steady climb or fall: the EMA of clamped steps against their size."""
        p = self.params
        n = s.n
        if n == 0:
            return 0
        step, scale = x - s.last, max(s.step_err, floor, _F)
        cap = (2 * scale * p.clamp_milli + 1000) // 2000
        size = abs(step)
        if n > 1:
            clamped = cap if step > cap else -cap if step < -cap else step
            num, den = p.trend_num, p.trend_den
            s.slope += (2 * (clamped - s.slope) * num + den) // (2 * den)
            num, den = (1, n) if n * p.err_num < p.err_den else (p.err_num, p.err_den)
            size = size if size < cap else cap
            s.step_err += (2 * (size - s.step_err) * num + den) // (2 * den)
        else:
            s.step_err = size
        z = (2000 * abs(s.slope) + scale) // (2 * scale)
        climb = s.climb
        bar = max(p.trend_k_milli, climb)
        # a climb that fired is the one to beat for a while
        s.climb = z if z > bar else climb - (climb >> p.peak_shift)
        return _over(z, bar) if z > bar else 0

    def _fold(
        self, s: _Probe, x: int, preds: _Preds, slots: tuple[int, int], cells: _Cells
    ) -> None:
        """Fold the reading into each prediction's error, then (unless a run not yet
        sustained is pending: the level does not learn it, so the run stays visible) into
        the level and the day's and the week's slot."""
        p = self.params
        learn = not 0 < s.run < p.sustain
        clamp, err_num, err_den = p.clamp_milli, p.err_num, p.err_den
        for fit, pred in zip(s.fits, preds, strict=True):
            if pred is None:
                continue
            miss, n, err = abs(x - pred), fit.n + 1, fit.err
            if n == 1:
                fit.err, fit.n = miss, 1
                continue
            # A pending run widens no error beyond one unit a reading (so it stays a run,
            # while an integer hum still learns its spread); otherwise up to clamp times.
            cap = err if err > _F else _F
            if learn:
                cap = (2 * cap * clamp + 1000) // 2000
            num, den = (1, n) if n * err_num < err_den else (err_num, err_den)
            fit.err = err + (2 * ((miss if miss < cap else cap) - err) * num + den) // (2 * den)
            fit.n = n
        s.last, s.n = x, s.n + 1
        if not learn:
            return
        num, den = p.alpha_num, p.alpha_den
        s.level = s.level + (2 * (x - s.level) * num + den) // (2 * den) if s.n > 1 else x
        num, den = p.season_num, p.season_den
        day, week = cells
        if day is None:
            s.daily[slots[0]] = [x, 1]
        else:
            day[0] += (2 * (x - day[0]) * num + den) // (2 * den)
            day[1] += 1
        if week is None:
            s.weekly[slots[1]] = [x, 1]
        else:
            week[0] += (2 * (x - week[0]) * num + den) // (2 * den)
            week[1] += 1

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
