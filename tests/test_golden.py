"""Golden outputs: rich renderings compared whole with files under tests/golden/.

The dev view draws a snapshot with its own clock, so nothing needs masking. To rewrite a
golden file after a deliberate change: ``NERVE_UPDATE_GOLDEN=1 pytest tests/test_golden.py``.
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import pytest
from rich.console import Console

from nerve.runtime.journal import Entry
from nerve.runtime.live import render
from nerve.runtime.snapshot import AgentRead, Highlight, SenseRow, Snapshot

GOLDEN = Path(__file__).parent / "golden"
NOW = 1_750_000_000.0
BUNDLED = ["cpu", "memory", "disk", "network", "power", "processes", "files", "shell"]
EXTRA = ["gpu", "battery", "wifi", "bluetooth", "temperature-of-the-north-rack", "fans"]
MORE = ["audio", "camera", "usb", "printer", "calendar"]


def _sense(index: int, name: str) -> SenseRow:
    group = "system" if index < 5 else name
    line = f"{name} reading {index}" + (" with a tail of detail" * (index % 4))
    last = None if index == 9 else NOW - 1.5 - index * 7
    return SenseRow(name, group, 120 * index + 3, 2 if index == 7 else 0, last, 1.5 * index, line)


def _snapshot(
    *, senses: list[str], alerts: tuple[str, ...] = (), agents: tuple[AgentRead, ...] = ()
) -> Snapshot:
    decisions = tuple(
        Highlight(
            NOW - 600 + i * 90,
            "surface" if i % 3 == 0 else ("hold:budget" if i % 2 else "hold:value"),
            "novelty",
            f"cpu {50 + i}% load1 1.{i} (2 cores)",
        )
        for i in range(7)
    )
    restarted = "group system worker restarted (pid 12 -> 13): worker exited with code -9"
    errors = (
        Entry(NOW - 4000, logging.WARNING, "sense shell: exception: RuntimeError: unplugged\nat"),
        Entry(NOW - 75, logging.WARNING, restarted),
    )
    return Snapshot(
        workspace="/home/someone/projects/with/a/rather/long/path/nerve",
        pid=4242,
        now_s=NOW,
        started_s=NOW - 3723,
        events=1_234_567,
        rate=12.46,
        segments=3,
        senses=tuple(_sense(i, n) for i, n in enumerate(senses)),
        highlights=decisions,
        errors=errors,
        alerts=alerts,
        agents=agents,
    )


AGENTS = (
    AgentRead(NOW - 300, "claude-code", "ask", "ok", 4, 1_912),
    AgentRead(NOW - 62, "claude-code", "query", "refused", 0, 0),
    AgentRead(NOW - 8, "claude-code", "recent", "ok", 50, 14_305),
)


def _drawn(snap: Snapshot, width: int, height: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, height=height, color_system=None, legacy_windows=False)
    console.print(render(snap, width, height))
    return out.getvalue()


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("NERVE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "width", "height", "snap"),
    [
        ("dev_80x24.txt", 80, 24, _snapshot(senses=BUNDLED + EXTRA + MORE)),  # "… N more"
        (
            "dev_200x50.txt",
            200,
            50,
            _snapshot(senses=BUNDLED + EXTRA, alerts=("seal failing: No space left on device",)),
        ),
        ("dev_100x30_agents.txt", 100, 30, _snapshot(senses=BUNDLED, agents=AGENTS)),
    ],
)
def test_dev_view_matches_its_golden_drawing(
    name: str, width: int, height: int, snap: Snapshot
) -> None:
    text = _drawn(snap, width, height)
    lines = text.splitlines()
    assert len(lines) == height and max(len(line) for line in lines) == width
    _check(name, text)
