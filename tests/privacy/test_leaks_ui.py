"""Hostile pass over ``nerve ui``'s rows (sealed and unsealed, through the SQL box): rules
written after capture must withhold a row a drop rule finds in its subject, redact a token a
detector finds in a subject, and take an excluded process out of a sense's state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nerve
from nerve import logops
from nerve.log.drafts import Draft
from nerve.ui import data
from nerve.ui.select import Filters
from nerve.workspace import WorkspaceDir, init_workspace

GHP = "ghp_" + "Z9y8X7w6V5" * 3 + "U4t3S2"
BEFORE = "senses: {}\nlog:\n  durability: os\nprivacy:\n  detectors: {enabled: false}\n"
AFTER = (
    "senses: {}\nlog:\n  durability: os\nprivacy:\n"
    "  rules:\n    - {name: projx, regex: 'projectx', action: drop}\n"
    "  processes: {exclude: [ssh]}\n"
)


def _rows(tag: str) -> list[Draft]:
    ssh = {"name": "ssh", "create_time": 1.0, "cmdline": "ssh me@private-host"}
    state = {"state": {"notable": {"41": ssh}}, "reason": "checkpoint", "computes": 1}
    return [
        Draft.of(source=5, line=f"edit {tag}", subject=f"notes/{GHP}.txt"),
        Draft.of(source=5, line=f"meeting about launch {tag}", subject="projectx"),
        Draft.control("sense.state", "processes", f"processes state {tag}", state),
    ]


def _workspace(tmp_path: Path, sealed: bool) -> WorkspaceDir:
    """The rows stored with the detectors off, and seen whole then."""
    init_workspace(tmp_path / "ws")
    (tmp_path / "ws" / "nerve.yaml").write_text(BEFORE)
    ws = WorkspaceDir(tmp_path / "ws")
    logops.emit(ws, _rows("x"))
    if sealed:
        with ws.open_log() as log:
            log.seal()
    shown = json.dumps(data.sql(nerve.open(ws.root), "SELECT * FROM events"), default=str)
    assert GHP in shown and "private-host" in shown  # stored before the rules
    return ws


def _shown(ws: WorkspaceDir, rules: str) -> str:
    (ws.root / "nerve.yaml").write_text(rules)
    door = nerve.open(ws.root)
    out = data.sql(door, "SELECT subject, line, payload::VARCHAR FROM events")
    page = data.events(door, Filters(everything=True), data.window("1h", None))
    return json.dumps([out, page], default=str)


@pytest.mark.parametrize("sealed", [True, False])
def test_a_detector_switched_on_later_hides_a_token_in_a_subject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sealed: bool
) -> None:
    """No drop or regex rule: only rows the detectors may change are screened, and a row
    is chosen by its subject too."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    shown = _shown(_workspace(tmp_path, sealed), "senses: {}\nlog:\n  durability: os\n")
    assert GHP not in shown and "[redacted:github-token]" in shown


@pytest.mark.parametrize("sealed", [True, False])
def test_rules_written_after_capture_hold_on_the_ui_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sealed: bool
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    shown = _shown(_workspace(tmp_path, sealed), AFTER)
    assert GHP not in shown and "launch" not in shown
    assert "private-host" not in shown and "ssh" not in shown
    assert "edit x" in shown and "processes state x" in shown
