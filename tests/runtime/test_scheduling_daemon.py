"""Scheduling semantics through a real daemon: skip reasons recorded in the log."""

from __future__ import annotations

import io
import time
from pathlib import Path

from rich.console import Console

from nerve.dev.view import render
from nerve.runtime.frame import Frame, SenseRow
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
        # a manual trigger runs at once, past the 2 s throttle: three in a row, three computes
        for _ in range(3):
            assert d.request({"type": "trigger-sense", "sense": "echo"})["ok"]
        d.wait_for(lambda: len(_manual(d, "echo")) >= 3, what="three manual computes")
        assert {e["data"]["reason"] for e in _manual(d, "echo")} == {"manual"}
    finally:
        d.stop()
    # (on a loaded machine the scheduler may also skip a `late` tick: not counted here)
    skipper = [r for r in d.events("sense.skipped", "skipper") if r["data"]["by"] == "compute"]
    assert {r["data"]["reason"] for r in skipper} == {"nothing new"}
    assert len(d.events("sense.state", "skipper")) == 2  # a skip changes no state
    # folded: a handful of records stand for many skips, the rest flushed at the stop
    echo = [r for r in d.events("sense.skipped", "echo") if r["data"]["reason"] == "throttle"]
    assert sum(r["data"]["count"] for r in skipper) > len(skipper) >= 2
    assert sum(r["data"]["count"] for r in echo) > len(echo)
    kinds = [r["kind"] for r in d.events()]
    assert kinds[-1] == "daemon.stopped" and "sense.skipped" in kinds[-4:]  # the final flush


def _manual(d: Daemon, sense: str) -> list[dict[str, object]]:
    return [e for e in d.events("sense.state", sense) if "manual" in str(e["data"]["reason"])]


def test_paused_ticks_are_skipped_as_paused(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    (ws.root / "nerve.yaml").write_text("senses:\n  counter: {group: a, interval: 100ms}\n")
    d = Daemon(ws.root)
    d.start()
    try:
        run_cli("--workspace", str(ws.root), "pause")
        d.wait_for(lambda: "paused" in _reasons(d), what="a paused skip")
    finally:
        d.stop()
    # before the pause, a loaded machine may also skip a `late` or `overlap` tick (100 ms)
    assert "paused" in _reasons(d) and _reasons(d) <= {"paused", "late", "overlap"}


def _reasons(d: Daemon) -> set[str]:
    return {r["data"]["reason"] for r in d.events("sense.skipped", "counter")}


def test_the_dev_view_shows_skipped_ticks_and_why() -> None:
    rows = (
        SenseRow("cpu", "system", 10, 0, 99.0, 1.0, "cpu 12%", skipped=340, skip_reason="throttle"),
        SenseRow("disk", "system", 10, 0, 99.0, 1.0, "disk 80%"),
    )
    frame = Frame("/ws", 1, 100.0, 0.0, 10, 0.0, 0, senses=rows)
    out = io.StringIO()
    Console(file=out, width=100, height=12, color_system=None).print(render(frame, 100, 12))
    lines = out.getvalue().splitlines()
    assert "skip" in lines[1]
    assert "340 throttle" in next(line for line in lines if line.startswith("cpu"))


def test_a_restart_after_downtime_catches_up_as_each_sense_says(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    (ws.root / "nerve.yaml").write_text(
        "senses:\n"
        "  once: {group: a, path: senses/counter, interval: 1s}\n"
        "  skip: {group: a, path: senses/counter, interval: 1s, catch_up: skip}\n"
        "  all: {group: a, path: senses/counter, interval: 1s, catch_up: all,"
        " catch_up_window: 3s}\n"
        "  hourly: {group: a, path: senses/counter, interval: 1h}\n"
    )
    d = Daemon(ws.root)
    d.start()
    try:
        d.wait_for(lambda: len(d.events("sense.state", "once")) >= 2, what="two computes")
    finally:
        d.stop()
    first_run = {s: len(d.events("sense.state", s)) for s in ("once", "skip", "all", "hourly")}
    assert first_run["hourly"] == 1  # the first start ever: at once
    time.sleep(6)  # the daemon is down: about 6 ticks of each 1 s sense are missed
    d.start()
    try:
        d.wait_for(
            lambda: len(d.events("sense.state", "all")) >= first_run["all"] + 3,
            what="three catch-up computes",
        )
    finally:
        d.stop()

    def catch_ups(sense: str) -> int:
        return sum(r["data"]["reason"] == "catch-up" for r in d.events("sense.state", sense))

    def missed(sense: str) -> int:
        skipped = d.events("sense.skipped", sense)
        return sum(r["data"]["count"] for r in skipped if r["data"]["reason"] == "missed")

    assert (catch_ups("once"), catch_ups("skip"), catch_ups("all")) == (1, 0, 3)
    assert missed("skip") >= 5 and missed("once") == missed("skip") - 1
    assert missed("all") == missed("skip") - 3  # only the last 3 s were inside the window
    assert len(d.events("sense.state", "hourly")) == 1  # its next tick is an hour after the last


KEYED = """
initial_state = {"n": 0}
def compute(state):
    trigger = {"name": "trio", "key": "from-the-sense", "prompt": "keyed"}
    return {"state": {"n": state["n"] + 1}, "workflow": trigger}
"""


def test_dedupe_keys_from_the_cli_the_socket_and_a_sense_hold_across_a_restart(
    tmp_path: Path,
) -> None:
    from tests.helpers.workflows import TRIO, running, write_workflow

    ws = init_workspace(tmp_path / "ws")
    write_workflow(ws.root, "trio", TRIO)
    write_sense(ws.root, "keyed", KEYED)
    (ws.root / "nerve.yaml").write_text(
        "senses:\n  keyed: {interval: 1h, grace_period: 1h}\n"
        "workflows:\n  trio: {concurrency: 4, overlap: buffer_all}\n"
        "  brief: {path: workflows/trio, dedupe_window: 1s}\n"
    )
    cli = ("--workspace", str(ws.root))
    with running(ws.root) as flows:
        first = flows.trigger("trio", prompt="a", key="order-17")
        assert first["status"] == "started"
        again = flows.trigger("trio", prompt="b", key="order-17")
        assert (again["status"], again["earlier_run"], again["run"]) == (
            "deduped",
            first["run"],
            None,
        )
        out = run_cli(*cli, "workflow", "trigger", "trio", "--key", "order-17").stdout
        assert out.strip() == f"deduped: key 'order-17' already started {first['run']}"
        assert flows.trigger("trio", prompt="c", key="order-18")["status"] == "started"
        # a sense's trigger carries a key too: its second compute starts nothing
        run_cli(*cli, "sense", "trigger", "keyed")
        flows.wait_for(lambda: flows.events("workflow.status"), what="a run")
        flows.wait_for(
            lambda: any(
                e["data"]["request"]["sense"] == "keyed"
                for e in flows.events("workflow.status")
                if e["data"].get("request")
            ),
            what="the sense's run",
        )
        run_cli(*cli, "sense", "trigger", "keyed")
        flows.wait_for(
            lambda: [
                e for e in flows.events("workflow.deduped") if e["data"]["key"] == "from-the-sense"
            ],
            what="the sense's second trigger deduped",
        )
        # a window lets the key start a run again once it has passed
        brief = flows.trigger("brief", prompt="x", key="k")
        assert flows.trigger("brief", prompt="y", key="k")["status"] == "deduped"
        time.sleep(1.2)
        assert flows.trigger("brief", prompt="z", key="k")["status"] == "started"
        assert brief["status"] == "started"
    with running(ws.root) as flows:  # the claims are rebuilt from the log
        after = flows.trigger("trio", prompt="d", key="order-17")
        assert (after["status"], after["earlier_run"]) == ("deduped", first["run"])
    deduped = flows.events("workflow.deduped")
    assert [e["data"]["earlier_run"] for e in deduped if e["data"]["key"] == "order-17"] == [
        first["run"]
    ] * 3
    assert all(e["subject"] in ("trio", "brief") for e in deduped)
