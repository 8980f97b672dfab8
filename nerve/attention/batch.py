"""Observer and detector over a batch of observations, with the same integers as one at a time.

:meth:`nerve.attention.pipeline.Attention.observe_batch` uses these: the observer's three
ratios for every observation of a batch come from counts over the batch in numpy (int64,
after checking that no count can come near its range), and each probe's baseline is run
through the batch in one tight loop of Python integers, recording the prior baseline at
each reading; which readings beat their threshold is then found in numpy, and only those go
through the warm-up and debounce rules, in order. Every figure is the one the scalar path
(:meth:`Observer.observe`, :meth:`Detector.step`) computes, bit for bit.

A batch these functions cannot take exactly (a count or a baseline beyond the checked
ranges, :func:`fits`; an input the scalar path would refuse, :func:`valid_inputs`) goes
through the scalar path instead.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from nerve.attention.detector import _FIXED, _FULL, PROBES, Detector, Highlight
from nerve.attention.observer import Observer, round_div
from nerve.attention.values import _F, RATE, ValueDetector, _Probe, probe_name
from nerve.events import SOURCE_MAX, VENDOR_MIN, SourceClass, Trust

_TRUSTS = (Trust.ATTESTED, Trust.FIRST_PARTY, Trust.INFERRED, Trust.UNTRUSTED)
_COUNT_LIMIT = 2**50  # observations; 2000 × this stays far inside int64
# A prior mean up to 2^25 and variance up to 2^51 (millionths) keep every baseline of a
# batch below 2^52: readings are 0..10^6, so each deviation squared stays below 2^51.
_MEAN_LIMIT, _VAR_LIMIT = 2**25, 2**51
_Ints = npt.NDArray[np.int64]


def valid_inputs(ids: Sequence[bytes], sources: Sequence[int], trusts: Sequence[int]) -> bool:
    """True if every observation would pass the scalar path's checks (ids of 32 bytes,
    integer sources in range, trust 0..3); otherwise the scalar path raises at the bad one."""
    if set(map(type, ids)) - {bytes} or set(map(len, ids)) - {32}:
        return False
    if set(map(type, sources)) - {int} or set(map(type, trusts)) - {int}:
        return False
    if set(trusts) - {0, 1, 2, 3}:
        return False
    standard = len(SourceClass)
    return all(0 <= s < standard or VENDOR_MIN <= s <= SOURCE_MAX for s in set(sources))


def _round_div(num: _Ints, den: _Ints | int) -> _Ints:
    """:func:`nerve.attention.observer.round_div` element-wise (``den > 0``)."""
    return (2 * num + den) // (2 * den)


def _window_sums(values: _Ints, width: int) -> _Ints:
    """For each position g, the sum of ``values[g - width + 1 .. g]`` (from 0 near the start)."""
    total = np.cumsum(values)
    before = np.zeros_like(total)
    before[width:] = total[:-width] if width < len(total) else before[width:]
    return total - before


def _own_counts(groups: _Ints, width: int) -> tuple[_Ints, _Ints]:
    """For each position g of ``groups`` (dense group numbers): how often its group occurs
    in ``[0, g]``, and how often in the window ``[g - width + 1, g]``."""
    size = len(groups)
    positions = np.arange(size, dtype=np.int64)
    order = np.argsort(groups, kind="stable")
    keys = groups[order] * (size + 1) + positions[order]  # sorted: by group, then position
    per_group = np.bincount(groups)
    starts = np.cumsum(per_group) - per_group
    upto = np.empty(size, dtype=np.int64)
    upto[order] = positions - starts[groups[order]] + 1
    gone = np.searchsorted(keys, groups * (size + 1) + positions - width, side="right")
    return upto, upto - np.maximum(gone - starts[groups], 0)


def observer_batch(
    obs: Observer, sources: Sequence[int], trusts: Sequence[int]
) -> tuple[list[int], list[int], list[int]]:
    """Salience, novelty and uncertainty in thousandths for each observation, as
    :meth:`Observer.observe` would give them one by one; the observer is advanced past the
    batch (see :func:`fits` first)."""
    n, width = len(sources), obs.window
    prior = list(obs._recent)
    seq = np.array([s for s, _ in prior] + list(sources), dtype=np.int64)
    low = np.array([int(t) >= 2 for _, t in prior] + [t >= 2 for t in trusts], dtype=np.int64)
    uniq, groups = np.unique(seq, return_inverse=True)
    groups = groups.astype(np.int64).reshape(-1)
    upto, in_window = _own_counts(groups, width)
    at = slice(len(prior), None)
    before = np.array([obs._counts.get(int(u), 0) for u in uniq], dtype=np.int64)
    in_prior = np.bincount(groups[: len(prior)], minlength=len(uniq)).astype(np.int64)
    g = groups[at]
    all_time = before[g] + upto[at] - in_prior[g]
    size = np.minimum(width, np.arange(len(prior) + 1, len(prior) + n + 1, dtype=np.int64))
    total = np.arange(obs.seen + 1, obs.seen + n + 1, dtype=np.int64)
    salience = _round_div(1000 * in_window[at], size)
    novelty = _round_div(1000 * (total - all_time), total)
    uncertainty = _round_div(1000 * _window_sums(low, width)[at], size)
    _advance(obs, sources, trusts, uniq, np.bincount(g, minlength=len(uniq)))
    return salience.tolist(), novelty.tolist(), uncertainty.tolist()


def _advance(
    obs: Observer, sources: Sequence[int], trusts: Sequence[int], uniq: _Ints, added: _Ints
) -> None:
    """The observer's state after the batch, as the scalar pushes would leave it."""
    width = obs.window
    for source, trust in zip(sources[-width:], trusts[-width:], strict=True):
        obs._recent.append((source, _TRUSTS[trust]))
    obs._window_counts = Counter(source for source, _ in obs._recent)
    obs._window_low = sum(1 for _, trust in obs._recent if trust >= 2)
    for source, count in zip(uniq.tolist(), added.tolist(), strict=True):
        if count:
            obs._counts[source] += count
    obs._total += len(sources)


def fits(obs: Observer, det: Detector, n: int) -> bool:
    """True if a batch of ``n`` keeps every count and baseline inside the checked ranges."""
    states = det._state.values()
    return (
        n > 0
        and obs.seen + n <= _COUNT_LIMIT
        and all(s.mean <= _MEAN_LIMIT and s.var <= _VAR_LIMIT for s in states)
    )


def detector_batch(
    det: Detector, readings: Sequence[Sequence[int]], first_seq: int
) -> list[tuple[int, int, Highlight]]:
    """Every fire of the batch as ``(position, probe index, highlight)``, ordered by position
    then probe, as :meth:`Detector.observe` would raise them; the baselines are advanced.
    ``readings`` holds one list of thousandths per probe (see :func:`fits` first)."""
    fires = []
    for k, (probe, values) in enumerate(zip(PROBES, readings, strict=True)):
        state = det._state[probe]
        means, vars_, end = _baselines(det, state.n, state.mean, state.var, values)
        found, quiet = _fires(det, state.n, state.quiet, values, means, vars_)
        fires += [
            (j, k, _highlight(det, probe, values[j], means[j], vars_[j], first_seq + j))
            for j in found
        ]
        state.n, (state.mean, state.var), state.quiet = state.n + len(values), end, quiet
    fires.sort(key=lambda f: (f[0], f[1]))
    return fires


def _baselines(
    det: Detector, n: int, mean: int, var: int, values: Sequence[int]
) -> tuple[list[int], list[int], tuple[int, int]]:
    """The prior (mean, var) at each reading, and the baseline after the last, by the
    update of ``_Baseline.update``: ``round_div(a·num, den) = (2a·num + den) // 2den``, which
    for ``num = 1`` and ``den = 2^k`` is ``(a + den / 2) >> k`` (the default, 1/8)."""
    p = det.params
    means: list[int] = []
    vars_: list[int] = []
    keep_mean, keep_var = means.append, vars_.append
    xs = [v * _FIXED for v in values]
    if n == 0 and xs:
        keep_mean(mean)
        keep_var(var)
        mean, var, xs = xs[0], 0, xs[1:]
    den = p.alpha_den
    if p.alpha_num == 1 and den & (den - 1) == 0:
        half, shift = den >> 1, den.bit_length() - 1
        for x in xs:
            keep_mean(mean)
            keep_var(var)
            dev = x - mean
            mean += (dev + half) >> shift
            var += (dev * dev - var + half) >> shift
    else:
        a2, d2 = 2 * p.alpha_num, 2 * den
        for x in xs:
            keep_mean(mean)
            keep_var(var)
            dev = x - mean
            mean += (dev * a2 + den) // d2
            var += ((dev * dev - var) * a2 + den) // d2
    return means, vars_, (mean, var)


def _sigmas(det: Detector, vars_: _Ints) -> _Ints:
    """``max(isqrt(var), min_sigma)`` exactly: a float root corrected by one either way
    (variances below 2^52 are exact in a double, and so within one of their root)."""
    root = np.sqrt(vars_.astype(np.float64)).astype(np.int64)
    root -= root * root > vars_
    root += (root + 1) * (root + 1) <= vars_
    return np.maximum(root, det.params.min_sigma_milli * _FIXED)


def _fires(
    det: Detector, n: int, quiet: int, values: Sequence[int], means: list[int], vars_: list[int]
) -> tuple[list[int], int]:
    """Positions that fire (beat the threshold, warmed up, outside the debounce), and the
    debounce left after the batch."""
    p = det.params
    x = np.array(values, dtype=np.int64)
    mean, sigma = np.array(means, dtype=np.int64), _sigmas(det, np.array(vars_, dtype=np.int64))
    threshold: _Ints = mean + _round_div(p.k_milli * sigma, 1000)
    beats = (x >= p.floor_milli) & (x * _FIXED > threshold)
    found: list[int] = []
    for j in np.flatnonzero(beats).tolist():
        if n + j < p.warmup or j < quiet or (found and j - found[-1] <= p.debounce):
            continue
        found.append(j)
    left = max(0, quiet - len(values))
    if found:
        left = max(0, p.debounce - (len(values) - 1 - found[-1]))
    return found, left


def _highlight(det: Detector, probe: str, value: int, mean: int, var: int, seq: int) -> Highlight:
    """The fire as :meth:`Detector._test` builds it (in Python integers)."""
    p = det.params
    sigma = max(math.isqrt(var), p.min_sigma_milli * _FIXED)
    threshold = mean + round_div(p.k_milli * sigma, 1000)
    score = min(1000, round_div((value * _FIXED - threshold) * 1000, _FULL - threshold))
    return Highlight(probe, value, round_div(mean, _FIXED), round_div(sigma, _FIXED), score, seq)


# -- value probes --------------------------------------------------------------------------


@dataclass(frozen=True)
class ValueBatch:
    """What :meth:`ValueDetector.observe` gave each observation of a batch, in order: its
    fires and its readings by probe (``latest``); :meth:`level` gives a probe's level as
    :meth:`ValueDetector.level` gave it after observation ``i``, and :meth:`expected` what
    :meth:`ValueDetector.expected` gave then of a probe observation ``i`` reads."""

    fires: dict[int, list[Highlight]]  # observation -> its fires (none: no entry)
    latest: list[dict[str, int]]
    steps: dict[str, tuple[list[int], list[int]]]  # probe -> (observations, level after each)
    before: Callable[[str], int | None]  # a probe's level before the batch
    expects: dict[str, list[int]]  # probe -> what it expected after each of its observations

    def level(self, i: int) -> Callable[[str], int | None]:
        """A probe's level after observation ``i`` (None if not followed by then)."""

        steps_of, before = self.steps.get, self.before

        def at(probe: str) -> int | None:
            steps = steps_of(probe)
            if steps is not None:
                k = bisect_right(steps[0], i) - 1
                if k >= 0:
                    return (2 * steps[1][k] + _F) // (2 * _F)  # round_div(level, _F)
            return before(probe)

        return at

    def expected(self, i: int) -> Callable[[str], int | None]:
        """What a probe read by observation ``i`` expected after it (None for another)."""

        def at(probe: str) -> int | None:
            steps = self.steps.get(probe)
            k = bisect_right(steps[0], i) - 1 if steps is not None else -1
            if steps is None or k < 0 or steps[0][k] != i:
                return None
            return round_div(self.expects[probe][k], _F)

        return at


def value_batch(
    det: ValueDetector,
    subjects: Sequence[str],
    readings: Sequence[Mapping[str, int]],
    seqs: Sequence[int],
    times: Sequence[int],
) -> ValueBatch | None:
    """:meth:`ValueDetector.observe` for each observation, in order, with the same fires
    and state afterwards: the readings are gathered by probe and each probe is stepped
    through its own (:meth:`ValueDetector.run`). None, with nothing done, when a reading is
    not an integer or a probe might be evicted: then observe them one by one."""
    named = _probes_of(subjects, readings)
    if named is None or not _room(det, subjects, named):
        return None
    latest, series = _gather(det, subjects, named, times)
    prior = {probe: det.level(probe) for probe in series}
    fires: dict[int, list[Highlight]] = {}
    steps: dict[str, tuple[list[int], list[int]]] = {}
    expects: dict[str, list[int]] = {}
    for probe, (subject, where, values) in series.items():
        state = det._probes.setdefault(probe, _Probe(sense=subject))
        levels: list[int] = []
        expects[probe] = []
        at = det.run(
            probe, state, values, [seqs[i] for i in where], [times[i] for i in where], levels,
            expects[probe],
        )  # fmt: skip
        for j, h in at:
            fires.setdefault(where[j], []).append(h)
        steps[probe] = (where, levels)
    _seen_last(det, series, latest)
    if latest:
        det.latest = latest[-1]

    def before(probe: str) -> int | None:
        return prior[probe] if probe in prior else det.level(probe)

    kept = {i: _kept(det, found, latest[i]) for i, found in fires.items()}
    return ValueBatch(kept, latest, steps, before, expects)


def _probes_of(
    subjects: Sequence[str], readings: Sequence[Mapping[str, int]]
) -> list[list[tuple[str, int]]] | None:
    """Each observation's readings as ``(probe, reading)`` in the order
    :meth:`ValueDetector.observe` steps them (by name; a sense's own rate, added later,
    comes last); None if one is not a plain integer. Observations sharing one readings
    mapping (a payload stored again, see :func:`nerve.attention.service.read_observations`)
    share the list."""
    known: dict[tuple[str, int], list[tuple[str, int]]] = {}
    out = []
    for subject, values in zip(subjects, readings, strict=True):
        pairs = known.get((subject, id(values)))
        if pairs is None:
            names = sorted(name for name in values if name != RATE)
            if any(type(values[name]) is not int for name in names):
                return None
            pairs = [(probe_name(subject, name), values[name]) for name in names]
            known[subject, id(values)] = pairs
        out.append(pairs)
    return out


def _room(
    det: ValueDetector, subjects: Sequence[str], named: Sequence[list[tuple[str, int]]]
) -> bool:
    """True if the batch's new probes and senses fit within ``max_probes`` (so no probe is
    evicted, and no sense goes without its rate)."""
    senses = {s for s in subjects if s}
    probes = {probe for pairs in {id(p): p for p in named}.values() for probe, _ in pairs}
    new = (probes | {probe_name(s, RATE) for s in senses}) - det._probes.keys()
    cap = det.params.max_probes
    return len(det._probes) + len(new) <= cap and len(senses | det._times.keys()) <= cap


def _gather(
    det: ValueDetector,
    subjects: Sequence[str],
    named: Sequence[list[tuple[str, int]]],
    times: Sequence[int],
) -> tuple[list[dict[str, int]], dict[str, tuple[str, list[int], list[int]]]]:
    """Each observation's readings by probe (a sense's own rate added), and each probe's
    sense, observations and readings."""
    latest: list[dict[str, int]] = []
    series: dict[str, tuple[str, list[int], list[int]]] = {}
    rates = {s: probe_name(s, RATE) for s in set(subjects) if s}
    for i, (subject, pairs) in enumerate(zip(subjects, named, strict=True)):
        probes = dict(pairs)
        if subject:
            probes[rates[subject]] = det._rate(subject, times[i])
        latest.append(probes)
        for probe, value in probes.items():
            where = series.get(probe) or series.setdefault(probe, (subject, [], []))
            where[1].append(i)
            where[2].append(value)
    return latest, series


def _seen_last(
    det: ValueDetector,
    series: Mapping[str, tuple[str, list[int], list[int]]],
    latest: Sequence[Mapping[str, int]],
) -> None:
    """Each sense's probes least recently seen first, as stepping them one by one leaves
    them: the batch's probes move to the end in the order they were last seen."""

    def last(probe: str) -> tuple[int, int]:
        i = series[probe][1][-1]
        return i, list(latest[i]).index(probe)

    for probe in sorted(series, key=last):
        order = det._recency.setdefault(det._probes[probe].sense, OrderedDict())
        order[probe] = None
        order.move_to_end(probe)


def _kept(det: ValueDetector, fires: list[Highlight], probes: Mapping[str, int]) -> list[Highlight]:
    """One observation's fires in the order its readings are stepped; only the strongest
    when ``range_bins`` (one observation interrupts once)."""
    if len(fires) < 2:
        return fires
    order = list(probes)
    fires.sort(key=lambda h: order.index(h.probe))
    return [max(fires, key=lambda h: h.score_milli)] if det.params.range_bins else fires
