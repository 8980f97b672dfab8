"""The attention-budget gate and honest energy figures."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from nerve.attention.detector import Highlight, Probe
from nerve.attention.energy import Energy, Provenance
from nerve.attention.gate import Gate, GateConfig, UserContext
from nerve.errors import EventError

BUSY = UserContext(engagement_milli=800, active_modality="visual")
IDLE = UserContext()
SMALL = GateConfig(surface_cost_uj=100, budget_capacity_uj=150, refill_uj_per_s=0)


def hl(score: int, probe: Probe = "novelty") -> Highlight:
    return Highlight(probe, 900, 300, 50, score, 0)


def test_busy_user_on_a_small_budget_sees_every_outcome() -> None:
    gate = Gate(SMALL)
    # cost for the busy user: 800 x 0.6 = 480 displacement + 300 interference = 780; margin 50
    decisions = [
        gate.decide(hl(s, p), BUSY, 0)
        for s, p in [
            (1000, "novelty"),
            (500, "salience"),
            (1000, "novelty"),
            (1000, "uncertainty"),
        ]
    ]
    assert [(d.outcome, d.value_milli, d.cost_milli, d.budget_after_uj) for d in decisions] == [
        ("surface", 1000, 780, 50),
        ("hold:value", 500, 780, 50),
        ("hold:budget", 1000, 780, 50),
        ("hold:value", 500, 780, 50),
    ]
    assert [d.charged_uj for d in decisions] == [100, 0, 0, 0]
    assert decisions[0].energy == Energy.estimate(100)
    assert decisions[1].energy == Energy.zero()


def test_value_test_comes_before_the_budget() -> None:
    gate = Gate(GateConfig(budget_capacity_uj=0))
    assert gate.decide(hl(10), IDLE, 0).outcome == "hold:value"  # not worth it, budget aside
    assert gate.decide(hl(900), IDLE, 0).outcome == "hold:budget"


def test_value_must_strictly_beat_cost_plus_margin() -> None:
    gate = Gate(GateConfig(margin_milli=50))
    ctx = UserContext(engagement_milli=500, active_modality="audio")  # cost 300, no interference
    assert gate.decide(hl(350), ctx, 0).outcome == "hold:value"
    assert gate.decide(hl(351), ctx, 0).outcome == "surface"


def test_interference_only_on_the_surfacing_modality() -> None:
    gate = Gate(GateConfig(surface_modality="audio"))
    assert gate.cost_of(UserContext(0, "audio")) == 300
    assert gate.cost_of(UserContext(0, "visual")) == 0


def test_refill_is_exact_integer_time() -> None:
    gate = Gate(GateConfig(surface_cost_uj=100, budget_capacity_uj=1000, refill_uj_per_s=10))
    gate.decide(hl(1000), IDLE, 0)
    assert gate.budget_uj == 900
    for step in range(1, 4):  # 0.05 s each: 0.5 µJ per step, the remainder carried
        gate.refill(step * 50_000_000)
    assert gate.budget_uj == 901
    gate.refill(1_150_000_000)  # 1.0 s more
    assert gate.budget_uj == 911
    gate.refill(0)  # time going backwards refills nothing
    assert gate.budget_uj == 911
    gate.refill(10**12)
    assert gate.budget_uj == 1000


def test_budget_before_is_after_refill() -> None:
    gate = Gate(GateConfig(surface_cost_uj=100, budget_capacity_uj=100, refill_uj_per_s=50))
    gate.decide(hl(1000), IDLE, 0)
    d = gate.decide(hl(1000), IDLE, 1_000_000_000)
    assert (d.outcome, d.budget_before_uj, d.budget_after_uj) == ("hold:budget", 50, 50)
    d = gate.decide(hl(1000), IDLE, 2_000_000_000)
    assert (d.outcome, d.budget_before_uj, d.budget_after_uj) == ("surface", 100, 0)


steps = st.lists(
    st.tuples(
        st.integers(0, 1000),
        st.sampled_from(["salience", "novelty", "uncertainty"]),
        st.integers(0, 1000),
        st.sampled_from(["visual", "audio", "none"]),
        st.integers(-(10**9), 10**10),
    ),
    max_size=60,
)


@given(steps, st.integers(0, 500), st.integers(0, 1000), st.integers(0, 200))
def test_budget_never_negative(
    seq: list[tuple[int, Probe, int, str, int]], price: int, capacity: int, rate: int
) -> None:
    gate = Gate(
        GateConfig(surface_cost_uj=price, budget_capacity_uj=capacity, refill_uj_per_s=rate)
    )
    now = 0
    for score, probe, engagement, modality, dt in seq:
        now = max(0, now + dt)
        d = gate.decide(hl(score, probe), UserContext(engagement, modality), now)  # type: ignore[arg-type]
        assert 0 <= d.budget_after_uj <= d.budget_before_uj <= capacity
        assert d.budget_before_uj - d.budget_after_uj == d.charged_uj
        assert d.charged_uj == (price if d.outcome == "surface" else 0)
        assert d.energy.estimated_uj == d.charged_uj
        if d.outcome == "hold:budget":
            assert d.budget_before_uj < price


def test_snapshot_round_trip() -> None:
    gate = Gate(SMALL)
    gate.decide(hl(1000), IDLE, 5)
    copy = Gate(SMALL)
    copy.restore(json.loads(json.dumps(gate.snapshot())))
    assert copy.snapshot() == gate.snapshot() == {"v": 1, "budget_uj": 50, "last_ns": 5, "carry": 0}


@pytest.mark.parametrize(
    "snapshot", [{}, {"v": 1, "budget_uj": -1, "carry": 0}, {"v": 1, "budget_uj": 1, "carry": True}]
)
def test_bad_snapshots(snapshot: dict[str, object]) -> None:
    with pytest.raises(EventError):
        Gate().restore(snapshot)


@pytest.mark.parametrize(("engagement", "modality"), [(-1, "none"), (1001, "none"), (0, "smell")])
def test_user_context_is_validated(engagement: int, modality: str) -> None:
    with pytest.raises(EventError):
        UserContext(engagement, modality)  # type: ignore[arg-type]


def test_gate_config_is_validated() -> None:
    with pytest.raises(ValidationError):
        GateConfig.model_validate({"surface_modality": "none"})
    with pytest.raises(ValidationError):
        GateConfig.model_validate({"margin_milli": 1.5})


# --- energy ------------------------------------------------------------------------------------


def test_energy_honesty_invariant() -> None:
    with pytest.raises(EventError, match="HwShunt"):
        Energy(10, None, Provenance.HW_SHUNT)
    with pytest.raises(EventError, match="Estimator"):
        Energy(10, 5, Provenance.ESTIMATOR)
    with pytest.raises(EventError, match="ModelBased"):
        Energy(10, 5, Provenance.MODEL_BASED)
    with pytest.raises(EventError):
        Energy.estimate(-1)
    with pytest.raises(EventError):
        Energy.measured(True, 3)


def test_energy_constructors_and_maps() -> None:
    assert Energy.zero() == Energy(0, None, Provenance.ESTIMATOR)
    assert Energy.estimate(7).to_cbor_map() == {"estimated_uj": 7, "provenance": 2}
    measured = Energy.measured(12, estimated_uj=10)
    assert measured.to_cbor_map() == {"estimated_uj": 10, "provenance": 0, "measured_uj": 12}
    assert Energy.from_cbor_map(measured.to_cbor_map()) == measured
    assert measured.to_json()["provenance"] == "HwShunt"
    assert Energy.model_based(3).provenance.label == "ModelBased"
    with pytest.raises(EventError):
        Energy.from_cbor_map({"estimated_uj": 1, "provenance": 9})
