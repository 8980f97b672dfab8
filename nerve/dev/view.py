"""``nerve dev`` on a terminal: the kernel in the foreground with a view that fits.

:func:`render` draws a :class:`~nerve.runtime.frame.Frame` into exactly ``width`` ×
``height`` cells: a header, one row per sense, the latest attention decisions and recent
errors. Nothing wraps: a long cell ends in "…", a narrow terminal loses the low-value
columns, and senses beyond what fits become "… N more".
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import time
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.layout import Layout
from rich.live import Live
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from nerve.runtime import journal
from nerve.runtime.frame import AgentRead, Frame, Highlight, Rate, SenseRow
from nerve.runtime.latest import ago, fit_latest, latest_text

if TYPE_CHECKING:
    from nerve.runtime.kernel import Kernel

REFRESH_S = 0.5
# columns dropped first as the terminal narrows: (column, narrowest width that keeps it)
_OPTIONAL = {"group": 90, "skip": 72, "ms": 64, "runs": 52, "last": 40}
_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def uptime(seconds: float) -> str:
    """``45s``, ``3m05s``, ``1h02m``, ``2d03h``: the two largest units."""
    whole = int(max(0.0, seconds))
    for (big, big_s), (small, small_s) in itertools.pairwise(_UNITS):
        if whole >= big_s:
            return f"{whole // big_s}{big}{whole % big_s // small_s:02d}{small}"
    return f"{whole}s"


_CONTROLS = {c: None for c in [*range(32), 127]} | {9: " "}


def clean(text: str) -> str:
    """``text`` as one line of a cell: its first line, tabs as spaces, no other control
    characters (an escape sequence in a sense's line must not reach the terminal)."""
    return (text.splitlines() or [""])[0].translate(_CONTROLS)


def _fit_path(path: str, room: int) -> str:
    """``path`` in ``room`` cells, keeping its end (the folder's own name)."""
    if len(path) <= room:
        return path
    return "…" + path[-(room - 1) :] if room > 1 else ""


def _header(frame: Frame, width: int) -> Text:
    wide = width >= 100
    stats = " · ".join(  # pid last: the first to go on a narrow terminal
        [
            f"up {uptime(frame.now_s - frame.started_s)}",
            f"{frame.rate:.1f} events/s" if wide else f"{frame.rate:.1f}/s",
            f"{frame.events:,} events",
            f"{frame.segments:,} segments" if wide else f"{frame.segments:,} seg",
            f"pid {frame.pid}",
        ]
    )
    title = "nerve dev "
    place = _fit_path(clean(frame.workspace), width - len(title) - len(stats) - 3)
    head = Text.assemble((title, "bold"), place, "  ", (stats, "bold green" if frame.rate else ""))
    head.no_wrap, head.overflow = True, "ellipsis"
    return head


def _alerts(frame: Frame) -> Text:
    return _line(" · ".join(clean(a) for a in frame.alerts), "bold red")


def _columns(width: int, skips: bool) -> list[str]:
    """The sense table's columns; ``skip`` only once some tick was skipped."""
    names = ["sense", "group", "runs", "err", *(["skip"] if skips else []), "last", "ms", "latest"]
    return [c for c in names if width >= _OPTIONAL.get(c, 0)]


def _ms(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}"


class _Latest:
    """A sense's latest text, cut when drawn to its column's width at a word boundary with
    its age kept (:func:`~nerve.runtime.latest.fit_latest`), not mid-number."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, Text(self.text))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield _line(fit_latest(self.text, options.max_width))


def _cells(row: SenseRow, now_s: float) -> dict[str, Text | str | _Latest]:
    last = "—" if row.last_wall_s is None else ago(now_s - row.last_wall_s)
    return {
        "sense": clean(row.name),
        "group": clean(row.group),
        "runs": f"{row.computes:,}",
        "err": Text(f"{row.errors:,}", style="red") if row.errors else "",
        "skip": f"{row.skipped:,} {clean(row.skip_reason)}" if row.skipped else "",
        "last": last,
        "ms": _ms(row.last_ms),
        "latest": _Latest(clean(row.latest)),
    }


def _senses(frame: Frame, width: int, rows: int) -> Table:
    """The sense table in ``rows`` lines, its heading included."""
    columns = _columns(width, any(row.skipped for row in frame.senses))
    table = Table(box=None, pad_edge=False, padding=(0, 1), expand=True, header_style="bold")
    for name in columns:
        right = name in ("runs", "err", "last", "ms")
        table.add_column(
            name,
            justify="right" if right else "left",
            no_wrap=True,
            overflow="ellipsis",
            max_width={"sense": min(32, width // 5), "group": min(20, width // 8), "skip": 16}.get(
                name
            ),
            ratio=1 if name == "latest" else None,
            min_width=8 if name == "latest" else None,
        )
    fits = len(frame.senses) <= rows - 1
    shown = frame.senses if fits else frame.senses[: max(0, rows - 2)]  # a row for "… N more"
    for row in shown:
        cells = _cells(row, frame.now_s)
        table.add_row(*(cells[c] for c in columns))
    if not fits:
        more = Text(f"… {len(frame.senses) - len(shown)} more", style="dim")
        table.add_row(more, *([""] * (len(columns) - 1)))
    return table


def _line(text: str, style: str = "") -> Text:
    return Text(clean(text), style=style, no_wrap=True, overflow="ellipsis")


def _decision(h: Highlight, now_s: float) -> Text:
    if h.surfaced:
        return _line(f"{ago(now_s - h.wall_s):>4} ▲ surfaced {h.probe}: {h.line}", "bold yellow")
    why = h.outcome.removeprefix("hold:")
    return _line(f"{ago(now_s - h.wall_s):>4} · held ({why}) {h.probe}: {h.line}", "dim")


def _agent(a: AgentRead, now_s: float) -> Text:
    if a.outcome != "ok":
        return _line(f"{ago(now_s - a.wall_s):>4} {a.client} {a.tool}: {a.outcome}", "red")
    return _line(f"{ago(now_s - a.wall_s):>4} {a.client} {a.tool}: {a.rows:,} rows, {a.bytes:,} B")


def _section(title: str, lines: list[Text], size: int, empty: str) -> Layout:
    body = lines[: size - 1] or [_line(f"     {empty}", "dim")]
    rule = Rule(title, align="left", style="dim")
    part = Layout(size=size)
    part.split_column(Layout(rule, size=1), Layout(Group(*body), size=size - 1))
    return part


def plan(height: int, frame: Frame) -> tuple[int, int, int, int, int]:
    """Rows for (header, senses, decisions, agents, errors), each with its title, adding up
    to at most ``height``: senses first, as many as fit beside a few decisions, agent reads
    and errors; the rest for those, errors taking at most a third."""
    header = min(height, 2 if frame.alerts else 1)
    room = height - header
    want_decisions = 1 + max(len(frame.highlights), 1)
    want_agents = 1 + min(len(frame.agents), 3) if frame.agents else 0
    want_errors = 1 + len(frame.errors) if frame.errors else 0
    least_errors = min(want_errors, 3)
    least = min(want_decisions, 4) + min(want_agents, 2) + least_errors
    senses = min(1 + len(frame.senses), max(2, room - least))
    senses = min(senses, room)
    rest = room - senses
    errors = min(want_errors, max(least_errors, rest // 3), rest)
    agents = min(want_agents, max(0, rest - errors - 2))  # decisions keep a title and a line
    if agents < 2:
        agents = 0
    decisions = min(want_decisions, rest - errors - agents)
    if decisions < 2:  # a title alone says nothing
        decisions = 0
    errors = min(want_errors, rest - decisions - agents)  # what the others leave unused
    return header, senses, decisions, agents, errors if errors >= 2 else 0


def render(frame: Frame, width: int, height: int) -> Layout:
    """The whole view, ``height`` rows of at most ``width`` cells."""
    header, senses, decisions, agents, errors = plan(height, frame)
    parts = [Layout(_header(frame, width), size=1)]
    if header > 1:
        parts.append(Layout(_alerts(frame), size=1))
    if senses:
        parts.append(Layout(_senses(frame, width, senses), size=senses))
    if decisions:
        lines = [_decision(h, frame.now_s) for h in reversed(frame.highlights)]
        parts.append(_section("attention", lines, decisions, "no decisions yet"))
    if agents:
        lines = [_agent(a, frame.now_s) for a in reversed(frame.agents)]
        parts.append(_section("agents (nerve mcp)", lines, agents, ""))
    if errors:
        lines = [_line(f"{ago(frame.now_s - e.wall_s):>4} {e.text}", "red")
                 for e in reversed(frame.errors)]  # fmt: skip
        parts.append(_section("errors", lines, errors, ""))
    used = header + senses + decisions + agents + errors
    if used < height:  # a blank, not Text(""): Layout shows a placeholder for a falsy one
        parts.append(Layout(Text(" "), size=height - used))
    view = Layout()
    view.split_column(*parts)
    return view


def frame_of(kernel: Kernel, rate: Rate, recent: journal.Recent, now_s: float) -> Frame:
    """The kernel's figures now; ``rate`` takes a sample (on the monotonic clock)."""
    events = kernel.stored_events
    rate.add(time.monotonic(), events)
    senses = tuple(
        SenseRow(
            name,
            st.group,
            st.computes,
            st.errors,
            None if st.last_wall_ns is None else st.last_wall_ns / 1e9,
            st.last_duration_ms,
            latest_text(st.last_line, st.last_line_ns, st.unavailable, int(now_s * 1e9))
            if st.computes
            else "",
            sum(kernel.skips.totals(name).values()),
            kernel.skips.last_reason(name) or "",
        )
        for name, st in sorted(kernel.stats.items())
    )
    return Frame(
        workspace=str(kernel.ws.root),
        pid=os.getpid(),
        now_s=now_s,
        started_s=kernel.started_wall_ns / 1e9,
        events=events,
        rate=rate.per_second(),
        segments=kernel.segments,
        senses=senses,
        highlights=tuple(kernel.feed.highlights),
        errors=tuple(e for e in recent.entries if e.level >= logging.WARNING),
        alerts=_alerts_of(kernel),
        agents=tuple(kernel.feed.agents.recent),
    )


def _alerts_of(kernel: Kernel) -> tuple[str, ...]:
    """What the header's second line warns of: a paused capture, a failing seal."""
    alerts = []
    capture = kernel.capture.to_json()
    if capture.get("paused"):
        from nerve.privacy.pause import PauseState

        alerts.append(f"capture {PauseState.from_json(capture).describe()}")
    if kernel.seal_failure:
        alerts.append(f"seal failing: {kernel.seal_failure}")
    return tuple(alerts)


async def run_with_view(
    kernel: Kernel, recent: journal.Recent, console: Console | None = None
) -> None:
    """Run the kernel, drawing the view until it is asked to stop; then leave the
    terminal's alternate screen and print the rest of the daemon's log (its shutdown)."""
    console = console or Console()
    task = asyncio.create_task(kernel.run_until_stopped())
    ready = asyncio.create_task(kernel.ready.wait())
    await asyncio.wait([task, ready], return_when=asyncio.FIRST_COMPLETED)
    ready.cancel()
    if task.done():  # it could not start: its error, without a flash of the view
        await task
        return
    rate, seen = Rate(), recent.total
    with Live(console=console, screen=True, auto_refresh=False) as live:
        while not task.done() and not kernel.stopping.is_set():
            seen = recent.total
            frame = frame_of(kernel, rate, recent, time.time())
            live.update(render(frame, console.width, console.height), refresh=True)
            await _stop_or(kernel, REFRESH_S)
    for entry in recent.since(seen):  # logged after the last frame, e.g. "stopping (SIGINT)"
        sys.stdout.write(journal.format_line(entry.wall_s, entry.level, entry.text) + "\n")
    with journal.echo(sys.stdout):
        await task


async def _stop_or(kernel: Kernel, seconds: float) -> None:
    """Sleep ``seconds``, or less if the kernel is asked to stop."""
    try:
        async with asyncio.timeout(seconds):
            await kernel.stopping.wait()
    except TimeoutError:
        pass
