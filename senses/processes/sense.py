"""Notable processes started and exited since the previous compute.

Source class ``process_tree``, trust ``FirstParty``. A process is identified by
``(pid, create_time)``, so a reused pid is a new process. The first compute (and the first
after a reboot) records a baseline and observes nothing. A process is notable when its name
matches ``notable`` (a trailing version is allowed: ``python`` matches ``python3.11``), or
its CPU or resident memory reaches ``cpu_percent`` / ``rss_mb``; a process that was notable
at any compute is reported when it exits, with the name and command line it had.

State: ``known`` (pid -> create time, at most ``max_tracked``; older processes past the cap
are folded into ``cutoff``, so they are never mistaken for new ones) and ``notable``
(pid -> name, create time, command line, at most ``max_notable``).

Options: ``notable`` (names, default below), ``cpu_percent`` (default 80), ``rss_mb``
(default 2048), ``max_per_compute`` (default 50), ``max_tracked`` (10000), ``max_notable``
(500).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import psutil

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust

DEFAULT_NOTABLE = [
    "python", "node", "cargo", "rustc", "make", "cmake", "gcc", "g++", "clang", "go",
    "docker", "podman", "git", "ssh", "scp", "rsync", "pytest", "npm", "java", "psql",
]  # fmt: skip

initial_state: dict[str, Any] = {
    "boot": None,
    "cutoff": 0.0,
    "known": None,
    "notable": {},
    "note": None,
}

_CMDLINE_MAX = 200
_MIB = 1024**2


class _Proc(NamedTuple):
    pid: int
    name: str
    create_time: float
    cpu_percent: float
    rss_bytes: int


class _Options(NamedTuple):
    names: re.Pattern[str]
    cpu_percent: float
    rss_bytes: int
    max_per_compute: int
    max_tracked: int
    max_notable: int


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    opts = _options(ctx)
    procs = {str(p.pid): p for p in _snapshot()}
    boot = round(float(psutil.boot_time()))
    known = state.get("known")
    if not isinstance(known, dict) or not _same_boot(state.get("boot"), boot):
        notable = {pid: _record(p) for pid, p in procs.items() if _why(p, opts)}
        base = {"boot": boot, "note": "baseline: first compute since start or reboot"}
        return Result(state=_bounded(base, procs, notable, opts))
    started, exited = _diff(known, float(state.get("cutoff") or 0.0), procs)
    notable = dict(state.get("notable") or {})
    observations = [_exited(pid, notable.pop(pid)) for pid in exited if pid in notable]
    observations += list(_started(started, procs, notable, opts))
    _note_heavy(procs, notable, opts)
    new_state = _bounded({"boot": boot, "note": None}, procs, notable, opts)
    return Result(
        state=_capped(new_state, observations, opts),
        observations=observations[: opts.max_per_compute],
    )


def _options(ctx: SenseContext) -> _Options:
    names = ctx.options.get("notable", DEFAULT_NOTABLE)
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) and n for n in names):
        raise ValueError(
            f"senses.{ctx.name}.options.notable must be a list of names, got {names!r}"
        )
    alternatives = "|".join(re.escape(n.lower()) for n in names) or "(?!)"
    return _Options(
        names=re.compile(rf"(?:{alternatives})[\d.\-]*"),
        cpu_percent=_number(ctx, "cpu_percent", 80),
        rss_bytes=int(_number(ctx, "rss_mb", 2048) * _MIB),
        max_per_compute=int(_number(ctx, "max_per_compute", 50)),
        max_tracked=int(_number(ctx, "max_tracked", 10_000)),
        max_notable=int(_number(ctx, "max_notable", 500)),
    )


def _number(ctx: SenseContext, key: str, default: float) -> float:
    value = ctx.options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(
            f"senses.{ctx.name}.options.{key} must be a positive number, got {value!r}"
        )
    return float(value)


def _snapshot() -> Iterator[_Proc]:
    """Every process we may see; ones that vanish or refuse mid-read are skipped."""
    attrs = ["pid", "name", "create_time", "cpu_percent", "memory_info"]
    for proc in psutil.process_iter(attrs, ad_value=None):
        info = proc.info
        if info.get("create_time") is None:
            continue  # gone before we could read it, or not ours to read
        mem = info.get("memory_info")
        yield _Proc(
            pid=int(info["pid"]),
            name=str(info.get("name") or ""),
            create_time=float(info["create_time"]),
            cpu_percent=float(info.get("cpu_percent") or 0.0),
            rss_bytes=int(mem.rss) if mem is not None else 0,
        )


def _diff(
    known: dict[str, Any], cutoff: float, procs: dict[str, _Proc]
) -> tuple[list[str], list[str]]:
    """Pids started (new, or a reused pid) and exited since the previous compute."""
    started = [
        pid for pid, p in procs.items()
        if known.get(pid) != p.create_time and (pid in known or p.create_time > cutoff)
    ]  # fmt: skip
    exited = [pid for pid, t in known.items() if pid not in procs or procs[pid].create_time != t]
    return started, exited


def _why(proc: _Proc, opts: _Options) -> str | None:
    """Why a process is notable (``name``, ``cpu``, ``rss``), or None."""
    if opts.names.fullmatch(proc.name.lower()):
        return "name"
    if proc.cpu_percent >= opts.cpu_percent:
        return "cpu"
    if proc.rss_bytes >= opts.rss_bytes:
        return "rss"
    return None


def _cmdline(pid: int) -> str:
    try:
        args = psutil.Process(pid).cmdline()
    except (psutil.Error, OSError):
        return ""
    return " ".join(args)[:_CMDLINE_MAX]


def _record(proc: _Proc) -> dict[str, Any]:
    return {"name": proc.name, "create_time": proc.create_time, "cmdline": _cmdline(proc.pid)}


def _started(
    pids: list[str], procs: dict[str, _Proc], notable: dict[str, Any], opts: _Options
) -> Iterator[Observation]:
    for pid in sorted(pids, key=lambda p: procs[p].create_time):
        proc = procs[pid]
        why = _why(proc, opts)
        if why is None:
            continue
        notable[pid] = record = _record(proc)
        payload = {
            "pid": proc.pid,
            "name": proc.name,
            "event": "started",
            "cmdline": record["cmdline"],
            "why": why,
        }
        yield _observation(f"process started {proc.name} [{proc.pid}]", payload)


def _exited(pid: str, record: dict[str, Any]) -> Observation:
    payload = {
        "pid": int(pid),
        "name": record.get("name", ""),
        "event": "exited",
        "cmdline": record.get("cmdline", ""),
    }
    return _observation(f"process exited {payload['name']} [{pid}]", payload)


def _note_heavy(procs: dict[str, _Proc], notable: dict[str, Any], opts: _Options) -> None:
    """Processes that became notable since they started: remember them, to report their exit."""
    for pid, proc in procs.items():
        if pid not in notable and _why(proc, opts) is not None:
            notable[pid] = _record(proc)


def _bounded(
    base: dict[str, Any], procs: dict[str, _Proc], notable: dict[str, Any], opts: _Options
) -> dict[str, Any]:
    """State with ``known`` capped to the newest ``max_tracked`` and ``notable`` capped too."""
    newest = sorted(procs.values(), key=lambda p: p.create_time, reverse=True)
    kept, folded = newest[: opts.max_tracked], newest[opts.max_tracked :]
    cutoff = max((p.create_time for p in folded), default=0.0)
    live_notable = {pid: r for pid, r in notable.items() if pid in procs}
    recent = sorted(live_notable.items(), key=lambda kv: kv[1]["create_time"], reverse=True)
    return {
        **base,
        "cutoff": cutoff,
        "known": {str(p.pid): p.create_time for p in kept},
        "notable": dict(recent[: opts.max_notable]),
    }


def _capped(
    state: dict[str, Any], observations: list[Observation], opts: _Options
) -> dict[str, Any]:
    extra = len(observations) - opts.max_per_compute
    if extra <= 0:
        return state
    return {**state, "note": f"{extra} process events over max_per_compute were not observed"}


def _observation(line: str, payload: dict[str, Any]) -> Observation:
    return Observation(
        source=SourceClass.PROCESS_TREE,
        line=line,
        payload=payload,
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns(),
    )


def _same_boot(previous: Any, boot: int) -> bool:
    """Whether ``previous`` names this boot (boot time can jitter by a second on some hosts)."""
    return isinstance(previous, int) and abs(previous - boot) <= 2
