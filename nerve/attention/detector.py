"""The highlight detector (Sense v0.1 §5): EMA-baselined k-sigma with a floor and a debounce.

Each probe (``salience``, ``novelty``, ``uncertainty``) keeps its own baseline: an EMA mean
and an EMA of the squared deviation (the variance). A reading ``x`` (thousandths) fires when

- at least ``warmup`` earlier readings of the probe have been seen,
- fewer than ``debounce`` readings have passed since the probe last fired,
- ``x >= floor_milli``, and
- ``x > mean + k · max(sigma, min_sigma)``, all taken from the PRIOR baseline,

and only then is the baseline updated with ``x`` (so a single spike does not hide itself).

Arithmetic is integer fixed point: baselines are held in millionths (thousandths × 1000),
``alpha`` is the rational ``alpha_num / alpha_den``, divisions round half-up and the square
root is :func:`math.isqrt`. The first reading seeds the mean with zero variance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nerve.attention.observer import Projection, round_div
from nerve.errors import EventError

Probe = Literal["salience", "novelty", "uncertainty"]
PROBES: tuple[Probe, ...] = ("salience", "novelty", "uncertainty")
SNAPSHOT_VERSION = 1
_FIXED = 1000  # extra fixed-point factor: baselines are stored in millionths
_FULL = 1000 * _FIXED


class DetectorParams(BaseModel):
    """Detector tuning, all integers.

    - ``alpha_num`` / ``alpha_den`` (1 / 8): EMA weight of each new reading.
    - ``k_milli`` (3000): the threshold is ``k = 3.0`` sigmas above the mean.
    - ``floor_milli`` (500): a reading below 0.5 never fires.
    - ``min_sigma_milli`` (50): sigma is at least 0.05, so a flat baseline can still fire.
    - ``debounce`` (8): after a fire, the probe's next 8 readings cannot fire.
    - ``warmup`` (8): the probe's first 8 readings only build the baseline.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    alpha_num: Annotated[int, Field(ge=1)] = 1
    alpha_den: Annotated[int, Field(ge=1)] = 8
    k_milli: Annotated[int, Field(ge=0, le=1_000_000)] = 3000
    floor_milli: Annotated[int, Field(ge=0, le=1000)] = 500
    min_sigma_milli: Annotated[int, Field(ge=1, le=1000)] = 50
    debounce: Annotated[int, Field(ge=0)] = 8
    warmup: Annotated[int, Field(ge=0)] = 8

    @model_validator(mode="after")
    def _alpha_at_most_one(self) -> DetectorParams:
        if self.alpha_num > self.alpha_den:
            raise ValueError(f"alpha {self.alpha_num}/{self.alpha_den} must be at most 1")
        return self


@dataclass(frozen=True, slots=True)
class Highlight:
    """A detector fire: the reading, the prior baseline it beat, and by how much.

    ``score_milli`` is how far the reading rose above the threshold, as a share of the
    headroom between the threshold and 1.0 (0..1000). ``seq`` is the observation's number.
    A value probe (``value:<sense>.<reading>``, see :mod:`nerve.attention.values`) gives
    its reading, prediction and spread in the reading's own unit instead of thousandths,
    and says what kind of fire it is: ``kind`` is ``record`` (past every reading so far),
    ``unseen`` (in a part of the range never visited), ``surprise`` (far from the prediction)
    or ``trend`` (a steady climb or fall), and ``direction`` is +1 above what was expected,
    -1 below (0 for the detector's own probes, whose ``kind`` is empty). Neither is sealed:
    a replay derives both again. A ``drift`` (:mod:`nerve.attention.drift`) also gives its
    steady rate, ``rate_per_h`` (the reading's unit per hour), and ``eta_s``, the projected
    seconds until the reading's headroom is gone at that rate (0 when not known). A fire the
    gate rules held as transient says which of their checks it failed, with its figures
    (``held``, :meth:`nerve.attention.rules.Rules.resolve`).
    """

    probe: str
    value_milli: int
    baseline_milli: int
    sigma_milli: int
    score_milli: int
    seq: int
    kind: str = ""
    direction: int = 0
    rate_per_h: int = 0
    eta_s: int = 0
    held: Mapping[str, int | str] | None = None  # a hold:transient's failed check and figures

    def to_cbor_map(self) -> dict[str, int | str]:
        """The highlight as a text-keyed map of ints and text (for a sealed link)."""
        return {
            "probe": self.probe,
            "value": self.value_milli,
            "baseline": self.baseline_milli,
            "sigma": self.sigma_milli,
            "score": self.score_milli,
            "seq": self.seq,
        }


@dataclass(slots=True)
class _Baseline:
    n: int = 0  # readings folded in so far
    mean: int = 0  # millionths
    var: int = 0  # millionths squared
    quiet: int = 0  # readings left in the debounce

    def update(self, x: int, alpha_num: int, alpha_den: int) -> None:
        if self.n == 0:
            self.mean, self.var = x, 0
        else:
            dev = x - self.mean
            self.mean += round_div(dev * alpha_num, alpha_den)
            self.var += round_div((dev * dev - self.var) * alpha_num, alpha_den)
        self.n += 1


class Detector:
    """One baseline per probe; :meth:`step` decides against the prior baseline, then updates."""

    def __init__(self, params: DetectorParams | None = None) -> None:
        self.params = params or DetectorParams()
        self._state = {probe: _Baseline() for probe in PROBES}

    def observe(self, projection: Projection) -> list[Highlight]:
        """Step every probe with its reading from ``projection``; return the fires, in order."""
        readings = projection.milli()
        fires = (self.step(p, readings[p], projection.seq) for p in PROBES)
        return [h for h in fires if h is not None]

    def step(self, probe: Probe, value_milli: int, seq: int) -> Highlight | None:
        """Decide one reading of ``probe`` (thousandths, 0..1000), then fold it in."""
        if probe not in self._state or not 0 <= value_milli <= 1000:
            raise EventError(f"detector: bad reading {probe!r}={value_milli!r}")
        state, p = self._state[probe], self.params
        blocked = state.quiet > 0 or state.n < p.warmup
        state.quiet = max(0, state.quiet - 1)
        fire = None if blocked else self._test(probe, state, value_milli, seq)
        if fire is not None:
            state.quiet = p.debounce
        state.update(value_milli * _FIXED, p.alpha_num, p.alpha_den)
        return fire

    def _test(self, probe: Probe, state: _Baseline, value: int, seq: int) -> Highlight | None:
        p = self.params
        sigma = max(math.isqrt(state.var), p.min_sigma_milli * _FIXED)
        threshold = state.mean + round_div(p.k_milli * sigma, 1000)
        x = value * _FIXED
        if value < p.floor_milli or x <= threshold:
            return None
        score = min(1000, round_div((x - threshold) * 1000, _FULL - threshold))
        baseline, sigma_milli = round_div(state.mean, _FIXED), round_div(sigma, _FIXED)
        return Highlight(probe, value, baseline, sigma_milli, score, seq)

    def snapshot(self) -> dict[str, Any]:
        """Plain JSON state: each probe's ``n``, ``mean``, ``var`` and ``quiet``."""
        return {"v": SNAPSHOT_VERSION, "probes": {p: asdict(s) for p, s in self._state.items()}}

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace state with ``snapshot``; raises ``EventError`` if it is malformed."""
        if snapshot.get("v") != SNAPSHOT_VERSION:
            raise EventError(f"detector snapshot version {snapshot.get('v')!r} is not 1")
        probes = snapshot.get("probes")
        if not isinstance(probes, Mapping) or set(probes) != set(PROBES):
            raise EventError(f"detector snapshot needs exactly the probes {list(PROBES)}")
        self._state = {p: _read_baseline(p, probes[p]) for p in PROBES}


def _read_baseline(probe: str, data: Any) -> _Baseline:
    fields = ("n", "mean", "var", "quiet")
    if not isinstance(data, Mapping) or set(data) != set(fields):
        raise EventError(f"detector snapshot: probe {probe!r} needs fields {list(fields)}")
    values = [data[f] for f in fields]
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
        raise EventError(f"detector snapshot: probe {probe!r} has a non-integer or negative field")
    return _Baseline(*values)
