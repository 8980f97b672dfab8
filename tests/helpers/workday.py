"""A fixed, recorded workday: the bundled senses' observations with known times.

2026-05-06 (a Wednesday), UTC; "now" is 15:30. The day holds focus changes, an away spell,
shell commands through the hook (some failing), file changes, listening ports opened and
closed, processes' top samples with a CPU hog (``yes``) from 15:20, a count of short-lived
processes, machine readings and two attention decisions; and one evening of the day before.
Times are the events' HLC times, so the log itself is the record.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from nerve.canonical import canonical_json
from nerve.clock import Hlc
from nerve.events import NERVE_SOURCE, Event, SourceClass, Trust
from nerve.workspace import Workspace

NODE = "workday"
HOME = "/home/u"


def at(hhmm: str, day: int = 6) -> int:
    hour, minute = (int(part) for part in hhmm.split(":"))
    return int(datetime(2026, 5, day, hour, minute, tzinfo=UTC).timestamp()) * 10**9


NOW = at("15:30")


def _event(t: int, source: int, subject: str, line: str, payload: dict[str, Any]) -> Event:
    trust = Trust.INFERRED if source == SourceClass.SHELL else Trust.FIRST_PARTY
    kind = "observation" if source != NERVE_SOURCE else payload.pop("_kind")
    return Event(Hlc(t, 0), NODE, kind, subject, source, trust, None, canonical_json(payload), line)


def focus(t: int, app: str, title: str) -> Event:
    payload = {"event": "focus", "app": app, "title": title, "window": 1, "pid": 7}
    return _event(t, SourceClass.APP_FOCUS, "focus", f"focus {app}: {title}", payload)


def idle(t: int, event: str) -> Event:
    return _event(t, SourceClass.APP_FOCUS, "focus", event, {"event": event})


def command(t: int, cmd: str, code: int, ms: int, cwd: str) -> Event:
    payload = {
        "command": cmd, "format": "hook", "exit": code, "duration_ms": ms, "cwd": cwd,
        "session": "1.1", "shell": "bash", "timestamp": t // 10**9, "elapsed_s": ms // 1000,
    }  # fmt: skip
    line = f"$ {cmd}" + (f" [exit {code}]" if code else "")
    return _event(t, SourceClass.SHELL, "shell", line, payload)


def changed(t: int, path: str, change: str = "modified") -> Event:
    payload = {"path": path, "change": change}
    return _event(t, SourceClass.FILE_CHANGE, "files", f"file {change} {path}", payload)


def _proc(
    pid: int, name: str, permille: int, rss_mib: int, described: bool = True
) -> dict[str, Any]:
    about = {"user": "u", "cmdline": _CMDLINES.get(name, name)} if described else {}
    return {
        "pid": pid, "name": name, **about, "cpu_permille": permille,
        "rss_bytes": rss_mib * 1024**2, "start_time": 1_778_000_000 + pid,
    }  # fmt: skip


_CMDLINES = {"yes": "yes --hog"}


def top(t: int, hog: bool, memory_moved: bool = True, described: bool = True) -> Event:
    """A top sample; a process's user and command line are sent only when ``described``
    (the sense sends them once per ``top_every_s``)."""
    busy = [_proc(4242, "yes", 980, 2, described)] if hog else []
    before = at("15:00") > t >= at("14:00")
    busy += [_proc(100, "python", 300 if before else 20, 500, described)]
    memory = (
        [_proc(300, "java", 5, 2048, described), _proc(100, "python", 20, 500, described)]
        if memory_moved
        else []
    )
    payload = {"event": "top", "interval_ms": 60_000, "cpu": busy, "memory": memory, "over": []}
    line = "top cpu: " + ", ".join(f"{p['name']} {p['cpu_permille'] // 10}%" for p in busy)
    return _event(t, SourceClass.PROCESS_TREE, "processes", line, payload)


def started(t: int, pid: int, name: str, why: str) -> Event:
    payload = {"pid": pid, "name": name, "event": "started", "cmdline": name, "why": why}
    return _event(
        t, SourceClass.PROCESS_TREE, "processes", f"process started {name} [{pid}]", payload
    )


def brief(t: int, counts: dict[str, int]) -> Event:
    names = ", ".join(f"{name} ×{n}" for name, n in counts.items())
    payload = {
        "event": "brief",
        "counts": counts,
        "readings": {"brief_exits": sum(counts.values())},
    }
    return _event(
        t, SourceClass.PROCESS_TREE, "processes", f"short-lived processes: {names}", payload
    )


def port(t: int, event: str, address: str, number: int, pid: int, name: str) -> Event:
    payload = {
        "event": event, "proto": "tcp", "address": address, "port": number, "pid": pid,
        "name": name, "user": "u",
    }  # fmt: skip
    verb = "opened by" if event == "port_opened" else "closed (was held by"
    line = f"port {address}:{number} {verb} {name} [{pid}]" + (")" if "closed" in event else "")
    return _event(t, SourceClass.NETWORK, "network", line, payload)


def reading(t: int, sense: str, percent: float) -> Event:
    line = f"cpu {percent:.1f}%" if sense == "cpu" else f"mem {percent:.1f}% (6.4 of 16.0 GiB)"
    return _event(t, SourceClass.ENDPOINT, sense, line, {"percent": percent})


def own(t: int, kind: str, subject: str, line: str, payload: dict[str, Any]) -> Event:
    return _event(t, NERVE_SOURCE, subject, line, {**payload, "_kind": kind})


def decision(t: int, outcome: str, seen: str) -> Event:
    payload = {
        "outcome": outcome, "probe": "salience", "value_milli": 900, "cost_milli": 400,
        "charged_uj": 250_000 if outcome == "surface" else 0, "budget_before_uj": 1_000_000,
        "budget_after_uj": 750_000, "source_line": seen, "chain_seq": 1,
    }  # fmt: skip
    return own(t, "attention.decision", "attention", f"{outcome}: {seen}", payload)


def events() -> list[Event]:
    out = [
        focus(at("16:00", 5), "code", "deploy.yaml — ops"),
        command(at("16:05", 5), "deploy.sh", 0, 300_000, f"{HOME}/ops"),
        idle(at("17:00", 5), "away"),
        focus(at("09:00"), "xterm", "vim src/app.py"),
        command(at("09:05"), "make test", 2, 12_000, f"{HOME}/src/x"),
        command(at("09:06"), "git status", 0, 50, f"{HOME}/src/x"),
        changed(at("09:10"), "src/app.py"),
        port(at("09:12"), "port_opened", "0.0.0.0", 5432, 555, "postgres"),
        started(at("09:30"), 100, "python", "name"),
        focus(at("09:40"), "firefox", "Docs — Mozilla Firefox"),
        idle(at("10:00"), "away"),
        idle(at("10:30"), "back"),
        focus(at("14:00"), "code", "main.py — x"),
        own(at("14:30"), "sense.error", "disk", "sense disk: compute raised OSError: EIO", {}),
        focus(at("15:15"), "code", "lib.rs — x"),
        started(at("15:20"), 4242, "yes", "cpu"),
        brief(at("15:21"), {"cc1": 12, "make": 2}),
        focus(at("15:21"), "xterm", "cargo build"),
        command(at("15:22"), "cargo build", 101, 65_000, f"{HOME}/src/y"),
        port(at("15:23"), "port_opened", "127.0.0.1", 8000, 100, "python"),
        changed(at("15:24"), "docs/readme.md", "added"),
        port(at("15:27"), "port_closed", "127.0.0.1", 8000, 100, "python"),
        command(at("15:25"), "ls", 0, 5, HOME),
        command(at("15:26"), "false", 1, 2, HOME),
        decision(at("15:26") + 1, "surface", "top cpu: yes 98%"),
        decision(at("15:26") + 2, "hold:value", "net all down 0.0 KiB/s up 0.0 KiB/s"),
        changed(at("15:28"), "src/lib.rs"),
    ]
    for minute in range(14 * 60, 15 * 60 + 30):
        t = at(f"{minute // 60}:{minute % 60}") + 500_000_000
        # the memory top is sent only when it moved: here every tenth minute
        hog, moved = minute >= 15 * 60 + 20, minute % 10 == 0
        out.append(top(t, hog=hog, memory_moved=moved, described=minute % 5 == 0))
        if minute % 5 == 0:
            out.append(reading(t, "cpu", 95.0 if minute >= 15 * 60 + 20 else 20.0))
            out.append(reading(t, "memory", 40.0))
    ordered = sorted(out, key=lambda e: (e.hlc.physical_ns, e.hlc.logical))
    return [dataclasses.replace(e, hlc=Hlc(e.hlc.physical_ns, i)) for i, e in enumerate(ordered)]


def record(ws: Workspace) -> Workspace:
    with ws.open_log() as log:
        log.import_events(events())
    return ws
