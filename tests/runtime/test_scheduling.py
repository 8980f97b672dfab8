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


def test_a_manual_trigger_runs_at_once_past_throttle_and_grace() -> None:
    rec = Recorder()
    rec.scheduler.load(
        [Plan("echo", on=("src",), throttle_ms=1000), Plan("late", on=("src",), grace_ms=2000)]
    )
    rec.scheduler.trigger("echo", "on:src")
    for _ in range(3):
        rec.timers.advance(10 * MS)
        rec.scheduler.trigger("echo", "manual")
        rec.scheduler.trigger("late", "manual")
    assert [(s, r) for s, r, _ in rec.fired] == [("echo", "on:src")] + [
        ("echo", "manual"),
        ("late", "manual"),
    ] * 3
    assert rec.skipped == []  # nothing deferred, nothing skipped
    rec.timers.advance(5 * NS)
    assert len(rec.fired) == 7  # and nothing deferred fires later


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
    assert skips.totals("cpu") == {"throttle": 600}
    skips.flush()  # the minute has not ended: nothing yet
    assert len(records) == 1
    now[0] += 31 * NS
    skips.flush()
    assert [(r["reason"], r["count"]) for r in records] == [("throttle", 1), ("throttle", 599)]
    assert records[1]["line"] == "cpu: 599 ticks skipped (throttle)"
    assert skips.totals("cpu") == {"throttle": 600}


def test_a_new_reason_and_the_first_skip_after_a_compute_are_recorded_at_once() -> None:
    """A compute makes the next skip news, unless the sense wrote a record in the last 10 s."""
    skips, records, now = skip_log()
    skips.note("cpu", "throttle")
    skips.note("cpu", "throttle")  # folded
    skips.note("cpu", "overlap")  # a reason not recorded this minute: at once
    skips.computed("cpu")
    now[0] += NS
    skips.note("cpu", "throttle")  # after a compute, but the last record is 1 s old: folded
    assert len(records) == 2
    skips.computed("cpu")
    now[0] += 10 * NS
    skips.note("cpu", "throttle")  # the first after a compute: at once, with the folded ones
    assert [(r["reason"], r["count"]) for r in records] == [
        ("throttle", 1),
        ("overlap", 1),
        ("throttle", 3),
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
    assert skips.totals("cpu") == {"throttle": 104, "overlap": 101}


def test_a_compute_skip_names_its_reason_and_says_who_skipped() -> None:
    skips, records, _ = skip_log()
    skips.note("mail", "no new mail", by="compute")
    assert records[0]["by"] == "compute"
    assert records[0]["line"] == "mail: skipped (compute: no new mail)"


# -- cron ------------------------------------------------------------------------------


def _wall(text: str, tz: str) -> int:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return int(datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()) * NS


def _local(wall_ns: int, tz: str) -> str:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return datetime.fromtimestamp(wall_ns / NS, ZoneInfo(tz)).strftime("%m-%d %H:%M %Z")


class WallRecorder(Recorder):
    def _dispatch(self, sense: str, reason: str, due: int) -> None:
        self.fired.append((sense, reason, self.timers.wall_ns()))


def _cron_fires(expr: str, tz: str, start: str, end: str) -> list[str]:
    rec = WallRecorder(FakeTimers(_wall(start, tz)))
    rec.scheduler.load([Plan("report", cron=expr, timezone=tz, jitter_ms=0)])
    rec.timers.advance(_wall(end, tz) - _wall(start, tz))
    return [_local(at, tz) for _, reason, at in rec.fired if reason == "schedule"]


def test_cron_keeps_local_time_across_the_spring_dst_change() -> None:
    fires = _cron_fires("0 9 * * *", "Europe/Berlin", "2025-03-29T08:00", "2025-04-01T08:00")
    assert fires == ["03-29 09:00 CET", "03-30 09:00 CEST", "03-31 09:00 CEST"]
    # 02:30 does not exist on 30 March: it runs once, at the next valid minute
    fires = _cron_fires("30 2 * * *", "Europe/Berlin", "2025-03-29T12:00", "2025-04-01T12:00")
    assert fires == ["03-30 03:00 CEST", "03-31 02:30 CEST", "04-01 02:30 CEST"]


def test_cron_runs_a_repeated_autumn_hour_once_and_weekdays_only() -> None:
    fires = _cron_fires("30 2 * * *", "Europe/Berlin", "2025-10-25T12:00", "2025-10-27T12:00")
    assert fires == ["10-26 02:30 CEST", "10-27 02:30 CET"]
    fires = _cron_fires("0 9 * * 1-5", "America/New_York", "2025-11-01T00:00", "2025-11-08T00:00")
    assert fires == [f"11-{d:02d} 09:00 EST" for d in (3, 4, 5, 6, 7)]


# -- jitter ----------------------------------------------------------------------------


def _first_ticks(names: list[str], jitter_ms: int | None) -> dict[str, int]:
    rec = Recorder()
    start = rec.timers.now_ns()
    rec.scheduler.load([Plan(n, interval_ms=5000, jitter_ms=jitter_ms) for n in names])
    rec.timers.advance(5 * NS)
    first: dict[str, int] = {}
    for sense, _, at in rec.fired:
        first.setdefault(sense, at - start)
    return first


def test_jitter_spreads_senses_over_the_interval_the_same_way_on_every_start() -> None:
    names = [f"sense-{i}" for i in range(200)]
    first = _first_ticks(names, 5000)
    assert first == _first_ticks(names, 5000)  # a restart keeps every sense's phase
    assert len(first) == 200 and all(0 <= at < 5 * NS + GRID for at in first.values())
    per_half_second = [0] * 10
    for at in first.values():
        per_half_second[min(9, at // (NS // 2))] += 1
    assert max(per_half_second) < 40  # about 20 each: no burst
    assert len(set(first.values())) > 150


def test_a_jitter_of_zero_fires_together_and_a_smaller_one_stays_within_it() -> None:
    names = [f"sense-{i}" for i in range(50)]
    assert set(_first_ticks(names, 0).values()) == {0}
    assert all(at <= 500 * MS + GRID for at in _first_ticks(names, 500).values())


GRID = 2 * MS


# -- catch-up --------------------------------------------------------------------------


def _slept(plan: Plan, sleep_s: int) -> Recorder:
    rec = Recorder()
    rec.scheduler.load([plan])
    rec.timers.advance(90 * NS)
    rec.fired.clear()
    rec.timers.sleep(sleep_s * NS)  # wall time runs on, monotonic time stands still
    rec.timers.advance(2 * NS)  # awake: the clock check notices
    return rec


def test_after_a_sleep_catch_up_once_runs_one_compute_and_skips_the_rest() -> None:
    rec = _slept(Plan("poll", interval_ms=60_000), 3600)
    assert [r for _, r, _ in rec.fired] == ["catch-up"]
    assert rec.reasons() == {"missed": 59}


def test_after_a_sleep_catch_up_skip_and_all_and_the_window() -> None:
    rec = _slept(Plan("poll", interval_ms=60_000, catch_up="skip"), 3600)
    assert rec.fired == [] and rec.reasons() == {"missed": 60}
    rec = _slept(Plan("poll", interval_ms=60_000, catch_up="all"), 3600)
    assert [r for _, r, _ in rec.fired] == ["catch-up"] * 60 and rec.reasons() == {}
    windowed = Plan("poll", interval_ms=60_000, catch_up="all", catch_up_window_ms=600_000)
    rec = _slept(windowed, 3600)
    assert len(rec.fired) == 10 and rec.reasons() == {"missed": 50}


def test_a_short_pause_of_the_loop_is_not_a_sleep() -> None:
    rec = _slept(Plan("poll", interval_ms=60_000), 2)
    assert rec.fired == [] and rec.reasons() == {}


def test_a_cron_sense_catches_up_after_a_sleep_and_fires_on_time_again() -> None:
    tz = "UTC"
    rec = WallRecorder(FakeTimers(_wall("2025-06-02T10:30", tz)))
    rec.scheduler.load([Plan("hourly", cron="0 * * * *", timezone=tz, jitter_ms=0)])
    rec.timers.sleep(5 * 3600 * NS)  # asleep from 10:30 to 15:30: 11:00 … 15:00 missed
    rec.timers.advance(2 * NS)
    assert [(r, _local(at, tz)) for _, r, at in rec.fired] == [("catch-up", "06-02 15:30 UTC")]
    assert rec.reasons() == {"missed": 4}
    rec.timers.advance(3600 * NS)
    assert _local(rec.fired[-1][2], tz) == "06-02 16:00 UTC"  # not 5 h late


def test_a_start_after_downtime_catches_up_and_keeps_the_interval_phase() -> None:
    rec = Recorder()
    wall = rec.timers.wall_ns()
    plans = [
        Plan("hourly", interval_ms=3_600_000, jitter_ms=0),
        Plan("minutely", interval_ms=60_000),
    ]
    rec.scheduler.load(plans, down_since_ns=wall - 30 * 60 * NS)  # down for half an hour
    rec.timers.advance(NS)
    assert [(s, r) for s, r, _ in rec.fired] == [("minutely", "catch-up")]
    assert rec.reasons() == {"missed": 29}
    rec.timers.advance(30 * 60 * NS - 2 * NS)
    assert "hourly" not in {s for s, _, _ in rec.fired}  # its next tick is an hour after the last
    rec.timers.advance(2 * NS)
    assert ("hourly", "interval") in {(s, r) for s, r, _ in rec.fired}


# -- nerve.yaml ------------------------------------------------------------------------


def _issues(body: str) -> list[str]:
    from nerve.config import parse_config
    from nerve.config.issues import InvalidConfig

    try:
        parse_config("senses:\n  s:\n" + body, "nerve.yaml")
    except InvalidConfig as exc:
        return [str(i) for i in exc.issues]
    return []


def test_the_scheduling_keys_are_validated_with_file_and_line() -> None:
    assert _issues('    schedule: "61 9 * * *"\n') == [
        "nerve.yaml:3:5: senses.s.schedule: invalid cron expression '61 9 * * *': bad minute"
        " (five fields: minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5')"
    ]
    assert _issues('    schedule: "0 9 * * 1-5"\n    interval: 1m\n') == [
        "nerve.yaml:3:5: senses.s.schedule: give 'schedule' (cron) or 'interval', not both"
    ]
    assert _issues("    interval: 1m\n    timezone: UTC\n") == [
        "nerve.yaml:4:5: senses.s.timezone: 'timezone' applies to a cron 'schedule'; this sense"
        " has none"
    ]
    assert _issues('    schedule: "0 0 * * *"\n    timezone: Mars/Olympus\n') == [
        "nerve.yaml:4:5: senses.s.timezone: unknown time zone 'Mars/Olympus' (an IANA name such"
        " as 'Europe/Berlin' or 'UTC')"
    ]
    assert (
        "must be a percentage from 0% to 100%" in _issues("    interval: 5s\n    jitter: 120%\n")[0]
    )
    assert (
        "with 'schedule' or 'on' give a duration"
        in _issues('    schedule: "* * * * *"\n    jitter: 10%\n')[0]
    )
    assert _issues("    interval: 5s\n    catch_up: sometimes\n") == [
        "nerve.yaml:4:5: senses.s.catch_up: must be 'skip', 'once' or 'all' (got 'sometimes')"
    ]
    assert "invalid duration" in _issues("    interval: 5s\n    catch_up_window: soon\n")[0]


def test_jitter_as_a_share_of_the_interval_or_a_duration() -> None:
    from nerve.config import parse_config

    config = parse_config(
        "senses:\n  a: {interval: 5s, jitter: 10%}\n  b: {schedule: '0 9 * * 1-5', jitter: 2m}\n"
    )
    assert (config.senses["a"].jitter_ms, config.senses["b"].jitter_ms) == (500, 120_000)
    assert config.senses["a"].catch_up == "once" and config.senses["a"].catch_up_window is None


def test_workflow_overlap_policies_and_the_old_overflow_spelling() -> None:
    from nerve.config import parse_config

    flows = parse_config(
        "workflows:\n  a: {}\n  b: {overflow: queue}\n  c: {overlap: cancel_other}\n"
    ).workflows
    assert [flows[n].policy for n in "abc"] == ["skip", "buffer_all", "cancel_other"]
    issues = [
        str(i)
        for i in _workflow_issues("workflows:\n  w:\n    overlap: skip\n    overflow: drop\n")
    ]
    assert issues == [
        "nerve.yaml:4:5: workflows.w.overflow: give 'overlap' alone"
        " ('overflow' is its old spelling)"
    ]
    assert "must be 'skip', 'buffer_one'" in str(
        _workflow_issues("workflows:\n  w: {overlap: x}\n")
    )


def _workflow_issues(text: str) -> list[object]:
    from nerve.config import parse_config
    from nerve.config.issues import InvalidConfig

    try:
        parse_config(text, "nerve.yaml")
    except InvalidConfig as exc:
        return list(exc.issues)
    return []


def test_no_flood_at_200_senses_skipping_20_times_a_second_between_computes() -> None:
    skips, records, now = skip_log()
    senses = [f"s{i:03d}" for i in range(200)]
    for _ in range(20 * 60):  # one minute: every sense computes, then skips, 20 times a second
        for sense in senses:
            skips.computed(sense)
            skips.note(sense, "overlap")
        now[0] += NS // 20
        skips.flush()
    skips.flush(everything=True)
    assert sum(r["count"] for r in records) == 200 * 20 * 60  # every skip is counted
    assert len(records) <= 200 * 8  # at once every 10 s, plus the minute's fold: ~7 a sense
