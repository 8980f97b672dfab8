"""What the processes cost, and notable processes started and exited since the previous compute.

Source class ``process_tree``, trust ``FirstParty``. Each compute reports the **top**
processes: the ``top_n`` using the most CPU over the interval (those at ``min_cpu_percent`` or
more), the ``top_memory_n`` with the largest resident memory, and any at or over
``cpu_percent`` / ``rss_mb``, as one observation (``event: "top"``; see senses/README.md for
its payload). A top is sent only when its CPU list changed (another process, a share moved by
a tenth of a core, or the machine gone quiet: one top with an empty list) or its memory list
did (another process, or one moved by a tenth) or ``top_every_s`` passed, and no sooner than
``top_min_s`` after the previous top unless a process newly reaches ``cpu_percent``; each
sample stands until the next. The memory list is filled only when it changed or is due, and
a process's user and command line only the first time it is on a top within ``top_every_s``;
a quiet machine sends no top at all, so an idle day costs little disk. A process is
identified by ``(pid, create_time)``, so a reused pid is a new process. The first compute
(and the first after a reboot) records a baseline and observes nothing. A process is notable
when its name matches ``notable`` (a trailing version is allowed: ``python`` matches
``python3.11``), or its CPU or resident memory reaches ``cpu_percent`` / ``rss_mb``; a process
that was notable at any compute is reported when it exits, with the name and command line it
had.

**When a start is reported.** A notable process is reported as started at the first compute
after it has lived through one whole compute interval: first seen by one compute, it is
reported by the next if it still runs (the observation's time is still its start), so a
start arrives one to two intervals after it happened. One that exits before is only
counted, by name; the counts go out as one ``event: "brief"`` observation at most every
``brief_every_s`` (the first after a quiet spell at once), or as soon as one name has gone
three times (a crash loop; then at most twice per ``brief_every_s``), with the reading
``brief_exits``. A busy machine's builds and test runs would otherwise fill the log with a
start and an exit for every compiler and test worker. ``min_life_s``, when set, replaces the
one interval by a time (0: every notable process at its first compute).

A process's CPU share is over the interval since the previous scan, or over its own life
when it started since then, so a new busy process (``yes``, a busy loop) is notable by CPU at
the first compute that sees it. A process that becomes notable later (it began idle and now
reaches ``cpu_percent``, or grows past ``rss_mb``) is reported as started then, with ``why``
saying which; no process that lives an interval and reaches a threshold goes unreported.

State: ``known`` (pid -> create time, at most ``max_tracked``; older processes past the cap
are folded into ``cutoff``, so they are never mistaken for new ones) and ``notable``
(pid -> name, create time, command line, at most ``max_notable``).

Options: ``notable`` (names, default below), ``cpu_percent`` (default 80), ``rss_mb``
(default 2048), ``max_per_compute`` (default 50), ``max_tracked`` (10000), ``max_notable``
(500), ``top_n`` (5), ``top_memory_n`` (3), ``min_cpu_percent`` (5), ``top_every_s`` (300),
``top_min_s`` (15; 0 sends each change), ``min_life_s`` (unset: one compute interval; 0
reports every notable process at once), ``brief_every_s`` (60).

On Linux a scan reads one file per process (``/proc/<pid>/stat``, through
:mod:`nerve.machine.procs`) and a user only for the processes it shows; elsewhere psutil reads
them. CPU shares are over the time since the previous scan, from counters kept in the worker
between computes, so the first compute of a worker sees every process at 0 %: its top lists
memory only. (psutil's shares, elsewhere, start at 0 % for a new process too: there a new
busy process is notable by CPU from its second compute, and reported then.)
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import psutil

try:
    import pwd
except ImportError:  # not on Windows: user names are then uids
    pwd = None  # type: ignore[assignment]

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust
from nerve.machine import procs as machine_procs
from nerve.privacy.cut import shorten

DEFAULT_NOTABLE = [
    "python", "node", "cargo", "rustc", "make", "cmake", "gcc", "g++", "clang", "go",
    "docker", "podman", "git", "ssh", "scp", "rsync", "pytest", "npm", "java", "psql",
]  # fmt: skip

# The state (every process's pid and start time) changes at nearly every compute of a busy
# machine: kept in memory and stored at checkpoints. After a daemon that did not stop
# cleanly the sense begins with a baseline, so it reports nothing twice; the exits of
# processes it had noted before are then not reported.
state_records = "checkpoints"

initial_state: dict[str, Any] = {
    "boot": None,
    "cutoff": 0.0,
    "known": None,
    "notable": {},
    "note": None,
    "top": None,
    "pending": {},
    "brief": None,
}

_CMDLINE_MAX = 200
_BASELINE_RECENT_S = 30  # at a baseline, notable processes this young are reported as started
_BRIEF_NAMES = 50  # distinct names a brief counts; more are left out
_LOOP = 3  # short-lived exits of one name that send a brief before brief_every_s
_MIB = 1024**2


class _Proc(NamedTuple):
    pid: int
    name: str
    create_time: float
    cpu_percent: float
    rss_bytes: int
    user: str = ""


class _Options(NamedTuple):
    names: re.Pattern[str]
    cpu_percent: float
    rss_bytes: int
    max_per_compute: int
    max_tracked: int
    max_notable: int
    top_n: int
    top_memory_n: int
    min_cpu_percent: float
    top_every_ns: int
    top_min_ns: int
    min_life_s: float | None  # None: one compute interval (seen at two computes in a row)
    brief_every_ns: int


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    opts = _options(ctx)
    procs = {str(p.pid): p for p in _snapshot()}
    boot = round(float(psutil.boot_time()))
    known = state.get("known")
    if not isinstance(known, dict) or not _same_boot(state.get("boot"), boot):
        # the young ones wait for min_life_s like any new process: a test run's workers
        # found by the baseline are counted when they go, not reported one by one
        now = time.time()
        heavy = {pid: p for pid, p in procs.items() if _why(p, opts)}
        recent = _BASELINE_RECENT_S if opts.min_life_s is None else opts.min_life_s
        young = {pid for pid, p in heavy.items() if now - p.create_time < recent}
        notable = {pid: _record(p) for pid, p in heavy.items() if pid not in young}
        pending = {pid: {**_record(heavy[pid]), "why": _why(heavy[pid], opts)} for pid in young}
        base = {"boot": boot, "note": "baseline: first compute since start or reboot"}
        return Result(state=_bounded(base, procs, notable, opts, pending))
    started, exited = _diff(known, float(state.get("cutoff") or 0.0), procs)
    notable = dict(state.get("notable") or {})
    pending = dict(state.get("pending") or {})
    brief = _Brief.of(state.get("brief"))
    observations = [_exited(pid, notable.pop(pid)) for pid in exited if pid in notable]
    for pid in exited:
        if pid in pending:  # gone before it had run min_life_s: only counted
            brief.count(str(pending.pop(pid).get("name", "")))
    now = time.time()
    observations += list(_matured(procs, notable, pending, opts, now))
    observations += list(_started(started, procs, notable, pending, opts, now))
    observations += list(_became_notable(procs, notable, pending, opts, now))
    brief_obs = brief.flush(time.time_ns(), opts)
    top_obs, top_state = _top(procs, state.get("top"), opts)
    base = {"boot": boot, "note": None, "top": top_state, "brief": brief.state()}
    new_state = _bounded(base, procs, notable, opts, pending)
    kept = observations[: opts.max_per_compute]
    extra = [o for o in (brief_obs, top_obs) if o is not None]
    return Result(state=_capped(new_state, observations, opts), observations=kept + extra)


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
        top_n=int(_number(ctx, "top_n", 5)),
        top_memory_n=int(_number(ctx, "top_memory_n", 3)),
        min_cpu_percent=_number(ctx, "min_cpu_percent", 5),
        top_every_ns=int(_number(ctx, "top_every_s", 300) * 1e9),
        top_min_ns=int(_number(ctx, "top_min_s", 15, zero=True) * 1e9),
        min_life_s=_min_life(ctx),
        brief_every_ns=int(_number(ctx, "brief_every_s", 60) * 1e9),
    )


def _min_life(ctx: SenseContext) -> float | None:
    """``min_life_s`` when set; else None: a process must have lived through one whole
    compute interval, i.e. been seen by two computes in a row."""
    if "min_life_s" not in ctx.options:
        return None
    return _number(ctx, "min_life_s", 0, zero=True)


def _number(ctx: SenseContext, key: str, default: float, zero: bool = False) -> float:
    value = ctx.options.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value < 0
        or (value == 0 and not zero)
    ):
        what = "a number, 0 or more" if zero else "a positive number"
        raise ValueError(f"senses.{ctx.name}.options.{key} must be {what}, got {value!r}")
    return float(value)


def _snapshot() -> Iterator[_Proc]:
    """Every process we may see; ones that vanish or refuse mid-read are skipped."""
    fast = machine_procs.scan()
    if fast is None:
        yield from _psutil_snapshot()
        return
    yield from _shares(fast, time.monotonic())


# CPU seconds of each process at the previous scan, and when it was: a share is over the
# interval between two scans, as psutil's cpu_percent(interval=None) is (0 at first sight)
_seen: dict[int, tuple[float, float]] = {}
_seen_at: list[float] = []
_TICK_S = 0.01  # /proc's clock tick: the least life a share is taken over


def _shares(
    stats: list[machine_procs.ProcStat], now: float, wall_now: float | None = None
) -> Iterator[_Proc]:
    """The processes of one /proc scan, with CPU shares since the previous scan; a process
    started since then has its share over its own life (a new hog shows at once)."""
    wall = now - _seen_at[0] if _seen_at else 0.0
    clock = time.time() if wall_now is None else wall_now
    before = dict(_seen)
    _seen.clear()
    _seen_at[:] = [now]
    for s in stats:
        _seen[s.pid] = (s.create_time, s.cpu_s)
        prior = before.get(s.pid)
        percent = 0.0
        if prior is not None and prior[0] == s.create_time and wall > 0:
            percent = round((s.cpu_s - prior[1]) / wall * 100, 1)
        elif wall > 0 and 0 < clock - s.create_time <= wall:  # born since the previous scan
            percent = round(s.cpu_s / max(clock - s.create_time, _TICK_S) * 100, 1)
        yield _Proc(s.pid, s.name, s.create_time, max(percent, 0.0), s.rss_bytes)


def _psutil_snapshot() -> Iterator[_Proc]:
    """The portable scan (psutil), where there is no Linux /proc."""
    attrs = ["pid", "name", "create_time", "cpu_percent", "memory_info", "uids"]
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
            user=_user(info.get("uids")),
        )


def _user_of(proc: _Proc) -> str:
    """The process's user: read now for a /proc scan, which leaves it out (few are shown)."""
    if proc.user:
        return proc.user
    uid = machine_procs.real_uid(proc.pid)
    return "" if uid is None else _user_name(uid)


def _user(uids: Any) -> str:
    """The real user's name (its uid as text when it has none); a lookup per distinct uid."""
    if uids is None:
        return ""
    return _user_name(int(uids.real))


@functools.lru_cache(maxsize=256)
def _user_name(uid: int) -> str:
    if pwd is None:
        return str(uid)
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OSError):
        return str(uid)


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
    return shorten(" ".join(args), _CMDLINE_MAX)


def _record(proc: _Proc) -> dict[str, Any]:
    return {
        "name": proc.name,
        "create_time": proc.create_time,
        "cmdline": _cmdline(proc.pid),
        "user": _user_of(proc),
    }


def _started(
    pids: list[str],
    procs: dict[str, _Proc],
    notable: dict[str, Any],
    pending: dict[str, Any],
    opts: _Options,
    now: float,
) -> Iterator[Observation]:
    """Notable new processes: reported when they have run ``min_life_s``, else pending (by
    default always: they are reported by the next compute if they still run)."""
    for pid in sorted(pids, key=lambda p: procs[p].create_time):
        proc = procs[pid]
        why = _why(proc, opts)
        if why is None:
            continue
        record = {**_record(proc), "why": why}
        if _young(proc, opts, now):
            pending[pid] = record
            continue
        notable[pid] = {k: v for k, v in record.items() if k != "why"}
        yield _started_observation(proc, record, why)


def _matured(
    procs: dict[str, _Proc],
    notable: dict[str, Any],
    pending: dict[str, Any],
    opts: _Options,
    now: float,
) -> Iterator[Observation]:
    """Pending processes that have now run ``min_life_s`` (by default: that still run one
    compute after they were first seen): reported as started."""
    for pid in sorted(pending, key=lambda p: float(pending[p].get("create_time") or 0)):
        proc = procs.get(pid)
        if proc is None or (opts.min_life_s is not None and _young(proc, opts, now)):
            continue
        record = pending.pop(pid)
        notable[pid] = {k: v for k, v in record.items() if k != "why"}
        yield _started_observation(proc, record, str(record.get("why") or "name"))


def _started_observation(proc: _Proc, record: dict[str, Any], why: str) -> Observation:
    payload = {
        "pid": proc.pid,
        "name": proc.name,
        "event": "started",
        "cmdline": record["cmdline"],
        "why": why,
        "user": _user_of(proc),
        "start_time": int(proc.create_time),
        "rss_bytes": proc.rss_bytes,
    }
    line = f"process started {proc.name} [{proc.pid}]"
    return _observation(line, payload, valid_time_ns=int(proc.create_time * 1e9))


class _Brief:
    """Counts, by name, of notable processes that exited before ``min_life_s``."""

    def __init__(self, at: int, counts: dict[str, int]) -> None:
        self.at, self.counts = at, counts

    @classmethod
    def of(cls, raw: Any) -> _Brief:
        if not isinstance(raw, dict) or not isinstance(raw.get("counts"), dict):
            return cls(0, {})
        counts = {str(k): int(v) for k, v in raw["counts"].items() if isinstance(v, int)}
        return cls(int(raw.get("at") or 0), counts)

    def count(self, name: str) -> None:
        if name in self.counts or len(self.counts) < _BRIEF_NAMES:
            self.counts[name] = self.counts.get(name, 0) + 1

    def flush(self, now_ns: int, opts: _Options) -> Observation | None:
        """The ``brief`` observation when counts wait and ``brief_every_s`` has passed, or
        sooner when one name went ``_LOOP`` times (a crash loop shows at its own pace)."""
        # a loop goes out at once, then no more than twice per brief_every_s: a machine
        # running test suites has a "loop" at every compute
        looping = max(self.counts.values(), default=0) >= _LOOP
        looping = looping and now_ns - self.at >= opts.brief_every_ns // 2
        if not self.counts or (now_ns - self.at < opts.brief_every_ns and not looping):
            return None
        counts = dict(sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))
        total = sum(counts.values())
        names = ", ".join(f"{name} ×{n}" for name, n in counts.items())
        payload = {
            "event": "brief",
            "counts": counts,
            "since_ns": self.at,
            "readings": {"brief_exits": total},
        }
        self.at, self.counts = now_ns, {}
        return _observation(shorten(f"short-lived processes: {names}", 200), payload)

    def state(self) -> dict[str, Any]:
        return {"at": self.at, "counts": dict(sorted(self.counts.items()))}


def _exited(pid: str, record: dict[str, Any]) -> Observation:
    payload = {
        "pid": int(pid),
        "name": record.get("name", ""),
        "event": "exited",
        "cmdline": record.get("cmdline", ""),
        "user": record.get("user", ""),
        "start_time": int(record.get("create_time") or 0),
    }
    return _observation(f"process exited {payload['name']} [{pid}]", payload)


def _young(proc: _Proc, opts: _Options, now: float) -> bool:
    """Whether a notable process waits before it is reported: always at first sight by
    default (one compute interval), else while it has run less than ``min_life_s``."""
    return opts.min_life_s is None or now - proc.create_time < opts.min_life_s


def _became_notable(
    procs: dict[str, _Proc],
    notable: dict[str, Any],
    pending: dict[str, Any],
    opts: _Options,
    now: float,
) -> Iterator[Observation]:
    """Processes seen before that are notable only now (one that began idle, or at 0 % when
    first seen, and now uses the CPU): reported as started now, since they have run at least
    one interval (or pending until ``min_life_s``); their exit is reported too."""
    for pid, proc in procs.items():
        if pid in notable or pid in pending:
            continue
        why = _why(proc, opts)
        if why is None:
            continue
        if why == "name" or len(notable) >= opts.max_notable:
            # one the caps let go (max_notable, max_tracked) is remembered for its exit, not
            # reported again: a name does not change, so it was reported when it started
            notable[pid] = _record(proc)
            continue
        record = {**_record(proc), "why": why}
        if opts.min_life_s is not None and _young(proc, opts, now):
            pending[pid] = record
            continue
        notable[pid] = {k: v for k, v in record.items() if k != "why"}
        yield _started_observation(proc, record, why)


# -- the top ----------------------------------------------------------------------------------

_TOP_CMDLINE_MAX = 120
_DESCRIBED_MAX = 200  # processes whose command line a top need not repeat
_last_top_ns = 0  # when this worker last read the counters: the interval the CPU shares cover


def _top(
    procs: dict[str, _Proc], previous: Any, opts: _Options
) -> tuple[Observation | None, dict[str, Any] | None]:
    """The ``top`` observation (None when a quiet machine has nothing new) and its state."""
    global _last_top_ns
    now = time.time_ns()
    interval_ms = (now - _last_top_ns) // 1_000_000 if _last_top_ns else 0
    _last_top_ns = now
    cpu, memory, over = _ranked(list(procs.values()), opts)
    previous = previous if isinstance(previous, dict) else {}
    mem_now = {str(p.pid): p.rss_bytes for p in memory}
    due = now - int(previous.get("at") or 0) >= opts.top_every_ns
    moved = due or _memory_moved(previous.get("memory"), mem_now)
    # the CPU top too is sent when it changed (another process, a share moved by a tenth of
    # a core, the machine gone quiet) or top_every_s passed: a sample stands until the next
    cpu_now = {str(p.pid): round(p.cpu_percent * 10) for p in cpu + over}
    cpu_due = now - int(previous.get("cpu_at") or 0) >= opts.top_every_ns
    changed = _cpu_changed(previous.get("cpu"), cpu_now) or (cpu_due and bool(cpu_now))
    if not (changed or moved) or _too_soon(previous, cpu_now, opts, now):
        return None, previous or None
    previous = {**previous, "cpu": cpu_now, "cpu_at": now} if changed else previous
    # a process's command line and user go out once per top_every_s, not in every sample
    described = {} if due else dict(previous.get("described") or {})
    # the memory top rides along only when it moved (or is due): a busy CPU repeats less
    payload = _top_payload(cpu, memory if moved else [], over, interval_ms, described)
    obs = _observation(_top_line(cpu, memory), payload)
    described = dict(sorted(described.items(), key=lambda kv: kv[1])[-_DESCRIBED_MAX:])
    if not moved:
        return obs, {**previous, "described": described, "sent_at": now}
    return obs, {**previous, "at": now, "memory": mem_now, "described": described, "sent_at": now}


def _too_soon(previous: dict[str, Any], cpu_now: dict[str, int], opts: _Options, now: int) -> bool:
    """A change waits until ``top_min_s`` after the last top (a busy machine's list changes
    at every compute), unless a process newly reaches ``cpu_percent``: a hog shows at once.
    The last top stands meanwhile; what still differs then is sent."""
    sent = int(previous.get("sent_at") or previous.get("cpu_at") or 0)
    if now - sent >= opts.top_min_ns:
        return False
    before = previous.get("cpu") if isinstance(previous.get("cpu"), dict) else {}
    hot = round(opts.cpu_percent * 10)
    return not any(v >= hot and int(before.get(pid) or 0) < hot for pid, v in cpu_now.items())


def _ranked(procs: list[_Proc], opts: _Options) -> tuple[list[_Proc], list[_Proc], list[_Proc]]:
    """Top by CPU (at ``min_cpu_percent`` or more), top by RSS, and the rest over a threshold."""
    by_cpu = sorted(procs, key=lambda p: (-p.cpu_percent, p.pid))
    cpu = [p for p in by_cpu[: opts.top_n] if p.cpu_percent >= opts.min_cpu_percent]
    memory = sorted(procs, key=lambda p: (-p.rss_bytes, p.pid))[: opts.top_memory_n]
    listed = {p.pid for p in cpu + memory}
    over = [
        p for p in by_cpu
        if p.pid not in listed
        and (p.cpu_percent >= opts.cpu_percent or p.rss_bytes >= opts.rss_bytes)
    ][: opts.max_per_compute]  # fmt: skip
    return cpu, memory, over


def _cpu_changed(before: Any, now: dict[str, int]) -> bool:
    """Whether the CPU top has other processes, or a share moved by 100 permille or more."""
    if not isinstance(before, dict) or set(before) != set(now):
        return True
    return any(abs(now[pid] - int(before[pid] or 0)) >= 100 for pid in now)


def _memory_moved(before: Any, now: dict[str, int]) -> bool:
    """Whether the memory top has other processes, or one moved by a tenth or more."""
    if not isinstance(before, dict) or set(before) != set(now):
        return True
    return any(abs(now[pid] - int(before[pid] or 0)) * 10 >= max(now[pid], 1) for pid in now)


def _entry(proc: _Proc, described: dict[str, int]) -> dict[str, Any]:
    """A process of the top; ``user`` and ``cmdline`` only if ``described`` lacks it."""
    entry: dict[str, Any] = {"pid": proc.pid, "name": proc.name}
    if described.get(str(proc.pid)) != int(proc.create_time):
        described[str(proc.pid)] = int(proc.create_time)
        entry["user"] = _user_of(proc)
        entry["cmdline"] = shorten(_cmdline(proc.pid), _TOP_CMDLINE_MAX)
    return {
        **entry,
        "cpu_permille": round(proc.cpu_percent * 10),
        "rss_bytes": proc.rss_bytes,
        "start_time": int(proc.create_time),
    }


def _top_payload(
    cpu: list[_Proc],
    memory: list[_Proc],
    over: list[_Proc],
    interval_ms: int,
    described: dict[str, int],
) -> dict[str, Any]:
    everyone = cpu + memory + over
    return {
        "event": "top",
        "interval_ms": interval_ms,
        "cpu": [_entry(p, described) for p in cpu],
        "memory": [_entry(p, described) for p in memory],
        "over": [_entry(p, described) for p in over],
        "readings": {
            "top_cpu_permille": round(max((p.cpu_percent for p in everyone), default=0) * 10),
            "top_rss_bytes": max((p.rss_bytes for p in everyone), default=0),
            "over_threshold": len(over),
        },
    }


def _top_line(cpu: list[_Proc], memory: list[_Proc]) -> str:
    busy = ", ".join(f"{p.name} {p.cpu_percent:.0f}% [{p.pid}]" for p in cpu[:3]) or "idle"
    big = ", ".join(f"{p.name} {p.rss_bytes // _MIB} MiB [{p.pid}]" for p in memory[:2])
    return shorten(f"top cpu: {busy}; memory: {big or 'none'}", 200)


def _bounded(
    base: dict[str, Any],
    procs: dict[str, _Proc],
    notable: dict[str, Any],
    opts: _Options,
    pending: dict[str, Any] | None = None,
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
        "pending": {pid: r for pid, r in (pending or {}).items() if pid in procs},
    }


def _capped(
    state: dict[str, Any], observations: list[Observation], opts: _Options
) -> dict[str, Any]:
    extra = len(observations) - opts.max_per_compute
    if extra <= 0:
        return state
    return {**state, "note": f"{extra} process events over max_per_compute were not observed"}


def _observation(
    line: str, payload: dict[str, Any], valid_time_ns: int | None = None
) -> Observation:
    return Observation(
        source=SourceClass.PROCESS_TREE,
        line=line,
        payload=payload,
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns() if valid_time_ns is None else valid_time_ns,
    )


def _same_boot(previous: Any, boot: int) -> bool:
    """Whether ``previous`` names this boot (boot time can jitter by a second on some hosts)."""
    return isinstance(previous, int) and abs(previous - boot) <= 2
