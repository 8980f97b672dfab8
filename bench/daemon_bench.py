"""nerve's daemon under load: many trivial senses on short intervals, measured from outside.

    .venv/bin/python bench/daemon_bench.py [--senses 200] [--groups 4] [--interval-ms 50]
                                           [--seconds 30] [--triggers 500] [--warm-up 2]
                                           [--quick] [--durability os] [--keep]

A temporary workspace holds one counter sense module and ``--senses`` senses that name it
through ``path:``, spread round-robin over ``--groups`` groups, each on ``--interval-ms``.
The bench starts the daemon with ``nerve daemon start``, waits until every sense has
computed once (plus ``--warm-up`` seconds), then measures one steady window of ``--seconds``:

* achieved vs requested interval computes per second: ``sense.state`` events with
  ``reason = 'interval'`` whose ``physical_ns`` (commit time) falls in the window, against
  ``senses x 1000 / interval_ms`` (goal: ratio >= 0.99);
* trigger lateness p50/p99 (``lateness_us`` in those events: compute start minus due time);
* CPU as % of one core over the window (psutil): the kernel process, its sense workers,
  this bench process, and the whole machine (of all its cores);
* group commits per second and events per commit (the kernel's status counters);
* ``trigger-sense`` round trips over the socket at the window's start: ``--triggers``
  sequential requests on one persistent connection, then a fifth as many on a fresh
  connection each (connect included).
  A trigger for a sense already queued is coalesced, so few become ``manual`` computes.

The daemon is stopped with ``nerve daemon stop`` (timed; whether ``daemon.stopped`` was
recorded; any of its processes still running are killed and counted), ``nerve replay
--verify --json`` checks the log, and the last stdout line is ``RESULT {json}``; progress
goes to stderr. ``--durability os`` sets ``log.durability`` (no fsync per commit). The
workspace and the daemon are cleaned up even when a step fails (``--keep`` keeps the
workspace for inspection). ``--quick`` picks small sizes for every flag not given. The exit
status is 1 when an internal check fails: interval computes recorded in the window,
``daemon.stopped`` recorded, no process left running, ``replay --verify`` ok.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import psutil

from nerve.query import connect
from nerve.runtime.sockaddr import unix_address
from nerve.workspace import WorkspaceDir

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, new_parser, say, workdir

GOAL_RATIO = 0.99
QUICK = {"senses": 20, "groups": 2, "interval_ms": 100, "seconds": 5.0, "triggers": 100,
         "warm_up": 0.5}  # fmt: skip
DEFAULTS = {"senses": 200, "groups": 4, "interval_ms": 50, "seconds": 30.0, "triggers": 500,
            "warm_up": 2.0}  # fmt: skip
READY_TIMEOUT_S = 60.0
SOCKET_TIMEOUT_S = 30.0
MODULE = "counter"
SENSE_PY = '''"""A trivial sense: counts its own computes."""

import nerve

initial_state = {"n": 0}


def compute(state):
    return nerve.Result(state={"n": state["n"] + 1})
'''


# -- the workspace and the daemon --------------------------------------------------------


def sense_names(senses: int) -> list[str]:
    return [f"s{i:03d}" for i in range(senses)]


def config_yaml(senses: int, groups: int, interval_ms: int, durability: str) -> str:
    lines = ["log:", f"  durability: {durability}", "senses:"]
    for i, name in enumerate(sense_names(senses)):
        lines += [
            f"  {name}:",
            f"    group: g{i % groups}",
            f"    interval: {interval_ms}ms",
            f"    path: senses/{MODULE}",
        ]
    return "\n".join(lines) + "\n"


def build_workspace(root: Path, cfg: Settings) -> Path:
    (root / "senses" / MODULE).mkdir(parents=True)
    (root / "data").mkdir()
    (root / "senses" / MODULE / "sense.py").write_text(SENSE_PY)
    yaml = config_yaml(cfg.senses, cfg.groups, cfg.interval_ms, cfg.durability)
    (root / "nerve.yaml").write_text(yaml)
    return root


def nerve_cli(ws: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``nerve --workspace ws ARGS``; with ``check``, a failure raises with its stderr."""
    cmd = [sys.executable, "-m", "nerve", "--workspace", str(ws), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ws)
    if check and done.returncode != 0:
        raise RuntimeError(f"`nerve {' '.join(args)}` exited {done.returncode}: {done.stderr}")
    return done


def daemon_pid(ws: Path) -> int:
    return int((ws / "data" / "nerve.pid").read_text().strip())


def _kill_alive(procs: Sequence[psutil.Process]) -> int:
    """Kill whichever of ``procs`` still run; return how many did."""
    killed = 0
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                proc.kill()
                killed += 1
    return killed


@dataclass
class Daemon:
    """The background daemon: its kernel and worker processes, and how its stop went."""

    ws: Path
    procs: list[psutil.Process] = field(default_factory=list)
    stop_s: float | None = None
    left_running: int = 0

    @property
    def kernel(self) -> psutil.Process:
        return self.procs[0]

    def start(self) -> None:
        nerve_cli(self.ws, "daemon", "start")
        kernel = psutil.Process(daemon_pid(self.ws))
        self.procs = [kernel, *kernel.children(recursive=True)]

    def stop(self) -> None:
        """``nerve daemon stop``, timed; then kill any of its processes still running."""
        started = time.monotonic()
        done = nerve_cli(self.ws, "daemon", "stop", check=False)
        self.stop_s = time.monotonic() - started
        if done.returncode != 0:
            say(f"daemon stop exited {done.returncode}: {done.stderr.strip()}")
        self.left_running = _kill_alive(self.procs)


@contextlib.contextmanager
def running_daemon(ws: Path) -> Iterator[Daemon]:
    """Start the daemon in the background; stop it on the way out, whatever happened."""
    daemon = Daemon(ws)
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.stop()


# -- the socket --------------------------------------------------------------------------


class Client:
    """One persistent connection to the daemon's socket: a JSON line out, one line back."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(SOCKET_TIMEOUT_S)
        with unix_address(path) as address:  # a long $TMPDIR passes sun_path's 107 bytes
            self.sock.connect(address)
        self._buffer = b""

    def ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while b"\n" not in self._buffer:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the daemon closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise RuntimeError(f"daemon refused {msg}: {reply.get('error')}")
        return reply

    def close(self) -> None:
        self.sock.close()


def ask_once(path: Path, msg: dict[str, Any]) -> dict[str, Any]:
    client = Client(path)
    try:
        return client.ask(msg)
    finally:
        client.close()


def wait_for_computes(path: Path, senses: int, timeout_s: float = READY_TIMEOUT_S) -> float:
    """Wait until every sense has computed at least once; return the seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        listed = ask_once(path, {"type": "list-senses"})["senses"]
        if sum(1 for s in listed if s.get("computes", 0) > 0) >= senses:
            return time.monotonic() - started
        time.sleep(0.1)
    raise TimeoutError(f"not every one of {senses} senses computed within {timeout_s:.0f} s")


def time_triggers(path: Path, names: Sequence[str], count: int, *, fresh: bool) -> list[float]:
    """Round-trip milliseconds of ``count`` sequential trigger-sense requests."""
    client = None if fresh else Client(path)
    out: list[float] = []
    try:
        for i in range(count):
            msg = {"type": "trigger-sense", "sense": names[i % len(names)]}
            started = time.perf_counter_ns()
            if client is None:
                ask_once(path, msg)
            else:
                client.ask(msg)
            out.append((time.perf_counter_ns() - started) / 1e6)
    finally:
        if client is not None:
            client.close()
    return out


# -- CPU ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuSample:
    wall_ns: int
    kernel_s: float
    workers_s: dict[int, float]
    bench_s: float
    machine_busy_s: float


def _busy(times: Any) -> float:
    return float(times.user + times.system)


def _machine_busy_s() -> float:
    t = psutil.cpu_times()
    return float(t.user + t.system + getattr(t, "nice", 0.0) + getattr(t, "irq", 0.0))


def sample_cpu(kernel: psutil.Process) -> CpuSample:
    workers: dict[int, float] = {}
    for child in kernel.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            workers[child.pid] = _busy(child.cpu_times())
    return CpuSample(
        wall_ns=time.time_ns(),
        kernel_s=_busy(kernel.cpu_times()),
        workers_s=workers,
        bench_s=_busy(psutil.Process().cpu_times()),
        machine_busy_s=_machine_busy_s(),
    )


def cpu_shares(a: CpuSample, b: CpuSample) -> dict[str, Any]:
    """CPU over the window as % of one core (the machine's as % of all cores)."""
    wall_s = (b.wall_ns - a.wall_ns) / 1e9
    kept = a.workers_s.keys() & b.workers_s.keys()
    workers = sum(b.workers_s[p] - a.workers_s[p] for p in kept)
    kernel, bench = b.kernel_s - a.kernel_s, b.bench_s - a.bench_s
    machine = b.machine_busy_s - a.machine_busy_s
    cores = psutil.cpu_count() or 1
    return {
        "cores": cores,
        "kernel_pct": round(100 * kernel / wall_s, 1),
        "workers_pct": round(100 * workers / wall_s, 1),
        "workers": len(kept),
        "workers_replaced": len(a.workers_s.keys() ^ b.workers_s.keys()),
        "bench_pct": round(100 * bench / wall_s, 1),
        "machine_pct": round(100 * machine / wall_s / cores, 1),
        "other_pct": round(100 * max(0.0, machine - kernel - workers - bench) / wall_s, 1),
        "load_avg_1m": round(psutil.getloadavg()[0], 2),
    }


# -- the window --------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    start_ns: int
    end_ns: int
    cpu: dict[str, Any]
    commits: dict[str, Any]
    persistent_ms: list[float]
    fresh_ms: list[float]


def commit_rates(a: dict[str, Any], b: dict[str, Any], wall_s: float) -> dict[str, Any]:
    """Group commits over the window, from the kernel's status counters."""
    commits, events = b["commits"] - a["commits"], b["events"] - a["events"]
    return {
        "commits_per_s": round(commits / wall_s, 1),
        "events_per_commit": round(events / commits, 2) if commits else None,
        "restarts": sum(g["restarts"] for g in b["groups"].values()),
    }


def measure_window(path: Path, kernel: psutil.Process, names: list[str], cfg: Settings) -> Window:
    """Round trips at the window's start, then idle until its end; CPU over the whole."""
    seconds = cfg.seconds
    status = ask_once(path, {"type": "status"})["status"]
    before = sample_cpu(kernel)
    persistent = time_triggers(path, names, cfg.triggers, fresh=False)
    fresh = time_triggers(path, names, max(1, cfg.triggers // 5), fresh=True)
    remaining = before.wall_ns / 1e9 + seconds - time.time()
    if remaining < 0:
        say(f"round trips overran the window by {-remaining:.1f} s")
    time.sleep(max(0.0, remaining))
    after = sample_cpu(kernel)
    wall_s = (after.wall_ns - before.wall_ns) / 1e9
    commits = commit_rates(status, ask_once(path, {"type": "status"})["status"], wall_s)
    cpu = cpu_shares(before, after)
    return Window(before.wall_ns, after.wall_ns, cpu, commits, persistent, fresh)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0..1) by linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_summary(values: Sequence[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50_ms": _round(percentile(values, 0.50), 3),
        "p99_ms": _round(percentile(values, 0.99), 3),
        "max_ms": _round(max(values) if values else None, 3),
    }


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


COMPUTE_SQL = """
SELECT
    data->>'reason' AS reason,
    count(*) AS n,
    quantile_cont(CAST(data->>'lateness_us' AS BIGINT), 0.50) AS late_p50,
    quantile_cont(CAST(data->>'lateness_us' AS BIGINT), 0.99) AS late_p99,
    max(CAST(data->>'lateness_us' AS BIGINT)) AS late_max,
    quantile_cont(CAST(data->>'duration_ms' AS DOUBLE), 0.50) AS dur_p50
FROM events
WHERE kind = 'sense.state' AND physical_ns >= $start AND physical_ns < $end
GROUP BY ALL ORDER BY n DESC
"""

COUNT_SQL = """
SELECT kind, count(*) FROM events
WHERE physical_ns >= $start AND physical_ns < $end GROUP BY ALL
"""

STOPPED_SQL = "SELECT count(*) FROM events WHERE kind = 'daemon.stopped'"


def window_events(ws: Path, window: Window) -> dict[str, Any]:
    """Computes by reason (count, lateness µs, duration), event counts by kind, clean stop."""
    conn = connect(WorkspaceDir.at(ws).log_root)  # the events view only: no projections needed
    try:
        bounds = {"start": window.start_ns, "end": window.end_ns}
        rows = conn.execute(COMPUTE_SQL, bounds).fetchall()
        kinds = dict(conn.execute(COUNT_SQL, bounds).fetchall())
        stopped = conn.execute(STOPPED_SQL).fetchone()
    finally:
        conn.close()
    by_reason = {
        r[0]: {"n": r[1], "late_p50_us": round(r[2]), "late_p99_us": round(r[3])}
        | {"late_max_us": r[4], "duration_p50_ms": _round(r[5], 3)}
        for r in rows
    }
    return {"by_reason": by_reason, "kinds": kinds, "stopped_event": bool(stopped and stopped[0])}


def replay_verify(ws: Path) -> dict[str, Any]:
    done = nerve_cli(ws, "replay", "--verify", "--json", check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    report = lines[-1] if lines else {}
    return {"exit": done.returncode, "report": report, "stderr": done.stderr.strip()[-500:]}


# -- the run -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    senses: int
    groups: int
    interval_ms: int
    seconds: float
    triggers: int
    warm_up: float
    durability: str
    keep: bool

    @property
    def requested_per_s(self) -> float:
        return self.senses * 1000 / self.interval_ms


def run(cfg: Settings, root: Path) -> dict[str, Any]:
    ws = build_workspace(root, cfg)
    path, names = ws / "data" / "nerve.sock", sense_names(cfg.senses)
    with running_daemon(ws) as daemon:
        say(f"daemon pid {daemon.kernel.pid}; waiting for every sense's first compute")
        ready_s = wait_for_computes(path, cfg.senses)
        time.sleep(cfg.warm_up)
        say(f"measuring {cfg.seconds:g} s")
        window = measure_window(path, daemon.kernel, names, cfg)
    say(f"daemon stopped in {daemon.stop_s:.1f} s; reading the log")
    events = window_events(ws, window)
    stop = {"stop_s": round(daemon.stop_s or 0, 2), "left_running": daemon.left_running}
    stop["stopped_event"] = events.pop("stopped_event")
    result = summary(cfg, window, events, ready_s)
    result |= {"stop": stop, "replay": replay_verify(ws)}
    result["checks"] = checks(result)
    result["failed_checks"] = failed_checks(result["checks"])
    return result


def checks(result: dict[str, Any]) -> dict[str, bool]:
    """The internal checks: what must hold whatever the machine's speed."""
    replay = result["replay"]
    return {
        "interval_computes_recorded": result["computes"].get("interval", {"n": 0})["n"] > 0,
        "stopped_event": bool(result["stop"]["stopped_event"]),
        "none_left_running": result["stop"]["left_running"] == 0,
        "replay_verifies": replay["exit"] == 0 and replay["report"].get("ok") is True,
    }


def summary(
    cfg: Settings, window: Window, events: dict[str, Any], ready_s: float
) -> dict[str, Any]:
    wall_s = (window.end_ns - window.start_ns) / 1e9
    interval = events["by_reason"].get("interval", {"n": 0})
    achieved = interval["n"] / wall_s
    return {
        "config": {k: v for k, v in vars(cfg).items() if k != "keep"},
        "window_s": round(wall_s, 3),
        "ready_s": round(ready_s, 2),
        "requested_per_s": cfg.requested_per_s,
        "achieved_per_s": round(achieved, 1),
        "ratio": round(achieved / cfg.requested_per_s, 4),
        "goal_met": achieved / cfg.requested_per_s >= GOAL_RATIO,
        "lateness_ms": {
            "p50": _round(interval.get("late_p50_us", 0) / 1000, 2),
            "p99": _round(interval.get("late_p99_us", 0) / 1000, 2),
        },
        "computes": events["by_reason"],
        "events_by_kind": events["kinds"],
        "cpu": window.cpu,
        "trigger_persistent": latency_summary(window.persistent_ms),
        "trigger_fresh": latency_summary(window.fresh_ms),
        "commits": window.commits,
    }


# -- output ------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} ms"


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:.2f} ms"


def _pair(fmt: Any, low: float | None, high: float | None) -> str:
    return f"{fmt(low)} / {fmt(high)}"


def _commits(c: dict[str, Any]) -> str:
    return f"{c['commits_per_s']:,.1f} ({c['events_per_commit']})"


def table_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    interval = result["computes"].get("interval", {})
    cpu, p, f = result["cpu"], result["trigger_persistent"], result["trigger_fresh"]
    met = "met" if result["goal_met"] else "NOT met"
    return [
        ("requested computes/s", f"{result['requested_per_s']:,.0f}"),
        ("achieved computes/s (interval)", f"{result['achieved_per_s']:,.1f}"),
        ("achieved / requested", f"{result['ratio']:.4f} (goal >= {GOAL_RATIO}: {met})"),
        (
            "lateness p50 / p99",
            _pair(_us, interval.get("late_p50_us"), interval.get("late_p99_us")),
        ),
        ("kernel CPU (% of one core)", f"{cpu['kernel_pct']:.1f} %"),
        ("workers CPU (% of one core)", f"{cpu['workers_pct']:.1f} % ({cpu['workers']} procs)"),
        ("bench CPU (% of one core)", f"{cpu['bench_pct']:.1f} %"),
        ("machine CPU (% of all cores)", f"{cpu['machine_pct']:.1f} % of {cpu['cores']} cores"),
        ("other processes' CPU (% of one core)", f"{cpu['other_pct']:.1f} %"),
        ("group commits/s (events per commit)", _commits(result["commits"])),
        (f"trigger-sense p50 / p99, one conn (n={p['n']})", _pair(_ms, p["p50_ms"], p["p99_ms"])),
        (f"trigger-sense p50 / p99, fresh conn (n={f['n']})", _pair(_ms, f["p50_ms"], f["p99_ms"])),
    ]


def render(result: dict[str, Any], out: TextIO) -> None:
    c = result["config"]
    print(
        f"nerve daemon bench: {c['senses']} senses, {c['groups']} groups, "
        f"{c['interval_ms']} ms interval, {result['window_s']:.1f} s window",
        file=out,
    )
    rows = table_rows(result)
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"  {label:<{width}}  {value}", file=out)
    for reason, row in result["computes"].items():
        print(f"  computes[{reason}]: {row}", file=out)
    stop, replay = result["stop"], result["replay"]
    print(
        f"  daemon stop: {stop['stop_s']:.2f} s, daemon.stopped recorded: "
        f"{stop['stopped_event']}, processes left running: {stop['left_running']}",
        file=out,
    )
    print(f"  replay --verify: exit {replay['exit']}, {replay['report']}", file=out)
    for name, ok in result["checks"].items():
        print(f"  check {name}: {ok}", file=out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--senses", type=int)
    parser.add_argument("--groups", type=int)
    parser.add_argument("--interval-ms", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--triggers", type=int, help="trigger-sense round trips on one connection")
    parser.add_argument("--warm-up", type=float, help="seconds between readiness and the window")
    parser.add_argument(
        "--quick", action="store_true", help="20 senses, 2 groups, 100 ms, 5 s, 100 triggers"
    )
    parser.add_argument(
        "--durability", choices=("fsync", "os"), default="fsync", help="log.durability"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    return parser.parse_args(argv)


def settings(args: argparse.Namespace) -> Settings:
    base = QUICK if args.quick else DEFAULTS
    chosen = {k: v if getattr(args, k) is None else getattr(args, k) for k, v in base.items()}
    return Settings(**chosen, durability=args.durability, keep=args.keep)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    cfg = settings(parse_args(argv))
    with workdir("nerve-daemon-bench-", keep=cfg.keep) as root:
        result = run(cfg, root)
    render(result, out)
    return finish(result, out)


if __name__ == "__main__":
    raise SystemExit(main())
