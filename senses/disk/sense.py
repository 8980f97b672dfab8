"""Disk: usage of configured mount points and I/O throughput since the previous observation.

Source class ``endpoint`` (the state of this host as a whole), trust ``FirstParty``. One
observation per readable path (``pressure`` true at ``warn_percent`` or more) and, from the
second compute on, one for I/O rates. The previous I/O counters live in state, so rates
survive a worker restart; a reboot or a counter that went backwards restarts the baseline.
The state is stored at checkpoints (``state_records``): the readings are in the observations.

Observations are sent when they are news (see :mod:`nerve.machine.deadband`): free space moved
by 1 % (at least 256 MiB) or ``pressure`` turned; an I/O rate since the previous compute
moved by a quarter (at least 64 KiB/s); or ``keyframe_s`` passed. An I/O observation covers
the whole time since the one before: its counters stay in state until the next.

Options: ``paths`` (list, default ``["/"]``; relative paths are under the workspace),
``warn_percent`` (number, default 90), ``keyframe_s`` (default 300; 0 sends every compute).

Readings (for attention's value probes): ``free_mib:<path>`` on each usage observation (the
path cut to fit a reading's 64-character name), and ``read_kib_per_s`` / ``write_kib_per_s``
on the I/O one.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psutil

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust
from nerve.machine.deadband import Band, Deadband, keyframe_ns

initial_state: dict[str, Any] = {"boot": None, "io": None, "usage": {}, "notes": {}}
state_records = "checkpoints"

_IO_FIELDS = ("read_bytes", "write_bytes", "read_count", "write_count")
_GIB = 1024**3
_MIB = 1024**2


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    warn = _warn_percent(ctx)
    observations: list[Observation] = []
    usage: dict[str, float] = {}
    notes: dict[str, str] = {}
    every = keyframe_ns(ctx.options, ctx.name, KEYFRAME_S)
    for path in _paths(ctx):
        figures = _usage(ctx.workspace, path, warn)
        if isinstance(figures, str):
            notes[path] = figures
            continue
        usage[path] = figures["percent"]
        news = {**figures["readings"], "pressure": int(figures["pressure"])}
        bands = dict.fromkeys(figures["readings"], _FREE_BAND)
        if _sent.news(f"{ctx.name}:{path}", news, bands, every):
            observations.append(_observation(_usage_line(figures), figures))
    io, rates, io_note = _io(state)
    if io_note:
        notes["io"] = io_note
    if rates is not None and not _io_news(ctx.name, io, every):
        io = state["io"]  # the counters of the last report stay the base: no byte is lost
    elif rates is not None:
        observations.append(_observation(_io_line(rates), rates))
    new_state = {"boot": _boot_time(), "io": io, "usage": usage, "notes": notes}
    return Result(state=new_state, observations=observations)


KEYFRAME_S = 300  # free space moves slowly: a reading every five minutes at rest
_BANDS = {"read_kib_per_s": Band(64, 0.25), "write_kib_per_s": Band(64, 0.25)}
_FREE_BAND = Band(256, 0.01)
_sent = Deadband()
_previous_io: dict[str, Any] = {}  # this worker's previous counters: the rate news is judged by


def _io_news(name: str, io: dict[str, int] | None, every: int) -> bool:
    """Whether the I/O rates since the previous compute are news (nerve.machine.deadband)."""
    before = dict(_previous_io)
    _previous_io.clear()
    _previous_io.update(io or {})
    rates = _rates(before, io) if io and "t_ns" in before else None
    if rates is None:
        _sent.forget(f"{name}:io")
        return True
    return _sent.news(f"{name}:io", rates["readings"], _BANDS, every)


def _paths(ctx: SenseContext) -> list[str]:
    paths = ctx.options.get("paths", ["/"])
    if not isinstance(paths, list | tuple) or not all(isinstance(p, str) and p for p in paths):
        raise ValueError(f"senses.{ctx.name}.options.paths must be a list of paths, got {paths!r}")
    return list(paths)


def _warn_percent(ctx: SenseContext) -> float:
    value = ctx.options.get("warn_percent", 90)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ValueError(f"senses.{ctx.name}.options.warn_percent must be 0..100, got {value!r}")
    return float(value)


def _usage(workspace: Path, path: str, warn: float) -> dict[str, Any] | str:
    """Usage figures for ``path``, or a string saying why there are none."""
    target = Path(path).expanduser()
    target = target if target.is_absolute() else workspace / target
    try:
        du = psutil.disk_usage(str(target))
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    percent = round(float(du.percent), 1)
    return {
        "path": path,
        "percent": percent,
        "total_bytes": int(du.total),
        "used_bytes": int(du.used),
        "free_bytes": int(du.free),
        "pressure": percent >= warn,
        "readings": {f"free_mib:{path}"[:64]: int(du.free) // _MIB},
    }


def _io(state: dict[str, Any]) -> tuple[dict[str, int] | None, dict[str, Any] | None, str | None]:
    """(counters to keep, rates since the previous counters or None, note)."""
    current = _io_counters()
    if isinstance(current, str):
        return None, None, current
    previous = state.get("io")
    if not isinstance(previous, dict) or not _same_boot(state.get("boot"), _boot_time()):
        return current, None, None
    return current, _rates(previous, current), None


def _io_counters() -> dict[str, int] | str:
    try:
        counters = psutil.disk_io_counters(perdisk=False)
    except (OSError, RuntimeError, NotImplementedError) as exc:
        return f"io counters unavailable: {exc}"
    if counters is None:
        return "io counters unavailable: no disks reported"
    figures = {name: int(getattr(counters, name)) for name in _IO_FIELDS}
    figures["t_ns"] = time.monotonic_ns()
    return figures


def _rates(previous: dict[str, Any], current: dict[str, int]) -> dict[str, Any] | None:
    """Per-second deltas, or None when the interval or any counter went backwards."""
    dt_ns = current["t_ns"] - int(previous.get("t_ns", 0))
    deltas = {name: current[name] - int(previous.get(name, 0)) for name in _IO_FIELDS}
    if dt_ns <= 0 or any(d < 0 for d in deltas.values()):
        return None
    rates: dict[str, Any] = {f"{k}_per_s": round(v * 1e9 / dt_ns, 1) for k, v in deltas.items()}
    rates["interval_ms"] = dt_ns // 1_000_000
    rates["readings"] = {
        "read_kib_per_s": round(rates["read_bytes_per_s"] / 1024),
        "write_kib_per_s": round(rates["write_bytes_per_s"] / 1024),
    }
    return rates


def _boot_time() -> int:
    return round(float(psutil.boot_time()))


def _observation(line: str, payload: dict[str, Any]) -> Observation:
    return Observation(
        source=SourceClass.ENDPOINT,
        line=line,
        payload=payload,
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns(),
    )


def _usage_line(f: dict[str, Any]) -> str:
    line = f"disk {f['path']} {f['percent']:.1f}% used ({f['free_bytes'] / _GIB:.1f} GiB free)"
    return line + (" PRESSURE" if f["pressure"] else "")


def _io_line(r: dict[str, Any]) -> str:
    read, write = r["read_bytes_per_s"] / _MIB, r["write_bytes_per_s"] / _MIB
    return f"disk io read {read:.2f} MiB/s write {write:.2f} MiB/s"


def _same_boot(previous: Any, boot: int) -> bool:
    """Whether ``previous`` names this boot (boot time can jitter by a second on some hosts)."""
    return isinstance(previous, int) and abs(previous - boot) <= 2
