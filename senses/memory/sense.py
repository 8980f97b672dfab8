"""Memory: virtual memory and swap, as percent and bytes.

Source class ``endpoint`` (the state of this host as a whole), trust ``FirstParty``. One
observation per compute that has news; ``pressure`` is true when memory use reaches
``warn_percent``.

An observation is sent when the reading is news (see :mod:`nerve.machine.deadband`): memory or
swap in use moved by 2 % (at least 64 MiB), ``pressure`` turned, or ``keyframe_s`` passed.

Options: ``warn_percent`` (number, default 90), ``keyframe_s`` (default 60; 0 sends every
compute).

Readings (for attention's value probes): ``used_mib`` (memory in use) and, where the host
reports swap, ``swap_used_mib``.
"""

from __future__ import annotations

import time
from typing import Any

import psutil

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust
from nerve.machine.deadband import Band, Deadband, keyframe_ns

# The reading lives in the observation; state keeps only the note, so a compute that reads
# as the previous one did stores no new state.
initial_state: dict[str, Any] = {"note": None}

_GIB = 1024**3
_MIB = 1024**2
_BANDS = {"used_mib": Band(64, 0.02), "swap_used_mib": Band(64, 0.02)}
_sent = Deadband()


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    warn = _warn_percent(ctx)
    vm = psutil.virtual_memory()
    swap, note = _swap()
    payload: dict[str, Any] = {
        "percent": round(float(vm.percent), 1),
        "total_bytes": int(vm.total),
        "available_bytes": int(vm.available),
        "used_bytes": int(vm.total - vm.available),
        "pressure": float(vm.percent) >= warn,
        **swap,
    }
    payload["readings"] = _readings(payload)
    news = {**payload["readings"], "pressure": int(payload["pressure"])}
    if not _sent.news(ctx.name, news, _BANDS, keyframe_ns(ctx.options, ctx.name)):
        return Result(state={"note": note})
    return Result(state={"note": note}, observations=[_observation(payload)])


def _readings(payload: dict[str, Any]) -> dict[str, int]:
    readings = {"used_mib": payload["used_bytes"] // _MIB}
    if isinstance(payload.get("swap_used_bytes"), int):
        readings["swap_used_mib"] = payload["swap_used_bytes"] // _MIB
    return readings


def _observation(payload: dict[str, Any]) -> Observation:
    return Observation(
        source=SourceClass.ENDPOINT,
        line=_line(payload),
        payload=payload,
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns(),
    )


def _warn_percent(ctx: SenseContext) -> float:
    value = ctx.options.get("warn_percent", 90)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ValueError(f"senses.{ctx.name}.options.warn_percent must be 0..100, got {value!r}")
    return float(value)


def _swap() -> tuple[dict[str, Any], str | None]:
    """Swap figures, or ``None`` figures and a note where the host cannot report swap."""
    try:
        sw = psutil.swap_memory()
    except (OSError, RuntimeError, NotImplementedError) as exc:
        empty = {"swap_percent": None, "swap_total_bytes": None, "swap_used_bytes": None}
        return empty, f"swap unavailable: {exc}"
    figures = {
        "swap_percent": round(float(sw.percent), 1),
        "swap_total_bytes": int(sw.total),
        "swap_used_bytes": int(sw.used),
    }
    return figures, None


def _line(p: dict[str, Any]) -> str:
    used, total = p["used_bytes"] / _GIB, p["total_bytes"] / _GIB
    line = f"mem {p['percent']:.1f}% ({used:.1f} of {total:.1f} GiB)"
    if p["swap_percent"] is not None:
        line += f" swap {p['swap_percent']:.1f}%"
    return line + (" PRESSURE" if p["pressure"] else "")
