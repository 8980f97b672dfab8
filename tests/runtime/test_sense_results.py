"""Seed 001's return shapes and signals: a launch is not a signal, results without state, and a
sense paced on its own signal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from nerve.config import parse_config, validate_config
from nerve.contract import Result, normalise_result
from nerve.runtime.senses import layout
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.daemon_util import Daemon, started, write_sense

# {path, workflow} and {path}, as a TypeScript sense returns them: no state at all.
LAUNCHER = """
calls = 0
initial_state = {"kept": True}
def compute(state):
    global calls
    calls += 1
    if calls % 2:
        return {"path": f"/p{calls}", "workflow": "cleanup|2|disk nearly full"}
    return {"path": f"/p{calls}"}
"""
LISTENER = """
initial_state = {"n": 0}
def compute(state):
    return {"state": {"n": state["n"] + 1}}
"""
# The explicit opt-in: launch and signal.
BOTH = """
from nerve import Result
initial_state = {"n": 0}
def compute(state):
    return Result(state={"n": state["n"] + 1}, workflow="cleanup|1|again", signal=True)
"""
PULSE = """
initial_state = {"n": 0}
def compute(state):
    return {"state": {"n": state["n"] + 1}}
"""
CONFIG = """
senses:
  launcher: {group: a, interval: 300ms}
  listener: {group: a, on: [launcher]}
  both: {group: b, interval: 400ms}
  both-listener: {group: b, path: senses/listener, on: [both]}
  pulse: {group: c, on: [pulse], throttle: 200ms}
workflows:
  cleanup: {concurrency: 1}
"""


def test_a_mapping_without_state_keeps_the_state() -> None:
    result = normalise_result({"path": "/data", "workflow": "cleanup|3|full"}, {"n": 4})
    assert result.state == {"n": 4}
    assert result.workflow == "cleanup|3|full"
    assert result.value == {"path": "/data"} and result.signal is None
    assert normalise_result({"signal": False}, 1) == Result(state=1, signal=False)
    assert normalise_result({"state": 2}, 1).signal is None  # decided by the launch


@pytest.mark.parametrize(
    ("yaml", "ok"),
    [
        ("senses:\n  cpu: {on: [cpu], throttle: 1s}\n", True),
        ("senses:\n  cpu: {on: [cpu], interval: 1s}\n", True),
        ("senses:\n  cpu: {}\nreflexes:\n  - {sense: cpu, interval: 1s, on: [cpu]}\n", True),
        ("senses:\n  cpu: {throttle: 2s}\nreflexes:\n  - {sense: cpu, on: [cpu]}\n", True),
        ("senses:\n  cpu: {on: [cpu]}\n", False),
        ("senses:\n  cpu: {}\nreflexes:\n  - {sense: cpu, on: [cpu]}\n", False),
    ],
)
def test_a_sense_on_its_own_signal_needs_a_throttle_or_interval(
    tmp_path: Path, yaml: str, ok: bool
) -> None:
    (tmp_path / "nerve.yaml").write_text(yaml)
    issues = [str(issue) for issue in validate_config(tmp_path / "nerve.yaml")]
    if ok:
        assert issues == []
    else:
        assert len(issues) == 1
        assert "on its own signal without a 'throttle' or 'interval': it would loop" in issues[0]


def test_an_interval_paces_a_sense_on_its_own_signal(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    for name in ("tick", "tock"):
        write_sense(ws.root, name, PULSE)
    text = "senses:\n  tick: {on: [tick], interval: 2s}\n  tock: {on: [tick], interval: 2s}\n"
    config = parse_config(text, "nerve.yaml")
    plans = {plan.sense: plan for plan in layout(WorkspaceDir(ws.root), config).plans}
    assert plans["tick"].throttle_ms == 2000  # its own signal repeats it at most once an interval
    assert plans["tock"].throttle_ms is None  # another sense's signal is not throttled


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    ws = init_workspace(tmp_path_factory.mktemp("results") / "ws")
    for name, code in (("launcher", LAUNCHER), ("listener", LISTENER), ("both", BOTH)):
        write_sense(ws.root, name, code)
    write_sense(ws.root, "pulse", PULSE)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with started(ws.root) as d:
        yield d


def test_a_launch_is_not_a_signal_and_a_stateless_return_keeps_state(daemon: Daemon) -> None:
    daemon.wait_for(lambda: len(daemon.events("signal", "launcher")) >= 2, what="computes")
    # a compute that leaves the state as it was is counted, not stored (README: Footprint)
    states = daemon.events("sense.state", "launcher")
    assert states and all(e["data"]["state"] == {"kept": True} for e in states)
    signals = daemon.events("signal", "launcher")
    values = [e["data"]["value"]["path"] for e in signals]
    assert values and all(int(v[2:]) % 2 == 0 for v in values)  # only the computes not launching
    requested = [e for e in daemon.events("workflow.requested") if e["data"]["sense"] == "launcher"]
    assert requested and requested[0]["data"]["prompt"] == "disk nearly full"
    heard = daemon.events("sense.state", "listener")
    assert heard and all(e["data"]["reason"].startswith("on:launcher") for e in heard)
    assert len(heard) <= len(daemon.events("signal", "launcher"))  # read after: it only grows
    # the listener's state history, as `nerve sense query` reads it
    sql = "SELECT count(*) AS n, min(reason) AS reason FROM states"
    shown = run_cli("--workspace", str(daemon.root), "sense", "query", "listener", sql, "--json")
    row = json.loads(shown.stdout)
    assert row["n"] >= 1 and row["reason"].startswith("on:launcher")


def test_signal_true_signals_a_launch_too(daemon: Daemon) -> None:
    daemon.wait_for(lambda: daemon.events("sense.state", "both-listener"), what="both-listener")
    assert daemon.events("signal", "both")
    assert any(e["data"]["sense"] == "both" for e in daemon.events("workflow.requested"))


def test_a_sense_repeats_itself_on_its_own_signal(daemon: Daemon) -> None:
    assert daemon.request({"type": "trigger-sense", "sense": "pulse"}) == {"ok": True}
    daemon.wait_for(lambda: len(daemon.events("sense.state", "pulse")) >= 3, what="pulses")
    reasons = [e["data"]["reason"] for e in daemon.events("sense.state", "pulse")]
    assert reasons[0] == "manual" and all(r.startswith("on:pulse") for r in reasons[1:])
