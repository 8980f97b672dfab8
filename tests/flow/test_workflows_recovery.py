"""Crash recovery with real processes: a killed worker, a crash loop, a drain, a killed daemon."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.helpers.workflows import (
    COMMON,
    CRASHY,
    Flows,
    open_gate,
    running,
    traces,
    write_workflow,
)

CONFIG = """
senses: {}
workflows:
  crashy: {concurrency: 2}
  drainy: {drain_timeout: 300ms, path: workflows/drainy}
  idler: {idle_exit: 300ms}
"""

IDLER = (
    COMMON
    + """
def only(start, messages, ctx):
    trace(ctx)
    wait_for_gate(ctx, start.prompt)
    return "done"

roles = {"only": only}

def moderator(context, round, max_rounds):
    return ["only", END][round]
"""
)


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flows]:
    ws = init_workspace(tmp_path_factory.mktemp("recovery") / "ws")
    write_workflow(ws.root, "crashy", CRASHY)
    write_workflow(ws.root, "drainy", CRASHY)
    write_workflow(ws.root, "idler", IDLER)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with running(ws.root) as daemon:
        yield daemon


def _pid(root: Path, name: str, flows: Flows) -> int:
    path = root / "pids" / name
    # the role writes the file after creating it: wait for its digits, not its name
    flows.wait_for(lambda: path.exists() and path.read_text().strip(), what=f"pid file {name}")
    return int(path.read_text())


def _idle_kept(flows: Flows, name: str) -> int:
    return int(flows.request({"type": "workflow-status"})["workflows"][name]["idle_kept"])


def test_sigkill_of_the_worker_mid_run_resumes_without_repeating_a_role(flows: Flows) -> None:
    run = flows.trigger("crashy", prompt="kill-worker")["run"]
    pid = _pid(flows.root, "kill-worker", flows)
    assert pid == flows.worker_pid("crashy")
    open_gate(flows.root, "survive-kill-worker")
    os.kill(pid, signal.SIGKILL)
    flows.wait_status(run, "completed")
    assert flows.statuses(run) == ["started", "crashed", "started", "completed"]
    resumed = flows.events("workflow.status", run)[2]["data"]
    assert resumed["resumed"] is True and "crashed" in resumed["reason"]
    assert [m["role"] for m in flows.messages(run)] == ["first", "second", "third"]
    assert len(traces(flows.root, "first")) == 1  # logged before the crash: never again
    second = traces(flows.root, "second")
    assert [line.split()[-1] for line in second] == ["begin", "begin", "end"]
    assert second[0].split()[1] == str(pid) != second[1].split()[1]
    restart = flows.events("workflow.restart", "crashy")[-1]["data"]
    assert restart["old_pid"] == pid and restart["runs"] == [run]


def test_hot_reload_drains_the_old_worker_and_interrupts_what_is_left(flows: Flows) -> None:
    run = flows.trigger("drainy", prompt="drain")["run"]
    _pid(flows.root, "drain", flows)
    old_pid = flows.worker_pid("drainy")
    code = flows.root / "workflows" / "drainy" / "workflow.py"
    code.write_text(code.read_text() + "\n# edited\n")
    flows.wait_status(run, "interrupted")
    assert "drained" in flows.events("workflow.status", run)[-1]["data"]["reason"]
    open_gate(flows.root, "survive-after-drain")
    fresh = flows.trigger("drainy", prompt="after-drain")
    flows.wait_status(fresh["run"], "completed")
    assert flows.worker_pid("drainy") not in (None, old_pid)


def test_a_crash_loop_stops_respawning_until_a_reload(flows: Flows) -> None:
    run = flows.trigger("crashy", prompt="always-crash")["run"]
    backoff = flows.wait_for(
        lambda: flows.events("workflow.backoff", "crashy"), timeout=60, what="backoff"
    )[0]["data"]
    assert backoff["crashes"] == 5 and backoff["runs"] == [run]
    assert flows.status(run) == "crashed"
    # the SIGKILL of the first test may fall in the same sixty seconds and count too
    restarts = len(flows.events("workflow.restart", "crashy"))
    assert flows.statuses(run).count("crashed") in (4, 5) and restarts >= 4
    assert flows.worker_pid("crashy") is None
    refused = flows.trigger("crashy", prompt="x")
    assert refused["status"] == "failed" and "backed off" in refused["error"]
    open_gate(flows.root, "healed")
    assert flows.request({"type": "reload"})["ok"]
    flows.wait_status(run, "completed")
    assert [m["role"] for m in flows.messages(run)] == ["first", "second", "third"]


def test_a_killed_daemon_resumes_its_runs_on_restart(flows: Flows) -> None:
    run = flows.trigger("crashy", prompt="kill-daemon")["run"]
    _pid(flows.root, "kill-daemon", flows)
    firsts = len(traces(flows.root, "first"))
    os.kill(flows.pid(), signal.SIGKILL)
    open_gate(flows.root, "survive-kill-daemon")
    flows.start()
    flows.wait_status(run, "completed")
    assert flows.statuses(run) == ["started", "started", "completed"]
    assert "daemon restart" in flows.events("workflow.status", run)[1]["data"]["reason"]
    assert len(traces(flows.root, "first")) == firsts
    proc = run_cli("--workspace", str(flows.root), "replay", "--verify", "--json")
    assert '"ok":true' in proc.stdout


def test_an_idle_worker_exits_and_the_next_run_starts_a_fresh_one(flows: Flows) -> None:
    # spawned at start (a bad definition would be reported then), gone after idle_exit
    flows.wait_for(lambda: flows.worker_pid("idler") is None, what="the idle worker to exit")
    run = flows.trigger("idler", prompt="idle-gate")["run"]
    flows.wait_for(lambda: traces(flows.root, "only"), what="the role to start")
    busy = flows.worker_pid("idler")
    assert busy is not None
    kept = _idle_kept(flows, "idler")
    # three idle checks (idle_exit periods) with a role in flight: the worker stays
    flows.wait_for(lambda: _idle_kept(flows, "idler") >= kept + 3, what="three idle checks")
    assert flows.worker_pid("idler") == busy and flows.status(run) == "started"
    open_gate(flows.root, "idle-gate")
    flows.wait_status(run, "completed")
    assert flows.statuses(run) == ["started", "completed"]
    flows.wait_for(lambda: flows.worker_pid("idler") is None, what="the worker to exit again")
    assert not flows.events("workflow.restart", "idler")  # an idle exit is not a crash
    assert not flows.events("workflow.error", "idler")
