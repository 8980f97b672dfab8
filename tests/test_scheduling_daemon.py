"""Scheduling semantics through a real daemon: skip reasons recorded in the log."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from nerve.runtime.live import render
from nerve.runtime.snapshot import SenseRow, Snapshot
from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, Daemon, write_sense

SKIPPER = """
import nerve
initial_state = {"n": 0}
def compute(state):
    if state["n"] >= 2:
        return nerve.Skip("nothing new")
    return {"state": {"n": state["n"] + 1}}
"""


def test_skips_from_a_compute_and_from_throttle_are_recorded_and_flushed_at_stop(
    tmp_path: Path,
) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    write_sense(ws.root, "skipper", SKIPPER)
    (ws.root / "nerve.yaml").write_text(
        "senses:\n"
        "  counter: {group: a, interval: 50ms}\n"
        "  echo: {group: b, path: senses/counter, on: [counter], throttle: 2s}\n"
        "  skipper: {group: c, interval: 50ms}\n"
    )
    d = Daemon(ws.root)
    d.start()
    try:
        d.wait_for(lambda: d.events("sense.skipped", "skipper"), what="a compute's skip")
        d.wait_for(lambda: d.events("sense.skipped", "echo"), what="a throttle skip")
        history = run_cli("--workspace", str(ws.root), "sense", "history", "echo", "--json")
        assert "echo: skipped (throttle)" in history.stdout
        tail = run_cli("--workspace", str(ws.root), "tail", "-n", "50").stdout
        assert "sense.skipped" not in tail  # bookkeeping: hidden unless asked
    finally:
        d.stop()
    skipper = d.events("sense.skipped", "skipper")
    assert {r["data"]["reason"] for r in skipper} == {"nothing new"}
    assert {r["data"]["by"] for r in skipper} == {"compute"}
    assert len(d.events("sense.state", "skipper")) == 2  # a skip changes no state
    # folded: a handful of records stand for many skips, the rest flushed at the stop
    echo = d.events("sense.skipped", "echo")
    assert {r["data"]["reason"] for r in echo} == {"throttle"}
    assert sum(r["data"]["count"] for r in skipper) > len(skipper) >= 2
    assert sum(r["data"]["count"] for r in echo) > len(echo)
    kinds = [r["kind"] for r in d.events()]
    assert kinds[-1] == "daemon.stopped" and "sense.skipped" in kinds[-4:]  # the final flush


def test_paused_ticks_are_skipped_as_paused(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    (ws.root / "nerve.yaml").write_text("senses:\n  counter: {group: a, interval: 100ms}\n")
    d = Daemon(ws.root)
    d.start()
    try:
        run_cli("--workspace", str(ws.root), "pause")
        d.wait_for(lambda: d.events("sense.skipped", "counter"), what="a paused skip")
    finally:
        d.stop()
    assert {r["data"]["reason"] for r in d.events("sense.skipped", "counter")} == {"paused"}


def test_the_dev_view_shows_skipped_ticks_and_why() -> None:
    rows = (
        SenseRow("cpu", "system", 10, 0, 99.0, 1.0, "cpu 12%", skipped=340, skip_reason="throttle"),
        SenseRow("disk", "system", 10, 0, 99.0, 1.0, "disk 80%"),
    )
    snap = Snapshot("/ws", 1, 100.0, 0.0, 10, 0.0, 0, senses=rows)
    out = io.StringIO()
    Console(file=out, width=100, height=12, color_system=None).print(render(snap, 100, 12))
    lines = out.getvalue().splitlines()
    assert "skip" in lines[1]
    assert "340 throttle" in next(line for line in lines if line.startswith("cpu"))
