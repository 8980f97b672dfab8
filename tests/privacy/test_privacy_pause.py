"""Pause and resume on a real daemon: no sense computes while paused, the pause's backlog is
not stored after it, a timed pause ends by itself, and a pause outlives the daemon."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from rich.console import Console

from nerve.dev.view import frame_of, render
from nerve.log.drafts import Draft
from nerve.privacy.pause import PAUSED, RESUMED, PauseState
from nerve.runtime import journal
from nerve.runtime.capture import CaptureGate
from nerve.runtime.frame import AgentReads, Rate
from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, Daemon, started, write_sense

CONFIG = "senses:\n  counter: {interval: 200ms}\n"


def _workspace(tmp_path: Path) -> Path:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    return ws.root


def _cli(root: Path, *args: str, check: bool = True) -> Any:
    return run_cli("--workspace", str(root), *args, check=check)


def _capture(root: Path) -> dict[str, Any]:
    status: dict[str, Any] = json.loads(_cli(root, "status", "--json").stdout)
    return status["capture"]


def _hlc(event: dict[str, Any]) -> tuple[int, int]:
    return (event["physical_ns"], event["logical"])


def _ticks_refused(d: Daemon, mark: dict[str, Any] | None = None) -> None:
    """Wait until the scheduler says it refused the counter's ticks as paused: proof that
    ticks came while paused (not only that time passed)."""

    def refused() -> list[dict[str, Any]]:
        skips = _after(d, "sense.skipped", mark) if mark else d.events("sense.skipped")
        return [e for e in skips if e["subject"] == "counter" and e["data"]["reason"] == "paused"]

    d.wait_for(refused, what="ticks refused as paused")


def _after(d: Daemon, kind: str, mark: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in d.events(kind, "counter") if _hlc(e) > _hlc(mark)]


def test_pause_stops_senses_and_resume_withholds_the_backlog(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with started(root) as d:
        d.wait_for(lambda: len(d.events("observation", "counter")) >= 2, what="2 computes")
        assert _cli(root, "pause").stdout == "capture paused until `nerve resume`\n"
        paused = d.events(PAUSED)[-1]
        assert "capture  paused until `nerve resume`" in _cli(root, "status").stdout
        capture = _capture(root)
        assert capture | {"since_ns": 0, "withheld": 0} == {
            "paused": True, "since_ns": 0, "until_ns": None, "withheld": 0,
        }  # fmt: skip
        assert capture["withheld"] <= 1  # the observation of a compute already running
        trigger = _cli(root, "sense", "trigger", "counter", check=False)
        assert trigger.returncode == 1
        assert "capture is paused until `nerve resume`; no sense computes" in trigger.stderr
        _ticks_refused(d, paused)
        assert _after(d, "observation", paused) == []
        assert len(_after(d, "sense.state", paused)) <= 1  # a compute already running

        assert _cli(root, "resume").stdout == "capture resumed\n"
        resumed = d.events(RESUMED)[-1]
        assert resumed["data"] == {"reason": "command", "paused_since_ns": paused["physical_ns"]}
        d.wait_for(lambda: len(_after(d, "observation", resumed)) >= 2, what="computes again")
        first = _after(d, "sense.state", resumed)[0]
        assert first["data"]["withheld"] == 1  # the catch-up compute's observation
        count = first["data"]["state"]["n"]
        assert _after(d, "observation", resumed)[0]["line"] == f"count {count + 1}"
        assert _cli(root, "resume").stdout == "capture was not paused\n"
    assert " capture resumed (command)" in (root / "data" / "daemon.log").read_text()


def test_a_timed_pause_survives_a_restart_and_ends_by_itself(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with started(root) as d:
        d.wait_for(lambda: d.events("observation", "counter"), what="a compute")
        assert _cli(root, "pause", "--for", "1h").stdout.startswith("capture paused until 20")
        until = _capture(root)["until_ns"]
    with started(root) as d:
        restarted = d.events("daemon.started")[-1]
        assert _capture(root)["paused"] and _capture(root)["until_ns"] == until
        _ticks_refused(d, restarted)
        assert _after(d, "sense.state", restarted) == []
        _cli(root, "pause", "--for", "1s")  # a new pause replaces the old one
        d.wait_for(lambda: d.events(RESUMED), what="the timer to resume capture")
        assert d.events(RESUMED)[-1]["data"]["reason"] == "timer"
        assert d.events(RESUMED)[-1]["line"] == "capture resumed (timer)"
        d.wait_for(lambda: _after(d, "observation", d.events(RESUMED)[-1]), what="computes")
        assert not _capture(root)["paused"]


def _wait_past(ns: int) -> None:
    while time.time_ns() <= ns:
        time.sleep(0.1)


def test_a_pause_recorded_without_a_daemon_is_honoured_by_the_next_start(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    assert _cli(root, "pause").stdout == "capture paused until `nerve resume`\n"
    with started(root) as d:
        assert _capture(root)["paused"]
        _ticks_refused(d)
        assert d.events("sense.state", "counter") == []
        _cli(root, "resume")
        d.wait_for(lambda: d.events("observation", "counter"), what="computes after resume")

    pause = json.loads(_cli(root, "pause", "--for", "1s", "--json").stdout)
    _wait_past(pause["until_ns"])
    with started(root) as d:  # the pause ran out while no daemon did: resumed at start
        resumed = d.wait_for(lambda: d.events(RESUMED)[1:], what="the timed pause to end")[-1]
        assert resumed["data"]["reason"] == "timer"
        assert _hlc(resumed) > _hlc(d.events("daemon.started")[-1])
        d.wait_for(lambda: _after(d, "observation", resumed), what="computes")

    _cli(root, "pause")
    assert _cli(root, "resume").stdout == "capture resumed\n"
    assert Daemon(root).events(RESUMED)[-1]["data"]["reason"] == "command"
    bad = _cli(root, "pause", "--for", "soon", check=False)
    assert bad.returncode == 2 and "--for 'soon'" in bad.stderr


def test_observations_from_inside_a_finished_pause_are_withheld() -> None:
    gate = CaptureGate(cast(Any, None))
    gate.state = PauseState(False, since_ns=100, ended_ns=200)
    drafts = [Draft.of(valid_time_ns=t) for t in (50, 100, 150, 199, 200, None)]
    assert [d.valid_time_ns for d in gate.screen("s", drafts)] == [50, 200, None]
    gate.catching_up = {"s"}
    assert gate.screen("s", drafts) == []  # the first result after a resume: none kept
    assert len(gate.screen("s", drafts)) == 3
    assert gate.withheld == 3 + 6 + 3


def test_the_dev_view_says_capture_is_paused() -> None:
    gate = CaptureGate(cast(Any, None))
    gate.state = PauseState(True, since_ns=1, until_ns=60 * 10**9)
    kernel = SimpleNamespace(
        ws=SimpleNamespace(root=Path("/ws")), stored_events=2, stats={}, started_wall_ns=0,
        segments=0, capture=gate, seal_failure=None,
        feed=SimpleNamespace(highlights=[], agents=AgentReads()),
    )  # fmt: skip
    snap = frame_of(kernel, Rate(), journal.Recent(), now_s=5.0)  # type: ignore[arg-type]
    out = io.StringIO()
    Console(file=out, width=100, height=12, color_system=None).print(render(snap, 100, 12))
    assert out.getvalue().splitlines()[1].strip() == "capture paused until 1970-01-01T00:01:00Z"


def test_pause_state_from_its_records() -> None:
    paused = PauseState.from_record(PAUSED, 10, {"until_ns": 99, "for_ms": 1})
    assert paused == PauseState(True, 10, 99)
    assert paused.expired(99) and not paused.expired(98)
    assert paused.describe() == "paused until 1970-01-01T00:00:00Z"
    resumed = PauseState.from_record(RESUMED, 50, {"reason": "timer", "paused_since_ns": 10})
    assert resumed.window == (10, 50) and resumed.describe() == "capturing"
    assert PauseState.from_record(PAUSED, 10, None).describe() == "paused until `nerve resume`"
