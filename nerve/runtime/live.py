"""``nerve dev``: the kernel in the foreground with a live view of what it sees."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from rich.console import Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from nerve.privacy.pause import PauseState

if TYPE_CHECKING:
    from nerve.runtime.kernel import Kernel

REFRESH_S = 0.5


def _ago(wall_ns: int | None) -> str:
    if wall_ns is None:
        return "—"
    return f"{max(0.0, (time.time_ns() - wall_ns) / 1e9):.1f}s ago"


def render(kernel: Kernel, rate: float) -> Group:
    health = kernel.health()
    head = Text.assemble(
        ("nerve dev ", "bold"),
        f"· {kernel.ws.root} · pid {health['pid']} · up {health['uptime_s']}s · ",
        (f"{rate:.1f} events/s", "bold green"),
        f" · {health['events']} events · {health['segments']} segments",
    )
    table = Table("sense", "group", "computes", "errors", "last", "ms", "latest", expand=True)
    for name, stats in sorted(kernel.stats.items()):
        table.add_row(
            name,
            stats.group,
            str(stats.computes),
            str(stats.errors) if stats.errors else "",
            _ago(stats.last_wall_ns),
            f"{stats.last_duration_ms or 0:.1f}",
            Text(stats.last_line[:80], overflow="ellipsis"),
        )
    parts: list[object] = [head, table]
    if (capture := health.get("capture")) and capture["paused"]:
        paused = PauseState.from_json(capture).describe()
        parts.insert(1, Text(f"capture {paused}", style="bold yellow"))
    for line in getattr(kernel, "surfaced", [])[-5:]:
        parts.append(Text(f"▲ {line}", style="bold yellow"))
    if kernel.recent_errors:
        parts.append(
            Panel("\n".join(kernel.recent_errors[-5:]), title="recent errors", style="red")
        )
    return Group(*parts)  # type: ignore[arg-type]


async def run_with_view(kernel: Kernel) -> None:
    task = asyncio.create_task(kernel.run_until_stopped())
    while not hasattr(kernel, "committer") and not task.done():
        await asyncio.sleep(0.05)
    last_events, last_t = 0, time.monotonic()
    with Live(render(kernel, 0.0), refresh_per_second=4, screen=False) as live:
        while not task.done():
            await asyncio.sleep(REFRESH_S)
            now = time.monotonic()
            events = kernel.committer.events
            rate = (events - last_events) / max(now - last_t, 1e-6)
            last_events, last_t = events, now
            live.update(render(kernel, rate))
    await task
