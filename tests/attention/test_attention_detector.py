"""The highlight detector: prior-baseline k-sigma, floor, warmup, debounce, exact integers."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from nerve.attention.detector import PROBES, Detector, DetectorParams, Highlight
from nerve.attention.observer import Observer
from nerve.canonical import canonical_json
from nerve.errors import EventError


def _run(det: Detector, readings: list[int], probe: str = "novelty") -> list[Highlight]:
    fires = (det.step(probe, x, seq) for seq, x in enumerate(readings))  # type: ignore[arg-type]
    return [h for h in fires if h is not None]


def test_single_spike_fires_against_the_prior_baseline() -> None:
    fires = _run(Detector(), [100] * 8 + [800])
    # prior baseline: mean 0.100, variance 0 -> sigma floored at 0.050, threshold 0.250;
    # score = (0.800 - 0.250) / (1 - 0.250) = 0.7333
    assert fires == [Highlight("novelty", 800, 100, 50, 733, 8)]


def test_spike_would_not_fire_against_the_updated_baseline() -> None:
    det = Detector()
    _run(det, [100] * 8)
    det.step("novelty", 800, 8)
    state = det.snapshot()["probes"]["novelty"]
    # had the spike been folded in first, the threshold would sit above the spike itself
    updated_threshold = state["mean"] + 3 * max(math.isqrt(state["var"]), 50_000)
    assert updated_threshold > 800_000


def test_warmup_readings_never_fire() -> None:
    assert _run(Detector(), [100] * 7 + [1000]) == []
    assert [h.seq for h in _run(Detector(DetectorParams(warmup=0)), [100, 1000])] == [1]


def test_floor_blocks_small_values() -> None:
    readings = [100] * 8 + [400]
    assert _run(Detector(), readings) == []
    assert len(_run(Detector(DetectorParams(floor_milli=300)), readings)) == 1


def test_min_sigma_lets_a_flat_baseline_fire() -> None:
    flat = [600] * 8
    assert _run(Detector(), [*flat, 750]) == []  # threshold 0.600 + 3 x 0.050 = 0.750
    assert [h.score_milli for h in _run(Detector(), [*flat, 751])] == [4]


def test_debounce_mutes_the_next_readings() -> None:
    params = DetectorParams(alpha_num=1, alpha_den=1000, debounce=3, warmup=2)
    fires = _run(Detector(params), [100, 100] + [900] * 10)
    assert [h.seq for h in fires] == [2, 6, 10]


def test_probes_are_independent() -> None:
    det = Detector(DetectorParams(warmup=1))
    det.step("salience", 100, 0)
    assert det.step("novelty", 900, 0) is None  # novelty is still warming up
    assert det.step("salience", 900, 1) is not None


def test_exact_fixed_point_baseline() -> None:
    det = Detector()
    _run(det, [100, 200, 150])
    # millionths; mean += round((x - mean) / 8); var += round(((x - mean)^2 - var) / 8)
    # mean: 100000 -> 112500 -> 117188; var: 0 -> 1250000000 -> 1269531250
    assert det.snapshot()["probes"]["novelty"] == {
        "n": 3,
        "mean": 117188,
        "var": 1269531250,
        "quiet": 0,
    }


def test_observe_takes_a_projection() -> None:
    det, obs = Detector(DetectorParams(warmup=4)), Observer(window=8)
    fires = []
    for source in [0, 0, 0, 0, 0, 0, 7]:
        fires += det.observe(obs.observe(source, 1))
    assert [(h.probe, h.seq) for h in fires] == [("novelty", 6)]


@pytest.mark.parametrize(("probe", "value"), [("other", 1), ("novelty", 1001), ("novelty", -1)])
def test_bad_readings(probe: str, value: int) -> None:
    with pytest.raises(EventError):
        Detector().step(probe, value, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "params", [{"alpha_num": 2, "alpha_den": 1}, {"k_milli": True}, {"warmup": -1}, {"x": 1}]
)
def test_params_are_validated(params: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        DetectorParams.model_validate(params)


readings = st.lists(st.integers(0, 1000), max_size=80)


@given(readings)
def test_deterministic_and_resumable(values: list[int]) -> None:
    a, b = Detector(), Detector()
    assert _run(a, values) == _run(b, values)
    assert canonical_json(a.snapshot()) == canonical_json(b.snapshot())
    resumed = Detector()
    resumed.restore(json.loads(json.dumps(a.snapshot())))
    tail = [1000, 0, 999, 500]
    assert [resumed.step("novelty", x, i) for i, x in enumerate(tail)] == [
        a.step("novelty", x, i) for i, x in enumerate(tail)
    ]


@given(readings)
def test_baseline_stays_in_range(values: list[int]) -> None:
    det = Detector()
    _run(det, values)
    state = det.snapshot()["probes"]["novelty"]
    assert 0 <= state["mean"] <= 1_000_000
    assert state["var"] >= 0
    for h in _run(det, values):
        assert 0 <= h.score_milli <= 1000
        assert h.value_milli >= 500


@pytest.mark.parametrize(
    "snapshot",
    [
        {"v": 1},
        {"v": 1, "probes": {"salience": {}}},
        {"v": 1, "probes": {p: {"n": 1} for p in PROBES}},
        {
            "v": 1,
            "probes": {p: {"n": -1, "mean": 0, "var": 0, "quiet": 0} for p in PROBES},
        },
    ],
)
def test_bad_snapshots(snapshot: dict[str, object]) -> None:
    with pytest.raises(EventError):
        Detector().restore(snapshot)
