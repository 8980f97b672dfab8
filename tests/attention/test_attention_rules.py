"""The gate rules for value probes (nerve.attention.rules): what is surfaced, apart from what
the detector scores. Observations go as stored payload bytes through the daemon's Attender
with the default settings."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nerve.attention.detector import Highlight
from nerve.attention.pipeline import BATCH_MIN
from nerve.attention.rules import Rules, ValueRulesConfig, concern_of
from nerve.attention.service import Attender, Obs, readings_from_bytes
from nerve.attention.settings import AttentionConfig, parse_attention
from nerve.clock import Hlc
from nerve.errors import ConfigError
from nerve.events import Event, SourceClass, Trust
from tests.attention.test_attention_service import make_workspace
from tests.conftest import run_cli

S = 10**9
T0 = 1_767_261_600 * S  # 2026-01-01 10:00 UTC
Row = tuple[int, str, dict[str, int]]


def _obs(rows: list[Row]) -> list[Obs]:
    out = []
    for i, (t, sense, readings) in enumerate(sorted(rows, key=lambda r: r[0])):
        stored = json.dumps({"readings": readings}, sort_keys=True).encode()
        out.append(
            Obs(i.to_bytes(32, "big"), int(SourceClass.ENDPOINT), int(Trust.FIRST_PARTY), t, 0,
                f"{sense} {readings}", sense, readings_from_bytes(stored))
        )  # fmt: skip
    return out


def _cpu(seed: int, busy: dict[int, int], hours: float = 2.0) -> list[Row]:
    """CPU readings every 5 s at 8 % ± 1 %; ``busy`` maps a reading's second to its value."""
    rng = random.Random(seed)
    return [
        (T0 + s * S, "cpu", {"busy_permille": busy.get(s, round(rng.gauss(80, 10)))})
        for s in range(0, int(hours * 3600), 5)
    ]


def _decide(rows: list[Row], settings: AttentionConfig | None = None) -> list[dict[str, Any]]:
    att = Attender(settings or AttentionConfig(), None)
    att.observe(_obs(rows))
    return att.decisions


def _at(decisions: list[dict[str, Any]], rows: list[Row]) -> list[tuple[int, str, str]]:
    """(second of the observation, outcome, highlight kind) of each decision."""
    when = {o.id.hex(): (o.physical_ns - T0) // S for o in _obs(rows)}
    return [
        (when[d["source_event"]], d["outcome"], d["highlight"].get("kind", ""))
        for d in decisions
        if d["probe"].startswith("value:")
    ]


BURST = 5400  # 11:30, past every warm-up
HOG = 6000


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_burst_of_seconds_is_held_and_a_sustained_hog_surfaces(seed: int) -> None:
    burst = {BURST + k: 950 for k in (0, 5, 10)}  # 15 s at 95 %: a compile
    hog = {s: 600 + (s % 7) for s in range(HOG, HOG + 300, 5)}  # five minutes at 60 %
    rows = _cpu(seed, burst | hog)
    decided = _at(_decide(rows), rows)
    around_burst = [d for d in decided if BURST <= d[0] < BURST + 120]
    assert around_burst and all(o.startswith("hold") for _, o, _ in around_burst), decided
    assert "hold:transient" in {o for _, o, _ in around_burst}, decided
    surfaced = [t for t, o, _ in decided if o == "surface"]
    assert surfaced and all(HOG + 60 <= t <= HOG + 120 for t in surfaced), decided


def test_with_persistence_off_the_burst_surfaces_at_once() -> None:
    rows = _cpu(1, {BURST + k: 950 for k in (0, 5, 10)})
    off = AttentionConfig.model_validate({"rules": {"confirm_s": 0}})
    decided = _at(_decide(rows, off), rows)
    assert (BURST, "surface", "record") in decided, decided


def test_a_fire_against_the_direction_of_concern_is_held() -> None:
    rng = random.Random(4)
    rows: list[Row] = []
    free = 50_000
    for s in range(0, 3 * 3600, 30):
        free -= rng.randint(0, 2)
        if s == 2 * 3600:
            free += 5_000  # a cleanup: more free disk is no trouble
        rows.append((T0 + s * S, "disk", {"free_mib:/": free}))
    decided = _at(_decide(rows), rows)
    after = [(o, k) for t, o, k in decided if 2 * 3600 <= t < 2 * 3600 + 60]
    assert after and after[0][0] == "hold:direction", decided
    assert all(o != "surface" for _, o, _ in decided), decided


def _failing(streaks_at: list[int]) -> list[Row]:
    """A command every 90 s that succeeds, and at each start in ``streaks_at`` one failing
    eight times in a row, every 15 s."""
    rows: list[Row] = [(T0 + s * S, "shell", {"failure_streak": 0}) for s in range(0, 6 * 3600, 90)]
    for start in streaks_at:
        rows += [(T0 + (start + 15 * k) * S, "shell", {"failure_streak": k + 1}) for k in range(8)]
    return rows


def test_a_command_failing_again_surfaces_the_second_time_too() -> None:
    first, second = 2 * 3600 + 7, 5 * 3600 + 7
    rows = _failing([first, second])
    surfaced = [t for t, o, _ in _at(_decide(rows), rows) if o == "surface"]
    assert any(first <= t <= first + 120 for t in surfaced), surfaced
    assert any(second <= t <= second + 120 for t in surfaced), surfaced


def _mixed() -> list[Row]:
    rows = _cpu(5, {s: 700 for s in range(HOG, HOG + 200, 5)} | {BURST: 990}, hours=2.5)
    return rows + _failing([2 * 3600 + 7, 2 * 3600 + 3007])[:400]


def _both_ways(obs: list[Obs]) -> tuple[Attender, Attender]:
    """Two attenders with the defaults, one fed ``obs`` in one batch, one in batches small
    enough to go row by row."""
    batched = Attender(AttentionConfig(), None)
    batched.observe(obs)
    one = Attender(AttentionConfig(), None)
    for k in range(0, len(obs), BATCH_MIN // 2):
        one.observe(obs[k : k + BATCH_MIN // 2])
    return batched, one


def test_batch_and_row_by_row_decide_the_same_with_the_rules() -> None:
    rows = _mixed()
    obs = _obs(rows)
    batched, one = _both_ways(obs)
    assert batched.decisions == one.decisions
    assert batched.snapshot() == one.snapshot()
    assert any(d["outcome"] == "hold:transient" for d in one.decisions)


def test_a_restored_snapshot_carries_a_pending_fire() -> None:
    rows = _cpu(6, {s: 650 for s in range(HOG, HOG + 300, 5)})
    obs = _obs(rows)
    whole = Attender(AttentionConfig(), None)
    whole.observe(obs)
    cut = next(i for i, o in enumerate(obs) if o.physical_ns >= T0 + (HOG + 20) * S)
    first = Attender(AttentionConfig(), None)
    first.observe(obs[:cut])
    assert first.snapshot()["attention"]["rules"]["pending"], "the hog's fire is pending"
    second = Attender(AttentionConfig(), None)
    second.restore(json.loads(json.dumps(first.snapshot())))
    second.observe(obs[cut:])
    assert first.decisions + second.decisions == whole.decisions
    assert any(d["outcome"] == "surface" for d in second.decisions)


def test_concerns_come_from_the_table_and_the_settings() -> None:
    assert concern_of("value:disk.free_mib:/") == "fall"
    assert concern_of("value:cpu.busy_permille") == "up"
    assert concern_of("value:files.per_min") == "up"
    assert concern_of("value:nab.value") == "both"
    assert concern_of("value:cpu.busy_permille", {"cpu.busy_permille": "both"}) == "both"
    assert parse_attention({"rules": {"confirm_s": 30}}).rules == ValueRulesConfig(confirm_s=30)
    with pytest.raises(ConfigError, match=r"attention\.rules\.concerns"):
        parse_attention({"rules": {"concerns": {"cpu.busy_permille": "sideways"}}})


def test_a_real_log_replays_the_rules_decisions_and_checks_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    busy = {BURST + k: 950 for k in (0, 5, 10)} | {s: 650 for s in range(HOG, HOG + 300, 5)}
    events = [
        Event(
            hlc=Hlc(t, 0), node="n", kind="observation", subject="cpu",
            source=int(SourceClass.ENDPOINT), trust=Trust.FIRST_PARTY, line=f"cpu {r}",
            payload={"readings": r},
        )
        for t, _, r in _cpu(7, busy)
    ]  # fmt: skip
    ws = make_workspace(tmp_path / "ws", events, attention="")
    root = str(ws.root)
    run_cli("--workspace", root, "attend", "--replay")
    proc = run_cli("--workspace", root, "query", "--json",
                   "SELECT data->>'outcome' AS outcome FROM events "
                   "WHERE kind = 'attention.decision'")  # fmt: skip
    outcomes = [json.loads(line)["outcome"] for line in proc.stdout.splitlines()]  # type: ignore[attr-defined]
    assert "hold:transient" in outcomes and "surface" in outcomes, outcomes
    checked = json.loads(run_cli("--workspace", root, "attend", "--recompute", "--json").stdout)  # type: ignore[attr-defined]
    assert checked["ok"] is True and checked["compared"] == len(outcomes) > 0


# -- one decision per excursion: Rules fed readings directly, the level held still -----------

NAB = "value:nab.value"  # a reading of concern ``both``, with no floor and no drift
REARM_10_MIN = ValueRulesConfig(rearm_s=600)  # the returns' mechanics, on a short timeline
Step = tuple[int, int]  # (second, reading)


def _hundred(probe: str) -> int:
    return 100


def _hundred_at(second: int) -> int:
    return 100


def _at_second(expect: Callable[[int], int], second: int, probe: str) -> int:
    return expect(second)


def _record(value: int) -> Highlight:
    return Highlight(NAB, value, 100, 50, 800, 0, "record", 1)


def _actions(
    steps: list[Step],
    expect: Callable[[int], int] = _hundred_at,
    level: Callable[[int], int] = _hundred_at,
    settings: ValueRulesConfig = REARM_10_MIN,
) -> list[tuple[int, str, str]]:
    """(second, action, kind) of what :meth:`Rules.apply` gives for each reading of ``NAB``
    (``level`` and ``expect``: the probe's level and what it expects at a second, 100
    unless given: the worst case, a level that does not learn the excursion); the first
    reading comes with a detector fire."""
    rules, out = Rules(settings), []
    for seq, (second, value) in enumerate(steps):
        fires = [_record(value)] if seq == 0 else []
        at_level = functools.partial(_at_second, level, second)
        expected = functools.partial(_at_second, expect, second)
        for h, action in rules.apply({NAB: value}, fires, seq, T0 + second * S, at_level, expected):
            out.append((second, action, h.kind))
    return out


def test_a_lasting_excursion_is_decided_once_and_its_return_after_it_ended() -> None:
    lasting = [(s, 900) for s in range(0, 7200, 60)]
    again = [(7260, 100), (7400, 900), (7460, 900)]
    assert _actions(lasting + again) == [(60, "confirmed", "record"), (7460, "confirmed", "return")]


def test_by_default_an_excursion_back_within_the_hour_waits_for_the_hour() -> None:
    steps = [(0, 900), (60, 900), (120, 100)] + [(s, 900) for s in range(1800, 4300, 300)]
    assert _actions(steps, settings=ValueRulesConfig()) == [
        (60, "confirmed", "record"),
        (4200, "confirmed", "return"),
    ]
    assert _actions(steps)[-1] == (2100, "confirmed", "return")


def test_a_return_that_does_not_last_is_no_decision_and_must_be_outgone_by_the_next() -> None:
    steps = [(0, 900), (60, 900), (120, 100)]
    steps += [(800, 760), (860, 100), (920, 100), (1000, 730), (1060, 730), (1120, 100)]
    steps += [(1300, 900), (1360, 900)]
    assert _actions(steps) == [
        (60, "confirmed", "record"),
        (1360, "confirmed", "return"),
    ]


def test_an_excursion_that_keeps_coming_back_at_its_height_is_told_once_more() -> None:
    told = ((0, 900), (60, 900), (120, 100))  # an excursion, then back
    back = [(s0 + s, v) for s0 in (0, 800, 1600) for s, v in told]
    further = [(2400, 950), (2460, 950)]
    assert _actions(back + further) == [
        (60, "confirmed", "record"),
        (860, "confirmed", "return"),  # it came back: told again
        (2460, "confirmed", "return"),  # at 1600 it came back as high again: its own life
    ]


def _scores(steps: list[tuple[int, int, list[Highlight]]]) -> list[tuple[int, str, str, int]]:
    """(second, action, kind, score) of what :meth:`Rules.apply` gives for ``NAB``'s
    readings, each with the detector's fires at it, the level held at 100."""
    rules, got = Rules(REARM_10_MIN), []
    for seq, (second, value, fires) in enumerate(steps):
        for h, action in rules.apply({NAB: value}, fires, seq, T0 + second * S, _hundred, _hundred):
            got.append((second, action, h.kind, h.score_milli))
    return got


def test_a_return_takes_the_score_of_the_detectors_fire_it_absorbs() -> None:
    told = [(0, 900, [_record(900)]), (60, 900, []), (120, 100, []), (800, 900, [])]
    fire = [replace(_record(900), score_milli=640)]
    at_its_confirmation = _scores([*told, (860, 900, fire)])
    while_pending = _scores([*told, (820, 900, fire), (860, 900, [])])
    told_again = (860, "confirmed", "return", 640)
    assert at_its_confirmation == [(60, "confirmed", "record", 800), told_again]
    assert while_pending == at_its_confirmation


def _peak_from_800(second: int) -> int:
    """A cycle whose peak, learnt, comes at second 800."""
    return 900 if second >= 800 else 100


def test_a_cycles_peak_expected_at_its_hour_is_no_return() -> None:
    steps = [(0, 900), (60, 900), (120, 100), (800, 900), (860, 900)]
    assert _actions(steps)[-1] == (860, "confirmed", "return")
    assert _actions(steps, _peak_from_800) == [(60, "confirmed", "record")]
    # nor is a reading the level has followed, whatever the cycle expects
    assert _actions(steps, level=_peak_from_800) == [(60, "confirmed", "record")]


def _square(days: int, seed: int) -> list[Row]:
    """A reading every 5 minutes, high (80 ± 2) from 09:00 to 17:00 each day, else 20 ± 2."""
    rng = random.Random(seed)
    out = []
    for k in range(days * 288):
        hour = (k // 12 + 10) % 24  # T0 is 10:00
        mean = 80 if 9 <= hour < 17 else 20
        out.append((T0 + k * 300 * S, "nab", {"value": round(rng.gauss(mean, 2))}))
    return out


def test_a_daily_cycle_once_learnt_returns_no_more_and_batch_decides_as_rows() -> None:
    rows = _square(14, 3)
    obs = _obs(rows)
    batched, one = _both_ways(obs)
    assert batched.decisions == one.decisions
    returns = [t for t, o, kind in _at(batched.decisions, rows) if kind == "return"]
    assert len(returns) <= 2, returns  # the days before the cycle is learnt


def test_a_snapshot_from_before_the_excursions_end_was_watched_arms_its_returns() -> None:
    rules = Rules(REARM_10_MIN)
    rules.apply({NAB: 900}, [_record(900)], 0, T0, _hundred, _hundred)
    rules.apply({NAB: 900}, [], 1, T0 + 60 * S, _hundred, _hundred)
    snap = json.loads(json.dumps(rules.snapshot()))
    assert snap["known"][NAB]["back"] is False
    del snap["known"][NAB]["back"]
    again = Rules(REARM_10_MIN)
    again.restore(snap)
    got = again.apply({NAB: 900}, [], 2, T0 + 700 * S, _hundred, _hundred)
    assert got == [] and again.snapshot()["pending"][NAB]["highlight"]["kind"] == "return"
