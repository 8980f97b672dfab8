"""``nerve dev`` beside a running daemon: a viewer of it, as ``journalctl -f`` is of a service.

The daemon keeps running; the view asks it for its status over the socket each refresh,
reads its newest decisions from the log and its warnings from its own log file, and draws
the same :func:`nerve.dev.view.render` a foreground daemon draws. Ctrl+C leaves the view
and nothing else.
"""

from __future__ import annotations

import re
import signal
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve.errors import DaemonError
from nerve.runtime.frame import Frame, Highlight, Rate, SenseRow, json_object
from nerve.runtime.journal import Entry
from nerve.runtime.latest import latest_text

if TYPE_CHECKING:
    from nerve.api import Workspace

REFRESH_S = 1.0
_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (warning|error|critical): (.*)$")
_LOG_BYTES = 64 * 1024  # the end of the daemon's log that is searched for warnings
_LEVELS = {"warning": 30, "error": 40, "critical": 50}


def frame_from(
    health: dict[str, Any],
    *,
    now_s: float,
    rate: float,
    highlights: tuple[Highlight, ...] = (),
    errors: tuple[Entry, ...] = (),
) -> Frame:
    """The view's figures from a daemon's ``status`` answer (what a viewer can ask)."""
    senses = tuple(
        SenseRow(
            s["name"],
            s.get("group", ""),
            s.get("computes", 0),
            s.get("errors", 0),
            None if s.get("last_ns") is None else s["last_ns"] / 1e9,
            None,
            _latest(s, now_s),
        )
        for s in health.get("sense_results", [])
    )
    alerts = (f"seal failing: {health['seal_failure']}",) if health.get("seal_failure") else ()
    return Frame(
        workspace=str(health.get("workspace", "")),
        pid=int(health["pid"]),
        now_s=now_s,
        started_s=now_s - float(health.get("uptime_s", 0.0)),
        events=int(health.get("events", 0)),
        rate=rate,
        segments=int(health.get("segments", 0)),
        senses=senses,
        highlights=highlights,
        errors=errors,
        alerts=(*_capture_alert(health), *alerts),
    )


def _latest(sense: dict[str, Any], now_s: float) -> str:
    """The ``latest`` cell: the last reading and its age, or why the sense cannot observe."""
    line, unavailable = sense.get("last_result") or "", sense.get("unavailable") or ""
    if not sense.get("computes"):
        return ""
    return latest_text(line, sense.get("last_result_ns"), unavailable, int(now_s * 1e9))


def _capture_alert(health: dict[str, Any]) -> tuple[str, ...]:
    capture = health.get("capture") or {}
    if not capture.get("paused"):
        return ()
    from nerve.privacy.pause import PauseState

    return (f"capture {PauseState.from_json(capture).describe()}",)


def log_warnings(path: Path, keep: int = 20) -> tuple[Entry, ...]:
    """The newest warnings and errors in the daemon's own log file."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - _LOG_BYTES))
            text = fh.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ()
    found = []
    for line in text.splitlines():
        match = _LOG_LINE.match(line)
        if match:
            wall = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S").timestamp()
            found.append(Entry(wall, _LEVELS[match[2]], match[3]))
    return tuple(found[-keep:])


def newest_decisions(ws: Workspace, count: int = 20) -> tuple[Highlight, ...]:
    """The newest attention decisions in the log, oldest first."""
    from nerve.tail import tail_filter

    filt = tail_filter(["attention.decision"], [], all_kinds=True)
    table = ws.events.read(count=count, filt=filt).batch.table
    if table is None or not table.num_rows:
        return ()
    out = []
    for row in table.select(["physical_ns", "subject", "payload", "line"]).to_pylist():
        data = json_object(row["payload"])
        outcome = str(data.get("outcome") or row["subject"])
        out.append(
            Highlight(row["physical_ns"] / 1e9, outcome, str(data.get("probe", "")), _said(row))
        )
    return tuple(out)


def _said(row: dict[str, Any]) -> str:
    line = row["line"] or ""
    return line.split(": ", 1)[1] if ": " in line else line


def view(ws: Workspace) -> int:
    """Draw the running daemon until Ctrl+C (or it stops); returns its pid."""
    from rich.console import Console
    from rich.live import Live

    from nerve.dev.view import render

    console, rate, pid = Console(), Rate(), 0
    asked = _CtrlC()
    previous = signal.signal(signal.SIGINT, asked)
    try:
        with Live(console=console, screen=True, auto_refresh=False) as live:
            while not asked.times:
                status = ws.daemon.status()
                if not status.running:
                    raise DaemonError("the daemon stopped")
                health = status.health
                pid = int(health["pid"])
                rate.add(time.monotonic(), int(health.get("events", 0)))
                frame = frame_from(
                    health,
                    now_s=time.time(),
                    rate=rate.per_second(),
                    highlights=newest_decisions(ws),
                    errors=log_warnings(ws.daemon.log_path()),
                )
                live.update(render(frame, console.width, console.height), refresh=True)
                asked.wait(REFRESH_S)
    except KeyboardInterrupt:  # a second Ctrl+C, while a step of the loop was slow
        pass
    except DaemonError:
        pid = 0  # it stopped while we watched
    finally:
        signal.signal(signal.SIGINT, previous)
    return pid


class _CtrlC:
    """The view's SIGINT handler: it notes the first Ctrl+C and the loop ends at its next
    turn. A KeyboardInterrupt raised wherever the signal lands would be dropped if it landed
    inside a destructor (Python only prints "Exception ignored"), and the view would go on.
    A second Ctrl+C raises, for a step that is slow to return."""

    def __init__(self) -> None:
        self.times = 0

    def __call__(self, signum: int, frame: object) -> None:
        self.times += 1
        if self.times > 1:
            raise KeyboardInterrupt

    def wait(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.times and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))
