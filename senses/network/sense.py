"""Network throughput: bytes and packets per second since the previous observation.

Source class ``network``, trust ``FirstParty``. The previous counters live in state, stored
at checkpoints (``state_records``); the first compute (and the first after a reboot, a
counter that went backwards, or a daemon that did not stop cleanly) records a baseline and
observes nothing. Then one observation for all interfaces together but loopback (the
machine talking to itself is no network traffic) and, with ``per_nic``, one per interface.

The rates are sent when they are news (see :mod:`nerve.machine.deadband`): a rate since the
previous compute moved by a quarter (at least 16 KiB/s), errors came or the count of
listening ports changed since the last observation, or ``keyframe_s`` passed. An observation
covers the whole time since the one before (``interval_ms``): the counters of the last
observation stay in state until the next, so every byte is counted once.

Options: ``per_nic`` (bool, default false), ``nics`` (list of interface names, default all),
``port_min_life_s`` (default 30), ``keyframe_s`` (default 60; 0 sends every compute).

Readings (for attention's value probes), on the ``all`` observation: ``down_kib_per_s``,
``up_kib_per_s``, ``errors`` and, where the host lists its sockets, ``listening_ports``
(distinct TCP ports in LISTEN); a per-interface observation carries
``down_kib_per_s:<nic>`` and ``up_kib_per_s:<nic>``.

Listening ports: each compute compares the TCP sockets in LISTEN (address and port) with the
previous compute's and sends one observation per socket that appeared (``event:
"port_opened"``) or went (``event: "port_closed"``), with the process that holds it (pid, name,
user; none where the host does not say, e.g. another user's process without privileges). A
socket is reported opened once it has listened ``port_min_life_s`` (default 30; the
observation's time is when it was first seen), and closed only if its opening was: the ports
of test servers that come and go are not news. The first compute records the sockets it
finds without reporting them; state keeps at most ``_PORTS_MAX`` sockets and a compute
reports at most ``_PORT_EVENTS_MAX`` changes. On Linux the sockets come from the kernel's
socket diagnostics (:mod:`nerve.machine.sockets`), and the holder of a socket is looked for
only when its inode is new; elsewhere psutil lists every connection at each compute.
"""

from __future__ import annotations

import re
import time
from typing import Any

import psutil

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust
from nerve.machine import sockets as machine_sockets
from nerve.machine.deadband import Band, Deadband, keyframe_ns

initial_state: dict[str, Any] = {
    "boot": None,
    "t_ns": None,
    "total": None,
    "nics": {},
    "note": None,
    "ports": None,
}
state_records = "checkpoints"

_LOOPBACK = re.compile(r"lo\d*|Loopback Pseudo-Interface \d+")  # Linux, macOS, Windows
_FIELDS = ("bytes_sent", "bytes_recv", "packets_sent", "packets_recv", "errin", "errout")
_KIB = 1024
_PORTS_MAX = 1000
_PORT_EVENTS_MAX = 50


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    per_nic, wanted = _options(ctx)
    min_life = _min_life(ctx)
    listening = _listening(state.get("ports"))
    current = _read(per_nic, wanted)
    if isinstance(current, str):
        port_obs, ports = _port_changes(state.get("ports"), listening, min_life)
        failed = {**initial_state, "note": current, "ports": ports}
        return Result(state=failed, observations=port_obs)
    same_boot = _same_boot(state.get("boot"), current["boot"])
    # after a reboot every socket is new: the first compute is a baseline for ports too
    previous = state.get("ports") if same_boot else None
    port_obs, current["ports"] = _port_changes(previous, listening, min_life)
    if not same_boot or not isinstance(state.get("total"), dict):
        baseline = {**current, "note": "baseline: no previous counters"}
        return Result(state=baseline, observations=port_obs)
    if not _news(ctx, current, listening):  # the counters of the last report stay the base
        return Result(state={**state, "ports": current["ports"]}, observations=port_obs)
    observations = _observe(state, current, listening)
    kept = [o for o in observations if o is not None]
    note = None if len(kept) == len(observations) else "a counter went backwards: rebaselined"
    return Result(state={**current, "note": note}, observations=kept + port_obs)


_BANDS = {
    "down_kib_per_s": Band(16, 0.25),
    "up_kib_per_s": Band(16, 0.25),
    "errors": Band(1),
    "listening_ports": Band(1),
}
_sent = Deadband()
_previous: dict[str, Any] = {}  # this worker's previous counters: the rate news is judged by


def _news(ctx: SenseContext, current: dict[str, Any], listening: Any) -> bool:
    """Whether the rates since the previous compute are news (see nerve.machine.deadband); an
    observation then covers the whole time since the last one, so no byte goes unreported."""
    before = dict(_previous)
    _previous.clear()
    _previous.update(current)
    every = keyframe_ns(ctx.options, ctx.name)
    rates = None
    if isinstance(before.get("total"), dict):
        rates = _rates(before["total"], current["total"], current["t_ns"] - before["t_ns"])
    if rates is None:
        _sent.forget(ctx.name)
        return True
    ports = None if listening is None else len({s["port"] for s in listening.values()})
    return _sent.news(ctx.name, _readings("all", rates, ports), _BANDS, every)


def _read(per_nic: bool, wanted: list[str] | None) -> dict[str, Any] | str:
    """The state to keep (counters, time, boot), or a string saying why there is none."""
    try:
        total = _outside()
        nics = _nic_counters(wanted) if per_nic else {}
    except (OSError, RuntimeError, NotImplementedError) as exc:
        return f"counters unavailable: {exc}"
    if total is None:
        return "counters unavailable: no network interfaces"
    boot = round(float(psutil.boot_time()))
    return {"boot": boot, "t_ns": time.monotonic_ns(), "total": total, "nics": nics, "note": None}


def _observe(
    state: dict[str, Any], current: dict[str, Any], listening: dict[str, dict[str, Any]] | None
) -> list[Observation | None]:
    dt_ns = current["t_ns"] - int(state.get("t_ns") or 0)
    ports = None if listening is None else len({s["port"] for s in listening.values()})
    observations = [_observation("all", _rates(state["total"], current["total"], dt_ns), ports)]
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


def _outside() -> dict[str, int] | None:
    """The counters of every interface but loopback, summed (None: the host lists none):
    loopback is the machine talking to itself, each byte counted sent and received, which
    would read as network traffic, the same down and up."""
    every = psutil.net_io_counters(pernic=True)
    if not every:
        return None
    stats = psutil.net_if_stats()
    out = [c for name, c in every.items() if not _loopback(name, stats.get(name))]
    return {name: sum(int(getattr(c, name)) for c in out) for name in _FIELDS}


def _loopback(name: str, stats: Any) -> bool:
    """Whether an interface is loopback: its flags say so (Linux, macOS), else its name."""
    flags = getattr(stats, "flags", "") or ""
    return "loopback" in flags.split(",") or _LOOPBACK.fullmatch(name) is not None


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


def _listening(previous: Any = None) -> dict[str, dict[str, Any]] | None:
    """The TCP sockets in LISTEN, by ``address:port``, with their holder's pid (None where
    the host does not say); None where the host hides its sockets. (UDP is left out: every
    DNS lookup binds a short-lived port, which would be noise.)

    On Linux the kernel lists them (netlink), and a holder is looked for only for a socket
    not in ``previous`` under the same inode; elsewhere psutil reads every connection."""
    fast = machine_sockets.listening()
    if fast is None:
        return _listening_psutil()
    known = previous if isinstance(previous, dict) else {}
    found: dict[str, dict[str, Any]] = {}
    unknown: set[int] = set()
    for s in fast:
        key = f"[{s.address}]:{s.port}" if ":" in s.address else f"{s.address}:{s.port}"
        old = known.get(key)
        seen = isinstance(old, dict) and old.get("inode") == s.inode
        if not seen:
            unknown.add(s.inode)
        pid = old.get("pid") if seen and isinstance(old, dict) else None
        if key not in found or found[key]["pid"] is None:
            found[key] = {"address": s.address, "port": s.port, "pid": pid, "inode": s.inode}
    held = machine_sockets.holders(unknown)
    for sock in found.values():
        if sock["inode"] in unknown:
            sock["pid"] = held.get(sock["inode"])
    return found


def _listening_psutil() -> dict[str, dict[str, Any]] | None:
    try:
        conns = psutil.net_connections(kind="tcp")
    except (OSError, psutil.Error, NotImplementedError):
        return None
    found: dict[str, dict[str, Any]] = {}
    for c in conns:
        if c.laddr and c.status == psutil.CONN_LISTEN:
            ip, port = str(c.laddr.ip), int(c.laddr.port)
            key = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
            if key not in found or found[key]["pid"] is None:
                found[key] = {"address": ip, "port": port, "pid": c.pid}
    return found


def _min_life(ctx: SenseContext) -> float:
    value = ctx.options.get("port_min_life_s", 30)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(
            f"senses.{ctx.name}.options.port_min_life_s must be a number, 0 or more, got {value!r}"
        )
    return float(value)


def _port_changes(
    previous: Any, listening: dict[str, dict[str, Any]] | None, min_life: float
) -> tuple[list[Observation], dict[str, dict[str, Any]] | None]:
    """Observations of sockets opened and closed since ``previous``, and the state to keep.

    A new socket is reported once it has listened ``min_life`` seconds (a test server's
    port that comes and goes is not news) and its closing only if its opening was.
    """
    if listening is None:
        return [], previous if isinstance(previous, dict) else None
    now = time.time()
    if not isinstance(previous, dict):  # a baseline: these were listening already
        found = {k: {**_holder(v), "since": now, "told": True} for k, v in listening.items()}
        return [], _bounded_ports(found)
    kept: dict[str, dict[str, Any]] = {}
    events: list[Observation] = []
    for key, sock in sorted(listening.items()):
        old = previous.get(key)
        pids = (old.get("pid") if isinstance(old, dict) else None, sock["pid"])
        if not isinstance(old, dict) or (None not in pids and pids[0] != pids[1]):
            if isinstance(old, dict) and old.get("told"):  # another process holds it now
                events.append(_port_observation("port_closed", old))
            old = {**_holder(sock), "since": now, "told": False}
        elif pids[0] is None and pids[1] is not None:  # learn its holder
            old = {**_holder(sock), "since": old.get("since", now), "told": old.get("told")}
        since = float(old.get("since") or now)
        if not old.get("told") and now - since >= min_life:
            old = {**old, "told": True}
            events.append(_port_observation("port_opened", old, int(since * 1e9)))
        kept[key] = {**old, "inode": sock["inode"]} if "inode" in sock else old
    closed = [
        _port_observation("port_closed", old)
        for key, old in sorted(previous.items())
        if key not in listening and isinstance(old, dict) and old.get("told")
    ]
    return (closed + events)[:_PORT_EVENTS_MAX], _bounded_ports(kept)


def _bounded_ports(ports: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return dict(sorted(ports.items())[:_PORTS_MAX])


def _holder(sock: dict[str, Any]) -> dict[str, Any]:
    """The socket with its process's name and user (empty when unknown or gone)."""
    name = user = ""
    if sock["pid"] is not None:
        try:
            proc = psutil.Process(sock["pid"])
            name, user = proc.name(), proc.username()
        except (psutil.Error, OSError, KeyError):
            pass
    return {**sock, "name": name, "user": user}


def _port_observation(
    event: str, sock: dict[str, Any], valid_time_ns: int | None = None
) -> Observation:
    ip = str(sock.get("address", "?"))
    where = f"[{ip}]:{sock.get('port')}" if ":" in ip else f"{ip}:{sock.get('port')}"
    who = f"{sock['name']} [{sock['pid']}]" if sock.get("name") else "an unknown process"
    verb = "opened by" if event == "port_opened" else "closed (was held by"
    line = f"port {where} {verb} {who}" + ("" if event == "port_opened" else ")")
    payload = {
        "event": event,
        "proto": "tcp",
        "address": ip,
        "port": sock.get("port"),
        "pid": sock.get("pid"),
        "name": sock.get("name") or "",
        "user": sock.get("user") or "",
    }
    return Observation(
        source=SourceClass.NETWORK,
        line=line,
        payload=payload,
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns() if valid_time_ns is None else valid_time_ns,
    )


def _readings(nic: str, rates: dict[str, Any], ports: int | None) -> dict[str, int]:
    suffix = "" if nic == "all" else f":{nic}"
    readings = {
        f"down_kib_per_s{suffix}"[:64]: round(rates["bytes_recv_per_s"] / _KIB),
        f"up_kib_per_s{suffix}"[:64]: round(rates["bytes_sent_per_s"] / _KIB),
    }
    if nic == "all":
        readings["errors"] = int(rates["errors"])
        if ports is not None:
            readings["listening_ports"] = ports
    return readings


def _observation(
    nic: str, rates: dict[str, Any] | None, ports: int | None = None
) -> Observation | None:
    if rates is None:
        return None
    rates = {**rates, "readings": _readings(nic, rates, ports)}
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
