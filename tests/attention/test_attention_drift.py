"""The drift rule (nerve.attention.drift): a slow memory leak surfaces as a drift with its
rate, a filling disk with its projected time to full, and flat noise does not."""

from __future__ import annotations

import random
from collections import deque
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.attention import drift
from nerve.attention.gate import UserContext
from nerve.attention.pipeline import Attention
from nerve.attention.rules import ValueRulesConfig

S = 10**9
T0 = 1_767_261_600 * S
IDLE = UserContext(0, "none")


def _run(sense: str, reading: str, values: list[int], rules: ValueRulesConfig) -> list[dict]:
    att, out = Attention(rules=rules), []
    for i, v in enumerate(values):
        eid = i.to_bytes(32, "big")
        for h, d in att.observe(eid, 8, 1, T0 + i * 60 * S, IDLE, sense, {reading: v}):
            out.append({"i": i, "kind": h.kind, "outcome": d.outcome, "rate": h.rate_per_h,
                        "eta": h.eta_s})  # fmt: skip
    return out


def test_a_slow_leak_surfaces_as_a_drift_within_30_minutes() -> None:
    rng = random.Random(3)
    flat = [4000 + round(rng.gauss(0, 5)) for _ in range(120)]
    leak = [4000 + round(rng.gauss(0, 5)) + 4 * k for k in range(60)]  # 20 MiB per 5 min
    found = _run("memory", "used_mib", flat + leak, ValueRulesConfig())
    drifts = [d for d in found if d["kind"] == "drift"]
    assert drifts and drifts[0]["outcome"] == "surface", found
    assert 120 < drifts[0]["i"] <= 150 and 90 <= drifts[0]["rate"] <= 330, drifts
    off = _run("memory", "used_mib", flat + leak, ValueRulesConfig(drift=False))
    assert all(d["kind"] != "drift" for d in off)


def test_a_filling_disk_says_when_it_is_full_and_noise_does_not_drift() -> None:
    rng = random.Random(4)
    free = [50_000 + round(rng.gauss(0, 3)) for _ in range(120)]
    free += [50_000 - 12 * k for k in range(60)]  # 60 MiB per 5 min
    drifts = [
        d for d in _run("disk", "free_mib:/", free, ValueRulesConfig()) if d["kind"] == "drift"
    ]
    assert drifts, free
    # caught early (its rate still part flat): full in days, not never
    assert 48 * 3600 < drifts[0]["eta"] < 240 * 3600, drifts
    quiet = [4000 + round(rng.gauss(0, 8)) for _ in range(600)]
    assert not [
        d for d in _run("memory", "used_mib", quiet, ValueRulesConfig()) if d["kind"] == "drift"
    ]


def _leak(seed: int, before: int, minutes: int, per_min: int, noise: int) -> list[int]:
    """Memory used: ``before`` flat minutes, then ``minutes`` of a leak of ``per_min`` MiB a
    minute, each reading with the counter's own noise (a spread of ``noise`` MiB)."""
    rng = random.Random(seed)
    flat = [4000 + round(rng.gauss(0, noise)) for _ in range(before)]
    return flat + [4000 + round(rng.gauss(0, noise)) + per_min * k for k in range(minutes)]


def test_a_slow_leak_in_noise_that_makes_its_medians_flicker_surfaces_in_time() -> None:
    # 15 MiB per 5 minutes under noise of 10 MiB: a step of medians often carries half the
    # climb, so a drift that had to look smooth at every sample of its hold came late
    for seed in range(5):
        found = _run("memory", "used_mib", _leak(seed, 60, 60, 3, 10), ValueRulesConfig())
        drifts = [d["i"] for d in found if d["kind"] == "drift"]
        assert drifts and 60 < drifts[0] <= 90, (seed, drifts)


def test_a_second_leak_after_the_first_was_freed_is_news_again() -> None:
    first = _leak(5, 60, 90, 5, 5)
    freed = [4000 + round(random.Random(6).gauss(0, 5)) for _ in range(60)]
    second = _leak(7, 0, 60, 5, 5)
    found = _run("memory", "used_mib", first + freed + second, ValueRulesConfig())
    drifts = [d["i"] for d in found if d["kind"] == "drift"]
    assert len(drifts) == 2 and drifts[1] > 210, drifts  # not six hours of quiet


def test_apps_opened_one_after_another_are_no_drift() -> None:
    rng = random.Random(8)
    used, level = [], 4000
    for k in range(90):
        level += 300 if k % 6 == 0 and 30 <= k < 66 else 0  # an app every 6 minutes
        used.append(level + round(rng.gauss(0, 5)))
    assert not [
        d for d in _run("memory", "used_mib", used, ValueRulesConfig()) if d["kind"] == "drift"
    ]


def test_a_builds_memory_is_no_sample_of_a_leak() -> None:
    """A build every 10 minutes lifts memory by a GiB while many processes share the cores
    (a parallel job explains it); the leak under them still surfaces in time."""
    att, drifts = Attention(rules=ValueRulesConfig()), []
    rng = random.Random(9)
    for i in range(150):
        build = i % 10 == 3
        leak = 4 * (i - 60) if i >= 60 else 0
        t = T0 + i * 60 * S
        rows = [
            ("cpu", {"busy_permille": 900 if build else 100}),  # of 8 cores
            ("processes", {"top_cpu_permille": 950 if build else 750}),  # one process of 8
            ("memory", {"used_mib": 4000 + leak + (1200 if build else 0) + round(rng.gauss(0, 8))}),
        ]
        for k, (sense, readings) in enumerate(rows):
            eid = (3 * i + k).to_bytes(32, "big")
            for h, _ in att.observe(eid, 8, 1, t + k * S, IDLE, sense, readings):
                drifts += [i] if h.kind == "drift" else []
    assert drifts and 60 < drifts[0] <= 120, drifts  # with samples left out: later


def _theil_sen(samples: list[tuple[int, int]], direction: int) -> int:
    """The median slope by its definition, in Python integers (rounded toward zero)."""
    slopes = sorted(
        int(Fraction(direction * (b - a) * 3600 * S, tb - ta))
        for i, (ta, a) in enumerate(samples)
        for tb, b in samples[i + 1 :]
    )
    return slopes[(len(slopes) - 1) // 2]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 10**6), min_size=2, max_size=40),
    st.sampled_from([10, 10**6, drift._NUMPY_SPAN, 2**53 - 1]),
    st.sampled_from([1, -1]),
    st.randoms(use_true_random=False),
)
def test_the_slope_is_the_same_in_numpy_and_in_python(
    gaps: list[int], span: int, direction: int, rng: random.Random
) -> None:
    """Within the span numpy takes, and beyond it, the slope is the median of the pairs'."""
    times = [T0 + S * sum(gaps[: k + 1]) for k in range(len(gaps))]
    samples = [(t, rng.randint(-span // 2, span // 2)) for t in times]
    assert drift.slope_per_hour(samples, direction) == _theil_sen(samples, direction)


def _every_5_min(values: list[int]) -> list[int]:
    """The index of each drift decision of memory readings taken every 5 minutes."""
    att, out = Attention(rules=ValueRulesConfig()), []
    for i, v in enumerate(values):
        eid = i.to_bytes(32, "big")
        for h, _ in att.observe(eid, 8, 1, T0 + i * 300 * S, IDLE, "memory", {"used_mib": v}):
            if h.kind == "drift":
                out.append(i)
    return out


def test_a_build_seen_at_one_row_of_a_leak_is_put_back_between_its_neighbours() -> None:
    # 5-minute rows: the window holds five samples, so one row of a build's memory (1.2 GiB
    # for a minute) left the leak's window uneven for 20 minutes and its drift came late
    leak = _leak(8, 24, 12, 30, 5)
    leak[24 + 3] += 1200
    found = _every_5_min(leak)
    assert found and 24 < found[0] <= 24 + 6, found
    samples = deque([(0, 10), (1, 1000), (2, 30)])
    drift.despike(samples, drift.JUMP, 1)
    assert list(samples) == [(0, 10), (1, 20), (2, 30)]
    step = deque([(0, 10), (1, 1000), (2, 1010)])  # an app opened stays: no spike
    drift.despike(step, drift.JUMP, 1)
    assert list(step) == [(0, 10), (1, 1000), (2, 1010)]
