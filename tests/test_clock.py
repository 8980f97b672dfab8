from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerve.clock import LOGICAL_MAX, Hlc, HybridClock
from nerve.errors import ClockError


class FakeTime:
    def __init__(self, start: int = 1_000) -> None:
        self.now = start

    def __call__(self) -> int:
        return self.now


def test_now_follows_physical_and_ticks_logical_when_stuck() -> None:
    t = FakeTime(1_000)
    clock = HybridClock(t)
    assert clock.now() == Hlc(1_000, 0)
    assert clock.now() == Hlc(1_000, 1)
    t.now = 2_000
    assert clock.now() == Hlc(2_000, 0)
    t.now = 1_500  # wall clock went backwards: the clock does not
    assert clock.now() == Hlc(2_000, 1)


def test_seed_makes_later_stamps_exceed_stored_max() -> None:
    clock = HybridClock(FakeTime(10))
    clock.seed(Hlc(5_000, 7))
    assert clock.now() == Hlc(5_000, 8)


def test_logical_overflow_advances_physical() -> None:
    clock = HybridClock(FakeTime(10), last=Hlc(10, LOGICAL_MAX))
    assert clock.now() == Hlc(11, 0)


def test_reserve_returns_a_run_of_consecutive_stamps() -> None:
    clock = HybridClock(FakeTime(10))
    first = clock.reserve(5)
    assert first == Hlc(10, 0)
    assert clock.last == Hlc(10, 4)
    assert clock.now() == Hlc(10, 5)


def test_receive_rules() -> None:
    t = FakeTime(1_000)
    clock = HybridClock(t, max_offset_ns=500)
    assert clock.receive(Hlc(1_200, 3)) == Hlc(1_200, 4)
    assert clock.receive(Hlc(1_200, 9)) == Hlc(1_200, 10)
    assert clock.receive(Hlc(100, 0)) == Hlc(1_200, 11)
    t.now = 5_000
    assert clock.receive(Hlc(100, 0)) == Hlc(5_000, 0)


def test_receive_refuses_a_stamp_too_far_ahead() -> None:
    clock = HybridClock(FakeTime(1_000), max_offset_ns=500)
    with pytest.raises(ClockError, match="ahead of this clock"):
        clock.receive(Hlc(1_501, 0))
    assert clock.last == Hlc(0, 0)  # nothing changed


def test_parse() -> None:
    assert Hlc.parse("12.3") == Hlc(12, 3)
    assert Hlc.parse("12") == Hlc(12, 0)
    with pytest.raises(ClockError):
        Hlc.parse("x.1")


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("tick"), st.integers(0, 10**6)),
            st.tuples(st.just("recv"), st.tuples(st.integers(0, 10**6), st.integers(0, 100))),
            st.tuples(st.just("reserve"), st.integers(1, 50)),
        ),
        max_size=60,
    )
)
def test_stamps_strictly_increase_whatever_happens(ops: list[tuple[str, object]]) -> None:
    t = FakeTime(0)
    clock = HybridClock(t, max_offset_ns=10**7)
    last = Hlc(0, 0)
    seen = [last]
    for op, arg in ops:
        if op == "tick":
            t.now = int(arg)  # type: ignore[call-overload]
            stamp = clock.now()
        elif op == "recv":
            stamp = clock.receive(Hlc(*arg))  # type: ignore[misc]
            assert stamp > Hlc(*arg)  # type: ignore[misc]
        else:
            stamp = clock.reserve(int(arg))  # type: ignore[call-overload]
            stamp = clock.last
        assert stamp > seen[-1]
        seen.append(stamp)


def test_the_skew_variable_moves_the_default_wall_clock_and_nothing_else() -> None:
    import time

    from nerve.clock import wall_clock

    assert wall_clock({}) is time.time_ns
    for skew_ms in (300, -300):
        before = time.time_ns()
        moved = wall_clock({"NERVE_CLOCK_SKEW_MS": str(skew_ms)})()
        after = time.time_ns()
        assert before <= moved - skew_ms * 1_000_000 <= after
    with pytest.raises(ClockError, match="NERVE_CLOCK_SKEW_MS='soon'"):
        wall_clock({"NERVE_CLOCK_SKEW_MS": "soon"})
