"""A workspace whose daemon holds a workflow run at a blocking gate check (for the web UI's
override tests): the ``report`` workflow writes a report the ``sections`` check fails."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nerve.workspace import init_workspace
from tests.helpers.workflows import REPORT, Flows, running, write_checks, write_workflow

GATE = {"fire_on": "gate", "matches": "**/*.md", "timeout": 20}
CHECKS: dict[str, dict[str, Any]] = {
    "sections": {**GATE, "severity": "blocking", "matches": "**/report.md"},
    **{name: {**GATE, "severity": "advisory"} for name in ("always-fail", "no-tool", "crashy",
                                                              "garbage")},
    "sleepy": {**GATE, "severity": "advisory", "timeout": 1},
}  # fmt: skip
CONFIG = "senses: {}\nworkflows:\n  report: {checks: [sections]}\n"


@contextmanager
def held_run(root: Path) -> Iterator[tuple[Flows, str]]:
    """A running daemon over a new workspace at ``root`` and the id of a run it holds."""
    ws = init_workspace(root)
    write_checks(ws.root, CHECKS)
    write_workflow(ws.root, "report", REPORT)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with running(ws.root) as daemon:
        run = daemon.trigger("report", prompt="bad")["run"]
        daemon.wait_status(run, "held", timeout=60)
        yield daemon, run
