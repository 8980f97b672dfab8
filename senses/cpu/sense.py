"""CPU load: utilisation since the previous compute, load average and core counts.

Source class ``endpoint`` (the state of this host as a whole), trust ``FirstParty``
(psutil reads the kernel's own counters). One observation per compute that has news; the
first compute after the worker starts only starts the measure.

An observation is sent when the reading is news (see :mod:`nerve.machine.deadband`): the
utilisation moved by 5 points or the load by a tenth (at least 0.25) since the one last sent,
or ``keyframe_s`` passed; a machine at rest costs one observation a minute, after the first
eight computes, which are all sent (attention's probes learn a baseline from them).

Options: ``per_cpu`` (bool, default false) adds each logical CPU's percent to the payload;
``keyframe_s`` (default 60; 0 sends every compute).

Readings (for attention's value probes): ``busy_permille`` (utilisation, 0..1000) and, where
the host has a load average, ``load1_centi`` (the 1-minute load × 100).
"""

from __future__ import annotations

import time
from typing import Any

import psutil

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust
from nerve.machine.deadband import Band, Deadband, keyframe_ns

# The reading lives in the observation; state keeps only what the next compute needs (psutil
# keeps the previous counters in this process), so a compute stores no new state.
initial_state: dict[str, Any] = {"note": None}

_BANDS = {"busy_permille": Band(50), "load1_centi": Band(25, 0.1)}
_sent = Deadband()
# psutil measures cpu_percent(interval=None) against its previous call in this process. The
# first compute only starts that measure: a share since the worker's import would be mostly
# nerve's own start, and attention would take it for the machine's baseline.
_measuring = False


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    per_cpu = ctx.options.get("per_cpu", False)
    if not isinstance(per_cpu, bool):
        raise ValueError(
            f"senses.{ctx.name}.options.per_cpu must be true or false, got {per_cpu!r}"
        )
    every = keyframe_ns(ctx.options, ctx.name)
    global _measuring
    if not _measuring:
        psutil.cpu_percent(interval=None)
        psutil.cpu_percent(interval=None, percpu=True)
        _measuring = True
        return Result(state={"note": None})
    payload, note = _sample(per_cpu)
    if not _sent.news(ctx.name, payload["readings"], _BANDS, every):
        return Result(state={"note": note})
    return Result(state={"note": note}, observations=[_observation(payload)])


def _observation(payload: dict[str, Any]) -> Observation:
    line = f"cpu {payload['percent']:.1f}%"
    if payload["load1"] is not None:
        line += f" load1 {payload['load1']:.2f}"
    return Observation(
        source=SourceClass.ENDPOINT,
        line=f"{line} ({payload['cores_logical']} cores)",
        payload=payload,
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns(),
    )


def _sample(per_cpu: bool) -> tuple[dict[str, Any], str | None]:
    load, note = _load_average()
    payload: dict[str, Any] = {
        "percent": round(float(psutil.cpu_percent(interval=None)), 1),
        "load1": load[0] if load else None,
        "load5": load[1] if load else None,
        "load15": load[2] if load else None,
        "cores_logical": int(psutil.cpu_count(logical=True) or 1),
        "cores_physical": _physical_cores(),
    }
    if per_cpu:
        payload["per_cpu"] = [round(float(p), 1) for p in psutil.cpu_percent(percpu=True)]
    payload["readings"] = _readings(payload)
    return payload, note


def _readings(payload: dict[str, Any]) -> dict[str, int]:
    readings = {"busy_permille": round(payload["percent"] * 10)}
    if payload["load1"] is not None:
        readings["load1_centi"] = round(payload["load1"] * 100)
    return readings


def _load_average() -> tuple[tuple[float, float, float] | None, str | None]:
    try:
        one, five, fifteen = psutil.getloadavg()
    except (OSError, AttributeError, NotImplementedError) as exc:
        return None, f"load average unavailable: {exc}"
    return (round(float(one), 2), round(float(five), 2), round(float(fifteen), 2)), None


def _physical_cores() -> int | None:
    count = psutil.cpu_count(logical=False)
    return int(count) if count else None
