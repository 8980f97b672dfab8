"""Simulated hosts for the fleet tests: workspaces whose sealed segments span a month."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust
from nerve.workspace import Workspace, init_workspace

HOUR = 3600 * 10**9
AGES_H = (24 * 30, 48, 0.5)  # a segment from last month, one from two days ago, one recent


def fleet_yaml(host: str, warehouse: str, **extra: Any) -> str:
    lines = ["log:", "  durability: os", "fleet:", f"  warehouse: {json.dumps(warehouse)}"]
    lines.append(f"  host: {host}")
    lines += [f"  {key}: {json.dumps(value)}" for key, value in extra.items() if value is not None]
    return "\n".join(lines) + "\n"


def make_host(
    root: Path,
    host: str,
    warehouse: str,
    *,
    rows: int = 200,
    ages_h: tuple[float, ...] = AGES_H,
    **extra: Any,
) -> Workspace:
    """A workspace holding one sealed segment of ``rows`` events per age, oldest first."""
    init_workspace(root)
    (root / "nerve.yaml").write_text(fleet_yaml(host, warehouse, **extra))
    ws = Workspace.at(root)
    now = time.time_ns()
    with ws.open_log() as log:
        for age in ages_h:
            start = now - int(age * HOUR)
            log.import_events(_events(host, start, rows))
            log.seal()
    return ws


def _events(host: str, start: int, rows: int) -> list[Event]:
    return [
        Event(
            Hlc(start + i * 1000, 0),
            f"node-{host}",
            "secret" if i % 10 == 0 else "observation",
            f"s{i % 5}",
            int(SourceClass.SHELL),
            Trust.FIRST_PARTY,
            None,
            {"host": host, "i": i},
            f"{host} event {i}",
        )
        for i in range(rows)
    ]


def add_segment(ws: Workspace, rows: int = 50) -> None:
    """One more sealed segment of events stamped now."""
    host = ws.root.name
    with ws.open_log() as log:
        log.import_events(_events(host, max(time.time_ns(), log_newest(log) + 1), rows))
        log.seal()


def log_newest(log: Any) -> int:
    newest = log.manifest.max_hlc()
    return int(newest.physical_ns) if newest else 0
