"""What the daemon costs the machine it watches: memory, CPU, wakeups, events and disk.

    .venv/bin/python bench/footprint_bench.py [--seconds 600] [--sample-s 10] [--quick] [--keep]

The bundled workspace (the repository's ``nerve.yaml`` and ``senses/``) is copied to a
temporary folder and its daemon started with ``nerve daemon start``. For ``--seconds``
(default 600; ``--quick`` 60) the bench samples, every ``--sample-s`` seconds, every nerve
process (the kernel and its workers, found again at each sample): unique memory (USS, from
psutil), CPU time and context switches. It reports memory at the end (total and per
process), the slope of total USS over the second half of the run (MiB per hour), CPU as a
share of one core, and wakeups per second (voluntary context switches: the process went to
sleep and was woken; involuntary ones are shown next to them).

After ``nerve daemon stop`` it reads the log: events per second by kind and the bookkeeping
share (``sense.state`` and ``signal`` records among all events of the run). Then it seals
and compacts the log and reports the bytes of sealed Parquet per event, and extrapolates
disk per day from the events per second of the run.

Checks: the daemon started and stopped cleanly (``daemon.stopped`` recorded, no process left
running), every bundled sense computed, the log verifies (``nerve replay --verify``), and
compaction kept the replay digest. Ends with one line ``RESULT {json}``; progress goes to
stderr. Goals (issue figures): memory <= 120 MiB, bookkeeping <= 30%, disk <= 5 MB/day,
CPU <= 0.5% of one core.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import psutil

ROOT = Path(__file__).resolve().parent.parent
QUICK = {"seconds": 60.0, "sample_s": 5.0}
DEFAULTS = {"seconds": 600.0, "sample_s": 10.0}
BOOKKEEPING = ("sense.state", "signal")
MIB = 2**20
GOALS = {"uss_mib": 120, "bookkeeping_share": 0.30, "disk_mb_per_day": 5.0, "cpu_pct": 0.5}


def say(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


# -- the workspace and the daemon --------------------------------------------------------


def bundled_workspace(dest: Path) -> Path:
    """A copy of the repository's own workspace: nerve.yaml and senses/, no data."""
    dest.mkdir(parents=True)
    shutil.copy2(ROOT / "nerve.yaml", dest / "nerve.yaml")
    shutil.copytree(ROOT / "senses", dest / "senses", ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def bundled_senses() -> list[str]:
    from nerve.config import load_config

    return sorted(load_config(ROOT / "nerve.yaml").senses)


def nerve_cli(ws: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "nerve", "--workspace", str(ws), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ws)
    if check and done.returncode != 0:
        raise RuntimeError(f"`nerve {' '.join(args)}` exited {done.returncode}: {done.stderr}")
    return done


def nerve_processes(kernel: psutil.Process) -> list[psutil.Process]:
    with contextlib.suppress(psutil.NoSuchProcess):
        return [kernel, *kernel.children(recursive=True)]
    return []


@dataclass
class Daemon:
    ws: Path
    kernel: psutil.Process | None = None
    seen: dict[int, psutil.Process] = field(default_factory=dict)
    left_running: int = 0

    def start(self) -> None:
        nerve_cli(self.ws, "daemon", "start")
        pid = int((self.ws / "data" / "nerve.pid").read_text().strip())
        self.kernel = psutil.Process(pid)

    def processes(self) -> list[psutil.Process]:
        procs = nerve_processes(self.kernel) if self.kernel else []
        self.seen.update((p.pid, p) for p in procs)
        return procs

    def stop(self) -> None:
        done = nerve_cli(self.ws, "daemon", "stop", check=False)
        if done.returncode != 0:
            say(f"daemon stop exited {done.returncode}: {done.stderr.strip()}")
        for proc in self.seen.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    proc.kill()
                    self.left_running += 1


@contextlib.contextmanager
def running_daemon(ws: Path) -> Iterator[Daemon]:
    daemon = Daemon(ws)
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.stop()


# -- sampling ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcSample:
    pid: int
    name: str
    uss: int
    cpu_s: float
    voluntary: int
    involuntary: int


def _role(proc: psutil.Process) -> str:
    cmd = proc.cmdline()
    if "nerve.runtime.worker" in cmd:
        return "sense worker"
    if "nerve.flow.worker" in cmd:
        return "workflow worker"
    return "kernel" if "daemon" in cmd else " ".join(cmd[-2:])


def sample_process(proc: psutil.Process) -> ProcSample | None:
    try:
        with proc.oneshot():
            times = proc.cpu_times()
            ctx = proc.num_ctx_switches()
            return ProcSample(
                proc.pid,
                _role(proc),
                proc.memory_full_info().uss,
                times.user + times.system,
                ctx.voluntary,
                ctx.involuntary,
            )
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


@dataclass(frozen=True)
class Sample:
    at: float  # seconds since the window started
    procs: tuple[ProcSample, ...]

    @property
    def uss(self) -> int:
        return sum(p.uss for p in self.procs)


def take_sample(daemon: Daemon, started: float) -> Sample:
    found = (sample_process(p) for p in daemon.processes())
    return Sample(time.monotonic() - started, tuple(s for s in found if s is not None))


def sample_window(daemon: Daemon, seconds: float, every: float) -> list[Sample]:
    started = time.monotonic()
    samples = [take_sample(daemon, started)]
    while samples[-1].at < seconds:
        time.sleep(max(0.0, min(every, seconds - samples[-1].at)))
        samples.append(take_sample(daemon, started))
        say(
            f"{samples[-1].at:5.0f} s: {samples[-1].uss / MIB:6.1f} MiB in {len(samples[-1].procs)}"
        )
    return samples


def _deltas(first: Sample, last: Sample) -> tuple[float, int, int]:
    """CPU seconds and context switches between two samples, per pid present in both (a
    worker that restarted in between counts from its first sample)."""
    before = {p.pid: p for p in first.procs}
    cpu, vol, invol = 0.0, 0, 0
    for p in last.procs:
        b = before.get(p.pid)
        cpu += p.cpu_s - (b.cpu_s if b else 0.0)
        vol += p.voluntary - (b.voluntary if b else 0)
        invol += p.involuntary - (b.involuntary if b else 0)
    return cpu, vol, invol


def slope_mib_per_h(samples: Sequence[Sample]) -> float | None:
    """Least-squares slope of total USS over time, in MiB per hour."""
    if len(samples) < 3:
        return None
    xs = [s.at for s in samples]
    ys = [s.uss / MIB for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if not var:
        return None
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return round(cov / var * 3600, 2)


def resource_figures(samples: Sequence[Sample]) -> dict[str, Any]:
    """Memory at the end, its slope over the second half, CPU and wakeups over the run.

    CPU and wakeups count from the first sample after start-up (the second one), so the
    start-up's imports and state rebuild are not charged to idling."""
    first, last = samples[1] if len(samples) > 2 else samples[0], samples[-1]
    wall = max(last.at - first.at, 1e-9)
    cpu, vol, invol = _deltas(first, last)
    half = [s for s in samples if s.at >= samples[-1].at / 2]
    return {
        "uss_mib": round(last.uss / MIB, 1),
        "uss_by_process": sorted(
            ({"pid": p.pid, "role": p.name, "uss_mib": round(p.uss / MIB, 1)} for p in last.procs),
            key=lambda r: (-r["uss_mib"], r["pid"]),
        ),
        "uss_max_mib": round(max(s.uss for s in samples) / MIB, 1),
        "uss_slope_mib_per_h": slope_mib_per_h(half),
        "processes": len(last.procs),
        "cpu_pct": round(cpu / wall * 100, 3),
        "wakeups_per_s": round(vol / wall, 1),
        "involuntary_per_s": round(invol / wall, 1),
        "measured_s": round(wall, 1),
    }


# -- the log -----------------------------------------------------------------------------

KINDS_SQL = "SELECT kind, count(*) FROM events GROUP BY kind ORDER BY kind"
SPAN_SQL = "SELECT min(physical_ns), max(physical_ns) FROM events"
COMPUTED_SQL = "SELECT DISTINCT subject FROM events WHERE kind IN ('sense.state', 'observation')"
STOPPED_SQL = "SELECT count(*) FROM events WHERE kind = 'daemon.stopped'"


def log_figures(ws: Path) -> dict[str, Any]:
    from nerve.workspace import Workspace

    conn = Workspace.at(ws).connect()
    try:
        kinds = dict(conn.execute(KINDS_SQL).fetchall())
        lo, hi = conn.execute(SPAN_SQL).fetchone() or (0, 0)
        computed = sorted(r[0] for r in conn.execute(COMPUTED_SQL).fetchall())
        stopped = conn.execute(STOPPED_SQL).fetchone()
    finally:
        conn.close()
    total = sum(kinds.values())
    span_s = max((hi - lo) / 1e9, 1e-9) if total else 1e-9
    kept = sum(kinds.get(k, 0) for k in BOOKKEEPING)
    return {
        "events": total,
        "events_per_s": round(total / span_s, 3),
        "kinds": kinds,
        "bookkeeping_share": round(kept / total, 3) if total else None,
        "span_s": round(span_s, 1),
        "subjects_computed": computed,
        "stopped_event": bool(stopped and stopped[0]),
    }


def disk_figures(ws: Path, events_per_s: float) -> dict[str, Any]:
    """Seal and compact the log; bytes of Parquet per event, and the digest before/after."""
    from nerve.log.reader import replay_digest
    from nerve.log.store import EventLog
    from nerve.workspace import Workspace

    root = Workspace.at(ws).log_root
    with EventLog(root, node="bench", durability="os") as log:
        log.seal()
        sealed = _segment_bytes(root)
        before = replay_digest(root)
        log.compact(target_rows=10**9)
    compacted = _segment_bytes(root)
    after = replay_digest(root)
    per_event = compacted / before.events if before.events else 0.0
    return {
        "sealed_bytes": sealed,
        "compacted_bytes": compacted,
        "bytes_per_event": round(per_event, 1),
        "sealed_bytes_per_event": round(sealed / before.events, 1) if before.events else 0.0,
        "disk_mb_per_day": round(per_event * events_per_s * 86400 / 1e6, 2),
        "digest_kept": after.digest == before.digest and after.events == before.events,
    }


def _segment_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / "segments").glob("*.parquet"))


def replay_verifies(ws: Path) -> bool:
    return nerve_cli(ws, "replay", "--verify", "--json", check=False).returncode == 0


# -- the run -----------------------------------------------------------------------------


def measure_daemon(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    ws = bundled_workspace(work / "ws")
    say(f"bundled workspace copied; daemon runs for {args.seconds:.0f} s")
    with running_daemon(ws) as daemon:
        samples = sample_window(daemon, args.seconds, args.sample_s)
    say("daemon stopped; reading the log")
    resources = resource_figures(samples)
    events = log_figures(ws)
    disk = disk_figures(ws, events["events_per_s"])
    senses = bundled_senses()
    checks = {
        "stopped_cleanly": events["stopped_event"] and daemon.left_running == 0,
        "every_sense_computed": set(senses) <= set(events["subjects_computed"]),
        "replay_verifies": replay_verifies(ws),
        "compaction_kept_digest": disk["digest_kept"],
    }
    return {"daemon": resources, "log": events, "disk": disk, "senses": senses, "checks": checks}


def render(result: dict[str, Any], out: TextIO) -> None:
    d, lg, dk = result["daemon"], result["log"], result["disk"]
    print(f"bundled workspace, {result['seconds']:.0f} s, {d['processes']} processes", file=out)
    rows = [
        ("memory, all nerve processes (USS)", f"{d['uss_mib']} MiB", f"<= {GOALS['uss_mib']}"),
        ("memory slope (second half)", f"{d['uss_slope_mib_per_h']} MiB/h", "~0"),
        ("CPU, share of one core", f"{d['cpu_pct']}%", f"<= {GOALS['cpu_pct']}%"),
        ("wakeups/s (voluntary switches)", f"{d['wakeups_per_s']}", ""),
        ("events/s", f"{lg['events_per_s']}", ""),
        ("bookkeeping share", f"{lg['bookkeeping_share']}", f"<= {GOALS['bookkeeping_share']}"),
        ("bytes/event, compacted", f"{dk['bytes_per_event']}", ""),
        ("disk per day", f"{dk['disk_mb_per_day']} MB", f"<= {GOALS['disk_mb_per_day']}"),
    ]
    for name, value, goal in rows:
        print(f"{name:<36} {value:>14}  {goal}", file=out)
    for proc in d["uss_by_process"]:
        print(f"  {proc['role']:<20} pid {proc['pid']:>7} {proc['uss_mib']:>7} MiB", file=out)
    print("events by kind: " + json.dumps(lg["kinds"], sort_keys=True), file=out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, help="how long the daemon runs")
    parser.add_argument("--sample-s", type=float, help="seconds between samples")
    parser.add_argument("--quick", action="store_true", help="60 s, a sample every 5 s")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else DEFAULTS
    for key, value in sizes.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="nerve-footprint-"))
    try:
        result = {"seconds": args.seconds, "sample_s": args.sample_s}
        result |= measure_daemon(work, args)
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    result["goals"] = GOALS
    result["load_avg_1m"] = round(os.getloadavg()[0], 2)
    result["failed_checks"] = [name for name, ok in result["checks"].items() if not ok]
    render(result, out)
    print("RESULT " + json.dumps(result, sort_keys=True), file=out)
    for name in result["failed_checks"]:
        say(f"check failed: {name}")
    return 1 if result["failed_checks"] else 0


if __name__ == "__main__":
    sys.exit(main())
