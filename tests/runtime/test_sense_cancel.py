"""A compute past its timeout is told so (seed 000/001): ``ctx.cancelled`` for a sync
compute, an ``asyncio`` cancellation for an async one, and the grace period before its
worker is killed. `nerve status` shows each sense's last result and error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, Daemon, started, write_sense

PATIENT = """
import time
from pathlib import Path
initial_state = {"n": 0}
def compute(state, ctx):
    while not ctx.cancelled:
        time.sleep(0.02)
    Path("cancelled-" + ctx.name).write_text("saw ctx.cancelled")
    return {"state": {"n": state["n"] + 1}}
"""
ASYNC_PATIENT = """
import asyncio
from pathlib import Path
initial_state = {"n": 0}
async def compute(state, ctx):
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        Path("cancelled-" + ctx.name).write_text("cancelled, cleaning up")
        raise
    return {"state": {"n": state["n"] + 1}}
"""
STUBBORN = """
import time
initial_state = {"n": 0}
def compute(state):
    time.sleep(60)
    return {"state": {"n": 1}}
"""
CONFIG = """
senses:
  patient: {group: p, timeout: 300ms}
  waiter: {group: w, timeout: 300ms}
  stubborn: {group: s, timeout: 300ms}
  counter: {group: c, interval: 300ms}
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    ws = init_workspace(tmp_path_factory.mktemp("cancel") / "ws")
    for name, code in (
        ("patient", PATIENT),
        ("waiter", ASYNC_PATIENT),
        ("stubborn", STUBBORN),
        ("counter", COUNTER),
    ):
        write_sense(ws.root, name, code)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with started(ws.root) as d:
        yield d


def _timeouts(d: Daemon, sense: str) -> list[str]:
    return [
        e["data"]["error"] for e in d.events("sense.error", sense) if e["data"]["kind"] == "timeout"
    ]


@pytest.mark.parametrize("sense", ["patient", "waiter"])
def test_a_compute_past_its_timeout_is_cancelled_and_may_clean_up(
    daemon: Daemon, sense: str
) -> None:
    assert daemon.request({"type": "trigger-sense", "sense": sense}) == {"ok": True}
    errors = daemon.wait_for(lambda: _timeouts(daemon, sense), what=f"{sense} timeout")
    assert "exceeded its 300 ms timeout; stopped when cancelled, within the grace" in errors[0]
    marker = daemon.root / f"cancelled-{sense}"
    assert marker.is_file()
    assert daemon.events("sense.state", sense) == []  # a timed-out result is not used
    group = {"patient": "p", "waiter": "w"}[sense]
    daemon.wait_for(
        lambda: [r for r in daemon.events("sense.restart") if r["subject"] == group],
        what=f"group {group} restarted",
    )


def test_a_compute_that_ignores_it_is_killed_after_the_grace(daemon: Daemon) -> None:
    daemon.request({"type": "trigger-sense", "sense": "stubborn"})
    errors = daemon.wait_for(lambda: _timeouts(daemon, "stubborn"), what="stubborn timeout")
    assert "not stopped within the 1 s grace period, killed" in errors[0]


def test_status_lists_each_senses_last_result_and_error(daemon: Daemon) -> None:
    daemon.request({"type": "trigger-sense", "sense": "stubborn"})
    daemon.wait_for(lambda: _timeouts(daemon, "stubborn"), what="stubborn timeout")
    daemon.wait_for(lambda: daemon.events("sense.state", "counter"), what="a counter compute")
    shown = json.loads(run_cli("--workspace", str(daemon.root), "status", "--json").stdout)
    senses = {s["name"]: s for s in shown["sense_results"]}
    assert senses["counter"]["last_result"].startswith("count ")
    assert senses["counter"]["last_ns"] and senses["counter"]["last_error"] in ("", None)
    assert "exceeded its 300 ms timeout" in senses["stubborn"]["last_error"]
    text = run_cli("--workspace", str(daemon.root), "status").stdout
    assert "stubborn" in text and "exceeded its 300 ms timeout" in text
