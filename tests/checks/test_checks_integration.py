"""Gate and write checks in a real daemon: verdicts, holds, re-checks, overrides, escapes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.checks.catalog import lookup
from nerve.flow import client
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.helpers.workflows import REPORT, Flows, running, write_checks, write_workflow

CONFIG = """
senses:
  files: {interval: 300ms, options: {paths: [notes], debounce_ms: 50}}
workflows:
  report: {checks: [sections]}
  touchy: {checks: [sections, toucher], path: workflows/report}
"""
GATE = {"fire_on": "gate", "matches": "**/*.md", "timeout": 20}
CHECKS: dict[str, dict[str, Any]] = {
    "sections": {**GATE, "severity": "blocking", "matches": "**/report.md"},
    "always-fail": {**GATE, "severity": "advisory"},
    "no-tool": {**GATE, "severity": "advisory"},
    "crashy": {**GATE, "severity": "advisory"},
    "garbage": {**GATE, "severity": "advisory"},
    "sleepy": {**GATE, "severity": "advisory", "timeout": 1},
    "toucher": {**GATE, "severity": "advisory"},
    "md-write": {
        "fire_on": "write",
        "matches": "notes/*.md",
        "timeout": 20,
        "severity": "blocking",
    },
}


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flows]:
    ws = init_workspace(tmp_path_factory.mktemp("checks") / "ws")
    write_checks(ws.root, CHECKS)
    write_workflow(ws.root, "report", REPORT)
    (ws.root / "notes").mkdir()
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with running(ws.root) as daemon:
        yield daemon


def _verdicts(flows: Flows, run: str) -> dict[str, dict[str, Any]]:
    return {e["data"]["check"]: e["data"] for e in flows.events("check.verdict", run)}


def _nerve(flows: Flows, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run_cli("--workspace", str(flows.root), *args, check=check)


def test_verdicts_a_blocking_hold_and_fix_and_recheck(flows: Flows) -> None:
    run = flows.trigger("report", prompt="bad")["run"]
    assert flows.wait_status(run, "held", "completed") == "held"
    got = {c: (v["result"], v["note"], v["blocks"]) for c, v in _verdicts(flows, run).items()}
    assert got == {
        "sections": ("failed", None, True),
        "always-fail": ("failed", None, False),
        "no-tool": ("passed", "tool-unavailable", False),
        "crashy": ("passed", "script-error", False),
        "garbage": ("passed", "script-error", False),
        "sleepy": ("passed", "timeout", False),
    }
    assert len(flows.events("check.fired", run)) == 6
    held = flows.events("workflow.status", run)[-1]["data"]
    assert [r["check"] for r in held["reasons"]] == ["sections"]
    assert held["outputs"] == ["report.md"] and held["checks"][0] == "sections"
    detail = flows.root / _verdicts(flows, run)["sections"]["detail_path"]
    assert detail.is_file() and "## Details" in detail.read_text()
    # a person fixes the output and asks again
    report = flows.root / "data" / "runs" / run / "report.md"
    report.write_text("# R\n## Summary\n## Details\n")
    assert f"{run}: completed" in _nerve(flows, "workflow", "recheck", run).stdout
    assert flows.statuses(run) == ["started", "held", "completed"]
    assert not detail.exists()  # the clean pass removed the failure's report
    fail_detail = flows.root / _verdicts(flows, run)["always-fail"]["detail_path"]
    assert fail_detail.exists()
    again = flows.request({"type": "workflow-recheck", "run": run})
    assert not again["ok"] and "only a held run" in again["error"]["message"]


def _in_terminal(args: list[str], typed: str) -> tuple[int, str]:
    """Run the CLI with stdin and stdout on a pseudo-terminal, typing ``typed``."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NERVE_WORKFLOW"} | {"NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nerve", *args], stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    os.write(master, typed.encode())
    output = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    return proc.wait(timeout=60), output.decode(errors="replace")


def test_override_is_refused_unless_a_person_confirms_at_a_terminal(flows: Flows) -> None:
    run = flows.trigger("report", prompt="bad")["run"]
    flows.wait_status(run, "held")
    proc = _nerve(flows, "workflow", "override", run, "--reason", "fine", check=False)
    assert proc.returncode == 1 and "interactive terminal" in proc.stderr
    raw = flows.request({"type": "workflow-override", "run": run, "reason": "from a script"})
    assert not raw["ok"] and "interactive terminal" in raw["error"]["message"]
    assert flows.status(run) == "held" and not flows.events("workflow.override", run)
    args = ["--workspace", str(flows.root), "workflow", "override", run, "--reason", "ship it"]
    code, out = _in_terminal(args, "y\n")
    assert code == 0, out
    assert "sections: failed" in out and "completed (overrode sections)" in out
    flows.wait_status(run, "completed")
    override = flows.events("workflow.override", run)[0]["data"]
    assert (override["checks"], override["reason"]) == (["sections"], "ship it")
    assert override["reasons"][0]["reason"] == "failed" and override["tty"].startswith("/dev/")
    assert flows.events("workflow.status", run)[-1]["data"]["overridden"] is True


def test_a_symlink_out_of_the_run_folder_is_refused(flows: Flows) -> None:
    run = flows.trigger("report", prompt="escape")["run"]
    flows.wait_status(run, "held")
    held = flows.events("workflow.status", run)[-1]["data"]
    assert [(r["output"], r["reason"]) for r in held["reasons"]] == [("report.md", "path-refused")]
    assert "outside" in held["reasons"][0]["detail"]
    assert flows.events("check.fired", run) == []  # no check ever saw the file behind it


def test_changed_bytes_refuse_the_gate(flows: Flows) -> None:
    run = flows.trigger("touchy", prompt="good")["run"]
    flows.wait_status(run, "held")
    verdicts = _verdicts(flows, run)
    assert verdicts["sections"]["result"] == "passed" and verdicts["sections"]["note"] is None
    assert verdicts["toucher"]["note"] == "changed-during-check"
    reasons = flows.events("workflow.status", run)[-1]["data"]["reasons"]
    assert [r["reason"] for r in reasons] == ["changed"]


def test_a_clean_run_completes(flows: Flows) -> None:
    run = flows.trigger("report", prompt="good")["run"]
    assert flows.wait_status(run, "held", "completed") == "completed"


def test_write_checks_fire_on_file_changes(flows: Flows) -> None:
    (flows.root / "notes" / "todo.md").write_text("TODO: one\nTODO: two\n")
    flows.wait_for(lambda: len(_verdicts(flows, "notes/todo.md")) == 2, timeout=30, what="fires")
    verdicts = _verdicts(flows, "notes/todo.md")
    # the built-in conflict-markers check (fire_on: write, **/*.md) runs from its own folder
    assert verdicts["conflict-markers"]["result"] == "passed"
    verdict = verdicts["md-write"]
    assert (verdict["fire_on"], verdict["result"]) == ("write", "failed")
    assert verdict["findings_count"] == 2 and verdict["blocks"] is False
    assert (flows.root / verdict["detail_path"]).is_file()
    assert verdict["detail_path"].startswith("data/checks/")


def test_check_commands(flows: Flows, tmp_path: Path) -> None:
    listed = [
        json.loads(line) for line in _nerve(flows, "check", "list", "--json").stdout.splitlines()
    ]
    ids = {row["id"] for row in listed}
    assert {"sections", "md-write", "report-shape", "conflict-markers"} <= ids
    described = lookup(client.checks(WorkspaceDir(flows.root)), "sleepy").describe()
    assert (described["timeout_seconds"], described["fire_on"]) == (1, "gate")
    (flows.root / "notes" / "clean.md").write_text("all done\n")
    fired = json.loads(
        _nerve(flows, "check", "fire", "md-write", "--path", "notes/clean.md", "--json").stdout
    )
    assert fired["recorded"] is True and fired["result"] == "passed"
    assert flows.events("check.verdict", "notes/clean.md")
    escape = flows.request({"type": "check-fire", "check": "md-write", "path": "../x.md"})
    assert not escape["ok"] and "outside the workspace" in escape["error"]["message"]
    # without a daemon the fire runs here and records nothing
    ws = init_workspace(tmp_path / "idle")
    write_checks(ws.root, {"md-write": CHECKS["md-write"]})
    (ws.root / "a.md").write_text("TODO\n")
    proc = run_cli(
        "--workspace", str(ws.root), "check", "fire", "md-write", "--path", "a.md", check=False
    )
    assert proc.returncode == 1 and "md-write on a.md: failed" in proc.stdout
    assert "not recorded" in proc.stderr


def test_replay_verifies(flows: Flows) -> None:
    assert '"ok":true' in _nerve(flows, "replay", "--verify", "--json").stdout
