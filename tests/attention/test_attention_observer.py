"""The salience observer: exact counts, exact thousandths, snapshot and restore."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerve.attention.observer import Observer, Projection, Ratio
from nerve.canonical import canonical_json
from nerve.errors import EventError

STREAM = [(5, 1), (5, 3), (0, 2), (1, 1), (5, 1), (0, 0)]
# (salience, novelty, uncertainty) as exact ratios after each observation, window 4
EXPECTED = [
    ((1, 1), (0, 1), (0, 1)),
    ((2, 2), (0, 2), (1, 2)),
    ((1, 3), (2, 3), (2, 3)),
    ((1, 4), (3, 4), (2, 4)),
    ((2, 4), (2, 5), (2, 4)),
    ((2, 4), (4, 6), (1, 4)),
]
EXPECTED_MILLI = [
    (1000, 0, 0),
    (1000, 0, 500),
    (333, 667, 667),
    (250, 750, 500),
    (500, 400, 500),
    (500, 667, 250),
]


def _ratios(p: Projection) -> tuple[tuple[int, int], ...]:
    return tuple((r.num, r.den) for r in (p.salience, p.novelty, p.uncertainty))


def test_fixed_stream_exact_ratios_and_milli() -> None:
    obs = Observer(window=4)
    for i, (source, trust) in enumerate(STREAM):
        p = obs.observe(source, trust)
        assert p.seq == i
        assert _ratios(p) == EXPECTED[i]
        assert tuple(p.milli().values()) == EXPECTED_MILLI[i]


@pytest.mark.parametrize(
    ("num", "den", "milli"),
    [(0, 1, 0), (1, 1, 1000), (1, 3, 333), (2, 3, 667), (1, 8, 125), (1, 16, 63), (1, 2000, 1)],
)
def test_ratio_rounds_half_up(num: int, den: int, milli: int) -> None:
    assert Ratio(num, den).milli == milli


@pytest.mark.parametrize(("num", "den"), [(1, 0), (2, 1), (-1, 2)])
def test_ratio_out_of_range(num: int, den: int) -> None:
    with pytest.raises(EventError):
        Ratio(num, den)


@pytest.mark.parametrize(("source", "trust"), [(10, 1), (0, 4), (0, True), (-1, 0)])
def test_bad_input_is_refused(source: int, trust: int) -> None:
    with pytest.raises(EventError):
        Observer().observe(source, trust)


def test_vendor_sources_are_counted() -> None:
    obs = Observer(window=2)
    obs.observe(2048, 0)
    assert obs.observe(2048, 0).salience == Ratio(2, 2)


def test_window_must_be_positive() -> None:
    with pytest.raises(EventError):
        Observer(window=0)


streams = st.lists(
    st.tuples(st.sampled_from([0, 1, 2, 5, 9, 1024]), st.integers(0, 3)), max_size=120
)


@given(streams, st.integers(1, 16))
def test_two_runs_are_byte_identical(stream: list[tuple[int, int]], window: int) -> None:
    a, b = Observer(window), Observer(window)
    out_a = [a.observe(*o).milli() for o in stream]
    out_b = [b.observe(*o).milli() for o in stream]
    assert out_a == out_b
    assert canonical_json(a.snapshot()) == canonical_json(b.snapshot())


@given(streams, streams, st.integers(1, 16))
def test_restore_resumes_exactly(
    first: list[tuple[int, int]], rest: list[tuple[int, int]], window: int
) -> None:
    whole = Observer(window)
    for o in first:
        whole.observe(*o)
    resumed = Observer(window)
    resumed.restore(json.loads(json.dumps(whole.snapshot())))
    assert resumed.snapshot() == whole.snapshot()
    for o in rest:
        assert resumed.observe(*o) == whole.observe(*o)


def test_restore_into_smaller_window_keeps_newest() -> None:
    big = Observer(4)
    for o in STREAM:
        big.observe(*o)
    small = Observer(2)
    small.restore(big.snapshot())
    assert small.snapshot()["recent"] == [[5, 1], [0, 0]]
    assert small.seen == len(STREAM)


@pytest.mark.parametrize(
    "snapshot",
    [
        {},
        {"v": 2, "recent": [], "counts": []},
        {"v": 1, "recent": [[0, 9]], "counts": [[0, 1]]},
        {"v": 1, "recent": [[0, 1]], "counts": [[0, 0]]},
        {"v": 1, "recent": [[0, 1], [0, 1]], "counts": [[0, 1]]},
        {"v": 1, "recent": "x", "counts": []},
    ],
)
def test_bad_snapshots_are_refused(snapshot: dict[str, object]) -> None:
    obs = Observer(4)
    with pytest.raises(EventError):
        obs.restore(snapshot)
    assert obs.seen == 0
