"""Golden outputs: rich renderings compared whole, with times and ids masked."""

from __future__ import annotations

import io
import re
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from nerve.runtime.kernel import SenseStats
from nerve.runtime.live import render

GOLDEN_DEV = """\
nerve dev · /ws · pid N · up Ns · 12.5 events/s · 40 events · 1 segments
┏━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ sense   ┃ group    ┃ computes    ┃ errors   ┃ last        ┃ ms   ┃ latest                        ┃
┡━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ cpu     │ system   │ 12          │          │ Ns ago    │ 1.5  │ cpu: cpu 3.1% load1 0.20      │
│ shell   │ shell    │ 3           │ 1        │ —           │ 0.0  │                               │
└─────────┴──────────┴─────────────┴──────────┴─────────────┴──────┴───────────────────────────────┘
▲ novelty: obs 42 endpoint
╭───────────────────────────────────────── recent errors ──────────────────────────────────────────╮
│ shell: exception: boom                                                                           │
╰──────────────────────────────────────────────────────────────────────────────────────────────────╯
"""


def _mask(text: str) -> str:
    text = re.sub(r"pid \d+", "pid N", text)
    text = re.sub(r"up [\d.]+s", "up Ns", text)
    return re.sub(r"[\d.]+s ago", "Ns ago", text)


def test_dev_view_renders_senses_surfaced_highlights_and_errors() -> None:
    import time

    cpu = SenseStats(
        "system",
        computes=12,
        last_wall_ns=time.time_ns(),
        last_duration_ms=1.5,
        last_line="cpu: cpu 3.1% load1 0.20",
    )
    shell = SenseStats("shell", computes=3, errors=1, last_error="exception: boom")
    kernel = SimpleNamespace(
        ws=SimpleNamespace(root=Path("/ws")),
        health=lambda: {"pid": 4242, "uptime_s": 3.0, "events": 40, "segments": 1},
        stats={"shell": shell, "cpu": cpu},
        surfaced=["novelty: obs 42 endpoint"],
        recent_errors=["shell: exception: boom"],
    )
    out = io.StringIO()
    Console(file=out, width=100, color_system=None, legacy_windows=False).print(
        render(kernel, 12.5)
    )  # type: ignore[arg-type]
    assert _mask(out.getvalue()) == GOLDEN_DEV
