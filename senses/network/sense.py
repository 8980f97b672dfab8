"""Network throughput: bytes and packets per second since the previous compute.

Source class ``network``, trust ``FirstParty``. The previous counters live in state, stored
at checkpoints (``state_records``); the first compute (and the first after a reboot, a
counter that went backwards, or a daemon that did not stop cleanly) records a baseline and
observes nothing. Then one observation for all interfaces together and, with
``per_nic``, one per interface.

Options: ``per_nic`` (bool, default false), ``nics`` (list of interface names, default all).

Readings (for attention's value probes), on the ``all`` observation: ``down_kib_per_s``,
``up_kib_per_s``, ``errors`` and, where the host lists its sockets, ``listening_ports``
(distinct TCP ports in LISTEN); a per-interface observation carries
``down_kib_per_s:<nic>`` and ``up_kib_per_s:<nic>``.
"""

from __future__ import annotations

import time
from typing import Any

import psutil

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust

initial_state: dict[str, Any] = {
    "boot": None,
    "t_ns": None,
    "total": None,
    "nics": {},
    "note": None,
}
state_records = "checkpoints"

_FIELDS = ("bytes_sent", "bytes_recv", "packets_sent", "packets_recv", "errin", "errout")
_KIB = 1024


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    per_nic, wanted = _options(ctx)
    current = _read(per_nic, wanted)
    if isinstance(current, str):
        return Result(state={**initial_state, "note": current})
    if not _same_boot(state.get("boot"), current["boot"]) or not isinstance(
        state.get("total"), dict
    ):
        return Result(state={**current, "note": "baseline: no previous counters"})
    observations = _observe(state, current)
    kept = [o for o in observations if o is not None]
    note = None if len(kept) == len(observations) else "a counter went backwards: rebaselined"
    return Result(state={**current, "note": note}, observations=kept)


def _read(per_nic: bool, wanted: list[str] | None) -> dict[str, Any] | str:
    """The state to keep (counters, time, boot), or a string saying why there is none."""
    try:
        raw = psutil.net_io_counters(pernic=False)
        nics = _nic_counters(wanted) if per_nic else {}
    except (OSError, RuntimeError, NotImplementedError) as exc:
        return f"counters unavailable: {exc}"
    if raw is None:
        return "counters unavailable: no network interfaces"
    total = _counters(raw)
    boot = round(float(psutil.boot_time()))
    return {"boot": boot, "t_ns": time.monotonic_ns(), "total": total, "nics": nics, "note": None}


def _observe(state: dict[str, Any], current: dict[str, Any]) -> list[Observation | None]:
    dt_ns = current["t_ns"] - int(state.get("t_ns") or 0)
    observations = [_observation("all", _rates(state["total"], current["total"], dt_ns))]
    previous_nics = state.get("nics") or {}
    for name, counters in current["nics"].items():
        previous = previous_nics.get(name)
        if isinstance(previous, dict):
            observations.append(_observation(name, _rates(previous, counters, dt_ns)))
    return observations


def _options(ctx: SenseContext) -> tuple[bool, list[str] | None]:
    per_nic = ctx.options.get("per_nic", False)
    if not isinstance(per_nic, bool):
        raise ValueError(
            f"senses.{ctx.name}.options.per_nic must be true or false, got {per_nic!r}"
        )
    nics = ctx.options.get("nics")
    if nics is not None and not (
        isinstance(nics, list | tuple) and all(isinstance(n, str) for n in nics)
    ):
        raise ValueError(f"senses.{ctx.name}.options.nics must be a list of names, got {nics!r}")
    return per_nic, None if nics is None else list(nics)


def _counters(raw: Any) -> dict[str, int]:
    return {name: int(getattr(raw, name)) for name in _FIELDS}


def _nic_counters(wanted: list[str] | None) -> dict[str, dict[str, int]]:
    raw = psutil.net_io_counters(pernic=True)
    return {name: _counters(c) for name, c in sorted(raw.items()) if not wanted or name in wanted}


def _rates(previous: dict[str, Any], current: dict[str, int], dt_ns: int) -> dict[str, Any] | None:
    """Per-second rates, or None when time or any counter went backwards."""
    deltas = {name: current[name] - int(previous.get(name, 0)) for name in _FIELDS}
    if dt_ns <= 0 or any(d < 0 for d in deltas.values()):
        return None
    rates: dict[str, Any] = {
        f"{name}_per_s": round(deltas[name] * 1e9 / dt_ns, 1) for name in _FIELDS[:4]
    }
    rates["errors"] = deltas["errin"] + deltas["errout"]
    rates["interval_ms"] = dt_ns // 1_000_000
    return rates


def _listening_ports() -> int | None:
    """Distinct local TCP ports in LISTEN; None where the host hides its sockets. (UDP is
    left out: every DNS lookup binds a short-lived port, which would be noise.)"""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (OSError, psutil.Error, NotImplementedError):
        return None
    return len({c.laddr.port for c in conns if c.laddr and c.status == psutil.CONN_LISTEN})


def _readings(nic: str, rates: dict[str, Any]) -> dict[str, int]:
    suffix = "" if nic == "all" else f":{nic}"
    readings = {
        f"down_kib_per_s{suffix}"[:64]: round(rates["bytes_recv_per_s"] / _KIB),
        f"up_kib_per_s{suffix}"[:64]: round(rates["bytes_sent_per_s"] / _KIB),
    }
    if nic == "all":
        readings["errors"] = int(rates["errors"])
        ports = _listening_ports()
        if ports is not None:
            readings["listening_ports"] = ports
    return readings


def _observation(nic: str, rates: dict[str, Any] | None) -> Observation | None:
    if rates is None:
        return None
    rates = {**rates, "readings": _readings(nic, rates)}
    down, up = rates["bytes_recv_per_s"] / _KIB, rates["bytes_sent_per_s"] / _KIB
    return Observation(
        source=SourceClass.NETWORK,
        line=f"net {nic} down {down:.1f} KiB/s up {up:.1f} KiB/s",
        payload={"nic": nic, **rates},
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns(),
    )


def _same_boot(previous: Any, boot: int) -> bool:
    """Whether ``previous`` names this boot (boot time can jitter by a second on some hosts)."""
    return isinstance(previous, int) and abs(previous - boot) <= 2
