"""The newcomer's morning of issue 41, as a log with known times: three windows (vim, Firefox,
the build window), failing and passing commands through the hook, a file edit, a memory
grower (``memgrow.py``, peaking at 3008 MiB and gone before "now"), a CPU hog (``yes``,
interrupted), mypy holding 424 MiB throughout, cpu/load and memory readings, and attention's
record (a highlight surfaced, one held). 2026-05-06, UTC; "now" is 07:45:35.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from nerve.clock import Hlc
from nerve.events import Event, SourceClass
from tests.helpers.workday import _event, changed, command, focus, own

__all__ = ["NOW", "at", "events", "record"]

_MIB = 1024**2


def at(hhmmss: str) -> int:
    """07:42 or 07:42:10 on the day, as ns."""
    parts = [int(p) for p in hhmmss.split(":")] + [0]
    moment = datetime(2026, 5, 6, parts[0], parts[1], parts[2], tzinfo=UTC)
    return int(moment.timestamp()) * 10**9


NOW = at("07:45:35")


def _proc(pid: int, name: str, cmdline: str, permille: int, rss_mib: int) -> dict[str, Any]:
    return {
        "pid": pid, "name": name, "user": "u", "cmdline": cmdline, "cpu_permille": permille,
        "rss_bytes": rss_mib * _MIB, "start_time": 1_778_000_000 + pid,
    }  # fmt: skip


_GROWN = (100, 500, 900, 1300, 1700, 2100, 2600, 3008, 2900)


def _memgrow_mib(t: int) -> int:
    """The grower: 100 MiB at 07:43, 3008 MiB at 07:44:10, 2900 at 07:44:20, gone after."""
    steps = (t - at("07:43")) // (10 * 10**9)
    return _GROWN[steps] if 0 <= steps < len(_GROWN) and t >= at("07:43") else 0


def _top(t: int) -> Event:
    grow, hog = _memgrow_mib(t), at("07:43") <= t < at("07:45")
    cpu = [_proc(888, "yes", "yes", 980, 2)] if hog else []
    memory = [_proc(555, "mypy", "mypy nerve", 5, 424)]
    if grow:
        memory.insert(0, _proc(777, "python3", "python3 memgrow.py", 300, grow))
    payload = {"event": "top", "interval_ms": 10_000, "cpu": cpu, "memory": memory, "over": []}
    return _event(t, SourceClass.PROCESS_TREE, "processes", "top", payload)


def _process(t: int, event: str, pid: int, name: str, cmdline: str) -> Event:
    payload = {"pid": pid, "name": name, "event": event, "cmdline": cmdline, "user": "u",
               "start_time": 1_778_000_000 + pid, "why": "name"}  # fmt: skip
    verb = "started" if event == "started" else "exited"
    return _event(t, SourceClass.PROCESS_TREE, "processes", f"process {verb} {name} [{pid}]",
                  payload)  # fmt: skip


def _cpu(t: int, percent: float, load1: float) -> Event:
    payload = {"percent": percent, "load1": load1, "load5": 1.0, "load15": 0.5}
    line = f"cpu {percent:.1f}% load1 {load1:.2f} (4 cores)"
    return _event(t, SourceClass.ENDPOINT, "cpu", line, payload)


def _memory(t: int, percent: float) -> Event:
    payload = {"percent": percent, "used_bytes": int(percent * 160) * _MIB,
               "total_bytes": 16_000 * _MIB}  # fmt: skip
    return _event(t, SourceClass.ENDPOINT, "memory", f"mem {percent:.1f}%", payload)


def _decision(t: int, outcome: str, probe: str, seen: str) -> Event:
    payload = {
        "outcome": outcome, "probe": probe, "value_milli": 900, "cost_milli": 400,
        "charged_uj": 250_000 if outcome == "surface" else 0, "budget_before_uj": 1_000_000,
        "budget_after_uj": 750_000 if outcome == "surface" else 1_000_000,
        "source_line": seen, "chain_seq": 1,
    }  # fmt: skip
    return own(t, "attention.decision", "attention", f"{outcome}: {seen}", payload)


def _readings() -> list[Event]:
    out = []
    for i, t in enumerate(range(at("07:30"), at("07:45:30"), 30 * 10**9)):
        busy = at("07:43") <= t < at("07:45")
        load = 3.1 if t == at("07:44") else (2.0 if busy else 0.4)
        out.append(_cpu(t + 1, 30.0 if busy else 5.0 + i % 2, load))
        grow = _memgrow_mib(t)
        out.append(_memory(t + 2, 78.0 if t == at("07:44") else 20.0 + grow / 160))
    return out


def events() -> list[Event]:
    """The morning, in HLC order."""
    out = [
        focus(at("07:30"), "xterm", "vim notes.md"),
        focus(at("07:35"), "firefox", "Docs — Mozilla Firefox"),
        focus(at("07:38"), "xterm", "build: make build"),
        command(at("07:40"), "make build", 2, 3_000, "/home/u/src"),
        command(at("07:41:10"), "ls", 0, 5, "/home/u/src"),
        command(at("07:41:30"), "false", 1, 2, "/home/u/src"),
        command(at("07:42:05"), "make build", 0, 5_000, "/home/u/src"),
        command(at("07:42:20"), "git status", 0, 40, "/home/u/src"),
        changed(at("07:42:30"), "src/app.py"),
        focus(at("07:42:40"), "xterm", "vim src/app.py"),
        _process(at("07:43"), "started", 777, "python3", "python3 memgrow.py"),
        _process(at("07:43"), "started", 888, "yes", "yes"),
        command(at("07:43"), "yes", 130, 120_000, "/home/u"),
        _process(at("07:44:25"), "exited", 777, "python3", "python3 memgrow.py"),
        _decision(at("07:44:15"), "surface", "value:memory.used_mib", "mem 78.0% PRESSURE"),
        _decision(at("07:44:30"), "hold:value", "salience", "net all down 0.0 KiB/s"),
        _process(at("07:45"), "exited", 888, "yes", "yes"),
        *(_top(t) for t in range(at("07:40"), at("07:45:30"), 10 * 10**9)),
        *_readings(),
    ]
    ordered = sorted(out, key=lambda e: (e.hlc.physical_ns, e.hlc.logical))
    return [dataclasses.replace(e, hlc=Hlc(e.hlc.physical_ns, i)) for i, e in enumerate(ordered)]


def record(ws: Any) -> Any:
    """Import the morning into the workspace's log."""
    with ws.open_log() as log:
        log.import_events(events())
    return ws
