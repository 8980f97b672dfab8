"""Scheduling semantics with a fake clock: skip reasons and their folding."""

from __future__ import annotations

from typing import Any

from nerve.runtime.scheduler import MS, NS, Plan, Scheduler
from nerve.runtime.skips import Skips
from tests.helpers.fakeclock import FakeTimers

WALL0 = 1_750_000_000 * NS


class Recorder:
    """A scheduler wired to lists: what was dispatched, which ticks were skipped and why."""

    def __init__(self, timers: FakeTimers | None = None) -> None:
        self.timers = timers or FakeTimers(WALL0)
        self.fired: list[tuple[str, str, int]] = []  # sense, reason, monotonic ns
        self.skipped: list[tuple[str, str, int]] = []
        self.scheduler = Scheduler(self._dispatch, on_skip=self._skip, timers=self.timers)

    def _dispatch(self, sense: str, reason: str, due: int) -> None:
        self.fired.append((sense, reason, self.timers.now_ns()))

    def _skip(self, sense: str, reason: str, count: int) -> None:
        self.skipped.append((sense, reason, count))

    def reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for _, reason, count in self.skipped:
            out[reason] = out.get(reason, 0) + count
        return out


def test_throttled_triggers_beyond_the_one_deferred_are_skipped_as_throttle() -> None:
    rec = Recorder()
    rec.scheduler.load([Plan("echo", on=("src",), throttle_ms=1000)])
    for _ in range(5):
        rec.scheduler.trigger("echo", "on:src")
        rec.timers.advance(100 * MS)
    # the first runs, the second is deferred to the window's end, three are skipped
    assert [r for _, r, _ in rec.fired] == ["on:src"]
    assert rec.reasons() == {"throttle": 3}
    rec.timers.advance(NS)
    assert [r for _, r, _ in rec.fired] == ["on:src", "on:src+deferred"]


def test_triggers_during_grace_are_skipped_as_grace() -> None:
    rec = Recorder()
    rec.scheduler.load([Plan("late", on=("src",), grace_ms=2000)])
    for _ in range(4):
        rec.scheduler.trigger("late", "on:src")
    assert rec.reasons() == {"grace": 3} and rec.fired == []
    rec.timers.advance(2 * NS)
    assert [r for _, r, _ in rec.fired] == ["on:src+deferred"]


def test_interval_ticks_the_loop_fell_behind_on_are_skipped_as_late() -> None:
    rec = Recorder()
    rec.scheduler.load([Plan("fast", interval_ms=100)])
    rec.timers.advance(NS)
    before = len(rec.fired)
    rec.timers.mono += 550 * MS  # the loop was busy for 550 ms: no alarm ran meanwhile
    rec.timers.wall += 550 * MS
    rec.timers.advance(1)
    assert len(rec.fired) == before + 1  # one tick, not six
    assert rec.reasons() == {"late": 5}


def skip_log(fold_s: int = 60) -> tuple[Skips, list[dict[str, Any]], list[int]]:
    records: list[dict[str, Any]] = []
    now = [WALL0]
    skips = Skips(lambda s, line, p: records.append({**p, "line": line}), clock=lambda: now[0])
    skips.fold_ns = fold_s * NS
    return skips, records, now


def test_skips_are_recorded_at_once_then_folded_to_one_record_per_minute() -> None:
    skips, records, now = skip_log()
    for _ in range(20 * 30):  # 20 skips a second for 30 s
        skips.note("cpu", "throttle")
        now[0] += NS // 20
    assert [(r["reason"], r["count"]) for r in records] == [("throttle", 1)]
    assert records[0]["line"] == "cpu: skipped (throttle)"
    skips.flush()  # the minute has not ended: nothing yet
    assert len(records) == 1
    now[0] += 31 * NS
    skips.flush()
    assert [(r["reason"], r["count"]) for r in records] == [("throttle", 1), ("throttle", 599)]
    assert records[1]["line"] == "cpu: 599 ticks skipped (throttle)"
    assert skips.totals("cpu") == {"throttle": 600}


def test_a_new_reason_and_the_first_skip_after_a_compute_are_recorded_at_once() -> None:
    skips, records, now = skip_log()
    skips.note("cpu", "throttle")
    skips.note("cpu", "throttle")  # folded
    skips.note("cpu", "overlap")  # a reason not recorded this minute: at once
    skips.computed("cpu")
    now[0] += NS
    skips.note("cpu", "throttle")  # the first after a compute: at once, with the folded one
    assert [(r["reason"], r["count"]) for r in records] == [
        ("throttle", 1),
        ("overlap", 1),
        ("throttle", 2),
    ]
    for _ in range(100):  # reasons that alternate are still folded
        skips.note("cpu", "throttle")
        skips.note("cpu", "overlap")
    assert len(records) == 3
    skips.flush(everything=True)  # what the daemon does when it stops
    assert sorted((r["reason"], r["count"]) for r in records[3:]) == [
        ("overlap", 100),
        ("throttle", 100),
    ]
    assert skips.totals("cpu") == {"throttle": 103, "overlap": 101}


def test_a_compute_skip_names_its_reason_and_says_who_skipped() -> None:
    skips, records, _ = skip_log()
    skips.note("mail", "no new mail", by="compute")
    assert records[0]["by"] == "compute"
    assert records[0]["line"] == "mail: skipped (compute: no new mail)"
