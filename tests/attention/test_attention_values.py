"""Value probes: readings from payloads, the shapes that fire and those that are the norm,
exact snapshots, a real log replayed and checked bit for bit, and the bundled senses' readings."""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nerve.attention.service import readings_from_bytes
from nerve.attention.values import ValueDetector, ValueParams, readings_of
from nerve.clock import Hlc
from nerve.contract import SenseContext
from nerve.errors import EventError
from nerve.events import Event, SourceClass, Trust
from tests.attention.test_attention_service import make_workspace
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_767_225_600_000_000_000  # a Thursday, 00:00 UTC
S = 1_000_000_000


def fires(values: list[int], period_s: int = 10, params: ValueParams | None = None) -> list[int]:
    """Indices of the readings that fire, one probe fed ``values`` every ``period_s``."""
    det = ValueDetector(params)
    out = []
    for i, v in enumerate(values):
        if det.step("value:s.r", v, i, T0 + i * period_s * S) is not None:
            out.append(i)
    return out


def noise(n: int, mean: int, spread: int, seed: int = 3) -> list[int]:
    rng = random.Random(seed)
    return [mean + rng.randint(-spread, spread) for _ in range(n)]


def test_readings_are_the_payloads_integers_and_nothing_else() -> None:
    payload = {
        "readings": {
            "busy_permille": 420, "flag": True, "ratio": 0.5, "text": "9", "": 1,
            "x" * 65: 2, "huge": 2**60, "neg": -3,
        },
        "percent": 42.0,
    }  # fmt: skip
    assert readings_of(payload) == {"busy_permille": 420, "neg": -3}
    assert readings_of({"readings": [1, 2]}) == {} and readings_of("text") == {}
    stored = json.dumps(payload).encode()
    assert readings_from_bytes(stored) == {"busy_permille": 420, "neg": -3}
    assert readings_from_bytes(b"\x00\x01") == {} and readings_from_bytes(b'{"readings": ') == {}


def test_a_sustained_rise_fires_once_and_a_quiet_series_never() -> None:
    quiet = noise(600, 50, 10)
    assert fires(quiet) == []
    hog = quiet[:300] + [v + 500 for v in quiet[300:400]] + quiet[400:]
    fired = fires(hog)
    assert fired and 300 <= fired[0] <= 306  # within its sustain (6 readings)
    assert not [i for i in fired if 320 <= i < 400]  # the hog fires at its start, not on


def test_a_sustained_drop_fires_too() -> None:
    series = noise(600, 300, 10)
    series[300:360] = [v - 150 for v in series[300:360]]
    assert [i for i in fires(series) if 300 <= i <= 306]


def test_a_steady_climb_fires_before_it_is_large() -> None:
    series = noise(400, 3000, 4)
    series[300:] = [v + (i - 300) * 25 for i, v in enumerate(series[300:], start=300)]
    fired = [i for i in fires(series) if i >= 300]
    assert fired and fired[0] <= 305  # 25 a reading: found before it has grown 150


def test_spikes_that_are_the_norm_stop_firing_and_a_larger_one_still_does() -> None:
    series = noise(3000, 20, 2)
    for i in range(30, 3000, 60):  # a spike every ten minutes
        series[i] += 300
    series[2500] += 3000
    fired = fires(series)
    assert not [i for i in fired if 600 <= i < 2500]  # after a few, the spikes are the norm
    assert 2500 in fired


def test_a_daily_cycle_is_expected_on_later_days() -> None:
    minutes = 3 * 24 * 60  # one reading a minute for three days
    day = [500 + round(400 * ((m % 1440) >= 540 and (m % 1440) < 1080)) for m in range(minutes)]
    series = [v + d for v, d in zip(day, noise(minutes, 0, 5), strict=True)]
    fired = fires(series, period_s=60)
    third = [i for i in fired if i >= 2 * 1440]
    assert third == []  # by the third day 09:00 and 18:00 are the norm
    series[2 * 1440 + 300] += 400  # a rise at 05:00, when it is quiet every day
    series[2 * 1440 + 301] += 400
    assert [i for i in fires(series, period_s=60) if i >= 2 * 1440]


def test_the_snapshot_resumes_exactly() -> None:
    series = noise(800, 100, 10)
    series[500:560] = [v + 400 for v in series[500:560]]
    whole, first = ValueDetector(), ValueDetector()
    expect = [whole.step("p", v, i, T0 + i * 10 * S) for i, v in enumerate(series)]
    got = [first.step("p", v, i, T0 + i * 10 * S) for i, v in enumerate(series[:400])]
    second = ValueDetector()
    second.restore(json.loads(json.dumps(first.snapshot())))
    got += [second.step("p", v, i, T0 + i * 10 * S) for i, v in enumerate(series) if i >= 400]
    assert got == expect and any(expect)
    assert second.snapshot() == whole.snapshot()


@pytest.mark.parametrize(
    "snapshot",
    [{"v": 2, "probes": {}}, {"v": 1}, {"v": 1, "probes": {"p": {"n": 1}}},
     {"v": 1, "probes": {}, "times": {"s": ["x"]}}, {"v": 1, "probes": {}, "recency": {"s": ["p"]}},
     {"v": 1, "probes": {}, "evicted": {"s": "1"}}],
)  # fmt: skip
def test_a_malformed_snapshot_is_refused(snapshot: dict[str, Any]) -> None:
    with pytest.raises(EventError):
        ValueDetector().restore(snapshot)


def test_bad_params_are_refused() -> None:
    with pytest.raises(ValueError, match="at most 1"):
        ValueParams(alpha_num=3, alpha_den=2)


def _scores(
    values: list[int], period_s: int = 10, params: ValueParams | None = None
) -> dict[int, int]:
    """Index to score of the readings that fire (one probe, a reading every ``period_s``)."""
    det = ValueDetector(params)
    out = {}
    for i, v in enumerate(values):
        fire = det.step("value:s.r", v, i, T0 + i * period_s * S)
        if fire is not None:
            out[i] = fire.score_milli
    return out


def test_a_record_fires_at_full_score_once_the_range_is_learned() -> None:
    series = noise(1000, 100, 20)  # 80..120, a reading every 10 s
    series[200] = 400  # a record, but within the first hour: the range is still learned
    series[800] = 500  # past the range by a third of its width
    scores = _scores(series)
    assert scores.get(800) == 1000
    assert 200 not in scores or scores[200] < 900  # only the predictions judged it


def test_a_value_in_a_bin_never_visited_fires_even_inside_the_range() -> None:
    rng = random.Random(5)
    series = [rng.choice((0, 100)) + rng.randint(0, 5) for _ in range(1000)]  # two modes
    series[700] = 50  # between them: never seen, though within the range
    assert _scores(series).get(700) == 900


def test_seen_values_stay_seen_when_the_range_widens() -> None:
    """Bins are carried over as the range grows; without that, a widening shifts every bin
    and a value seen a thousand times would look new."""
    params = ValueParams(novel_quiet=0, novel_quiet_s=0, novel_warmup_s=0)
    series = [100 if i % 50 == 0 else i % 51 for i in range(1000)]  # 0..50, and 100 at times
    series[500] = 130  # the range widens to 0..130; 100 falls in another bin, still seen
    scores = _scores(series, params=params)
    assert scores.get(500) == 1000
    assert not [i for i, v in scores.items() if i > 500 and v >= 900]


def test_records_in_a_slow_drift_fire_at_most_once_an_hour() -> None:
    series = [10_000 - i // 30 + i % 3 for i in range(3 * 360)]  # 3 h, a new low now and then
    novel = [i for i, v in _scores(series).items() if v >= 900]
    assert novel and all(b - a >= 360 for a, b in itertools.pairwise(novel))


def test_one_observation_interrupts_once() -> None:
    det = ValueDetector(ValueParams(novel_warmup_s=0))
    for i in range(100):
        det.observe("net", {"down": 10 + i % 3, "up": 1 + i % 2}, i, T0 + i * 10 * S)
    fires = det.observe("net", {"down": 900, "up": 90}, 100, T0 + 100 * 10 * S)
    assert len(fires) == 1 and fires[0].score_milli == 1000
    assert fires[0].probe == "value:net.down"  # a tie: the first reading by name


def test_a_snapshot_from_before_ranges_resumes_without_a_fire() -> None:
    det = ValueDetector()
    for i, v in enumerate(noise(800, 100, 10)):
        det.step("p", v, i, T0 + i * 10 * S)
    old = det.snapshot()
    for probe in old["probes"].values():
        for name in ("lo", "hi", "bins", "novel_q", "hold", "since", "novel_at"):
            del probe[name]
    again = ValueDetector()
    again.restore(old)
    assert again.step("p", 105, 800, T0 + 800 * 10 * S) is None  # the range starts afresh


CAP = 16  # max_probes in the eviction tests
CHURN = ValueParams(max_probes=CAP, novel_warmup_s=0, novel_quiet_s=0)


def _churn(det: ValueDetector, steps: range) -> list[tuple[int, str]]:
    """A churning sense (eight new mount names a second) and a steady one joining once the
    cap is full, reporting every ten seconds, with a spike at step 1900; (step, probe) of
    each fire of the steady sense."""
    fired = []
    for i in steps:
        # Names counting down, so their order by name is not the order they were seen in.
        t, mounts = T0 + i * S, {f"free_mib:/run/{99_999 - 8 * i - k}": 100 for k in range(8)}
        det.observe("mounts", mounts, 2 * i, t)
        if i >= 100 and i % 10 == 0:
            busy = 50 + i % 7 + (900 if i == 1900 else 0)
            fired += [(i, h.probe) for h in det.observe("cpu", {"busy": busy}, 2 * i + 1, t)]
    return fired


def test_a_churning_sense_evicts_its_own_probes_and_a_steady_sense_still_fires() -> None:
    """Past the cap the churner recycles its least recently seen probes, counted in the
    snapshot; the steady sense, which joined after the cap filled and reports between 80 new
    names, keeps its share (a cap that stopped following, or evicted the least recently
    seen of all, would never let it warm up)."""
    det = ValueDetector(CHURN)
    fired = _churn(det, range(2000))
    assert (1900, "value:cpu.busy") in fired  # after 8 × 2000 names, 1000 times the cap
    snap = det.snapshot()
    assert len(snap["probes"]) == CAP and det.level("value:cpu.busy") is not None
    assert snap["evicted"] == {"mounts": 8 * 2000 + 1 - (CAP - 2)}  # all but its share
    assert snap["recency"]["cpu"] == ["value:cpu.busy", "value:cpu.per_min"]
    newest = ["value:mounts.free_mib:/run/84007", "value:mounts.per_min"]
    assert snap["recency"]["mounts"][-2:] == newest


def test_the_snapshot_resumes_evictions_exactly() -> None:
    """The restored probes are evicted in the order they were seen, not by name."""
    whole, first, second = ValueDetector(CHURN), ValueDetector(CHURN), ValueDetector(CHURN)
    expect = _churn(whole, range(1001))
    got = _churn(first, range(1000))
    second.restore(json.loads(json.dumps(first.snapshot())))
    got += _churn(second, range(1000, 1001))
    assert second.snapshot() == whole.snapshot()
    assert got + _churn(second, range(1001, 2000)) == expect + _churn(whole, range(1001, 2000))


def _cpu_events(count: int) -> list[Event]:
    events = []
    for i in range(count):
        busy = 40 + (i * 7) % 11 + (500 if 200 <= i < 260 else 0)
        events.append(
            Event(
                hlc=Hlc(T0 + i * 5 * S, 0), node="n", kind="observation", subject="cpu",
                source=int(SourceClass.ENDPOINT), trust=Trust.FIRST_PARTY,
                line=f"cpu {busy / 10:.1f}%",
                payload={"percent": busy / 10, "readings": {"busy_permille": busy}},
            )
        )  # fmt: skip
    return events


def test_a_real_log_replays_a_value_decision_and_checks_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = make_workspace(tmp_path / "ws", _cpu_events(400), attention="")
    root = str(ws.root)
    run_cli("--workspace", root, "attend", "--replay")
    proc = run_cli("--workspace", root, "query", "--json",
                   "SELECT data->>'probe' AS probe, data->>'outcome' AS outcome FROM events "
                   "WHERE kind = 'attention.decision'")  # fmt: skip
    rows = [json.loads(line) for line in proc.stdout.splitlines()]  # type: ignore[attr-defined]
    assert {"probe": "value:cpu.busy_permille", "outcome": "surface"} in rows
    checked = json.loads(run_cli("--workspace", root, "attend", "--recompute", "--json").stdout)  # type: ignore[attr-defined]
    assert checked["ok"] is True and checked["compared"] == len(rows) > 0


def test_a_real_log_replays_a_record_and_checks_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    events = _cpu_events(900)  # 75 minutes at 5 s; the hog at 200 is in the first hour
    events[850] = replace(events[850], payload={"readings": {"busy_permille": 990}})
    ws = make_workspace(tmp_path / "ws", events, attention="")
    root = str(ws.root)
    run_cli("--workspace", root, "attend", "--replay")
    proc = run_cli("--workspace", root, "query", "--json",
                   "SELECT data->>'probe' AS probe, data->'highlight'->>'score_milli' AS score "
                   "FROM events WHERE kind = 'attention.decision'")  # fmt: skip
    rows = [json.loads(line) for line in proc.stdout.splitlines()]  # type: ignore[attr-defined]
    assert {"probe": "value:cpu.busy_permille", "score": "1000"} in rows
    checked = json.loads(run_cli("--workspace", root, "attend", "--recompute", "--json").stdout)  # type: ignore[attr-defined]
    assert checked["ok"] is True and checked["compared"] == len(rows) > 0


def test_a_changed_value_setting_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = make_workspace(tmp_path / "ws", _cpu_events(400), attention="")
    root = str(ws.root)
    run_cli("--workspace", root, "attend", "--replay")
    yaml = ws.root / "nerve.yaml"
    yaml.write_text(yaml.read_text() + "attention:\n  values: {k_milli: 90000}\n")
    proc = run_cli("--workspace", root, "attend", "--recompute", "--json", check=False)
    assert json.loads(proc.stdout)["ok"] is False  # type: ignore[attr-defined]


def _mount_events(seconds: range) -> list[Event]:
    """A sense whose reading names churn: eight mount points, new each second."""
    return [
        Event(
            hlc=Hlc(T0 + i * S + 1, 0), node="n", kind="observation", subject="mounts",
            source=int(SourceClass.ENDPOINT), trust=Trust.FIRST_PARTY, line=f"mounts {i}",
            payload={"readings": {f"free_mib:/run/{99_999 - 8 * i - k}": 100 for k in range(8)}},
        )
        for i in seconds
    ]  # fmt: skip


def test_a_churning_sense_cannot_blind_a_real_log_and_the_check_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cap of 32: the churner fills it before the cpu sense starts, and makes 400 times
    the cap of names; cpu's hog is still surfaced, and every decision recomputes bit for
    bit."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cpu, mounts = _cpu_events(300), _mount_events(range(-100, 1500))
    events = sorted(cpu + mounts, key=lambda e: e.hlc)
    ws = make_workspace(tmp_path / "ws", events, "attention:\n  values: {max_probes: 32}\n")
    root = str(ws.root)
    run_cli("--workspace", root, "attend", "--replay")
    proc = run_cli("--workspace", root, "query", "--json",
                   "SELECT data->>'probe' AS probe, data->>'outcome' AS outcome FROM events "
                   "WHERE kind = 'attention.decision'")  # fmt: skip
    rows = [json.loads(line) for line in proc.stdout.splitlines()]  # type: ignore[attr-defined]
    assert {"probe": "value:cpu.busy_permille", "outcome": "surface"} in rows
    checked = json.loads(run_cli("--workspace", root, "attend", "--recompute", "--json").stdout)  # type: ignore[attr-defined]
    assert checked["ok"] is True and checked["compared"] == len(rows) > 0
    newest = (
        "SELECT payload FROM events WHERE kind = 'attention.snapshot' ORDER BY physical_ns DESC"
    )
    snap = json.loads(bytes(ws.connect().execute(newest).fetchone()[0]))
    evicted = snap["attention"]["values"]["evicted"]
    assert list(evicted) == ["mounts"] and evicted["mounts"] >= 10 * 32


def _sense(name: str) -> Any:
    path = ROOT / "senses" / name / "sense.py"
    spec = importlib.util.spec_from_file_location(f"values_sense_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("cpu", {"busy_permille"}),
        ("memory", {"used_mib"}),
        ("disk", {"free_mib:/", "read_kib_per_s", "write_kib_per_s"}),
        ("network", {"down_kib_per_s", "up_kib_per_s", "errors"}),
    ],
)
def test_the_bundled_senses_declare_integer_readings(
    name: str, want: set[str], tmp_path: Path
) -> None:
    sense = _sense(name)
    state = json.loads(json.dumps(sense.initial_state))
    seen: dict[str, int] = {}
    for _ in range(2):  # disk and network observe rates from their second compute on
        result = sense.compute(state, SenseContext(name, tmp_path, {}))
        state = result.state
        for obs in result.observations:
            seen.update(readings_of(json.loads(json.dumps(obs.payload))))
    assert want <= set(seen), seen
    assert all(isinstance(v, int) for v in seen.values())
