"""The recorded real day: a workspace a real daemon wrote while a scripted person worked.

``tests/fixtures/day/`` holds the workspace (``workspace.tar.gz``: sealed segments, manifest,
the surfacing chain and its key, ``nerve.yaml`` and the project folder that was edited) and
``plan.json``, the ground truth of what was done and when (UTC ns and ISO times, pids, exit
codes, window titles and their focus intervals). ``record.py`` beside them re-records both
(see its docstring). The attention, ask and UI tests all read this one day.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from nerve.recall import AskResult

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "day"
ARCHIVE = FIXTURE / "workspace.tar.gz"
PLAN = FIXTURE / "plan.json"


class Day(NamedTuple):
    """An unpacked recorded day: its workspace folder and the plan of what happened."""

    root: Path
    plan: dict[str, Any]

    @property
    def now_ns(self) -> int:
        """The questions' "now": the end of the recording plus one minute (UTC)."""
        return int(self.plan["now"]["ns"])


def load_plan() -> dict[str, Any]:
    """The day's ``plan.json``."""
    plan: dict[str, Any] = json.loads(PLAN.read_text())
    return plan


def unpack_day(dest: Path) -> Day:
    """Unpack the recorded workspace into ``dest`` (made if missing); it is ``dest/work``."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(dest, filter="data")
    return Day(dest / "work", load_plan())


def copy_day(day: Day, dest: Path) -> Day:
    """A private, writable copy of an unpacked ``day`` at ``dest/work``."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(day.root, dest / "work", symlinks=True)
    return Day(dest / "work", day.plan)


def asked(day: Day, question: str) -> AskResult:
    """``ask`` over the recorded ``day`` at its "now", in UTC, not recorded in its log."""
    from nerve.recall import ask  # imported when asked: the conftest loads this module
    from nerve.workspace import WorkspaceDir

    return ask(WorkspaceDir(day.root), question, record=False, now_ns=day.now_ns, tz=UTC)


def said(day: Day, question: str) -> str:
    """The answer's text, which must be an answer (not "I cannot tell")."""
    result = asked(day, question)
    assert result.answered, result.text
    return result.text
