"""What the daemon costs the machine it watches: memory, CPU, wakeups, events and disk.

    .venv/bin/python bench/footprint_bench.py [--seconds 600] [--sample-s 10] [--quick] [--keep]

The bundled workspace (the repository's ``nerve.yaml`` and ``senses/``) is copied to a
temporary folder and its daemon started with ``nerve daemon start``. For ``--seconds``
(default 600; ``--quick`` 60) the bench samples, every ``--sample-s`` seconds, every nerve
process (the kernel and its workers, found again at each sample): unique memory (USS, from
psutil), CPU time and context switches. It reports memory at the end (total and per
process), the slope of total USS over the second half of the run (MiB per hour), CPU as a
share of one core, and wakeups per second (voluntary context switches of every thread: a
thread went to sleep and was woken; involuntary ones are shown next to them).

After ``nerve daemon stop`` it reads the log: events per second by kind and the bookkeeping
share (``sense.state`` and ``signal`` records among all events of the run). Then it seals
and compacts the log and reports the bytes of sealed Parquet per event, and extrapolates
disk per day (:func:`a_day`): what recurs, scaled from the run to a day; once what a daemon
writes per start and stop (its start, stop and config records, each sense's first and last
state); a segment's footer once per segment the day seals; an attention snapshot once per
``snapshot_every`` observations. A short run scaled as it is would count a restart and a
footer per run length (a 300 s run: 288 a day); that figure is shown too ("as run"). And
that day by kind and subject (each group's bytes: the segment less the segment written
without the group, scaled as run).

Checks: the daemon started and stopped cleanly (``daemon.stopped`` recorded, no process left
running), every bundled sense computed, the log verifies (``nerve replay --verify``), and
compaction kept the replay digest. Ends with one line ``RESULT {json}``; progress goes to
stderr. Goals (issue figures): memory <= 120 MiB, bookkeeping <= 30%, disk <= 5 MB/day,
CPU <= 0.5% of one core.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any, TextIO

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, load_avg_1m, new_parser, say, sized, workdir

ROOT = Path(__file__).resolve().parent.parent
QUICK = {"seconds": 60.0, "sample_s": 5.0, "stream_s": 600.0}
DEFAULTS = {"seconds": 600.0, "sample_s": 10.0, "stream_s": 3600.0}
BOOKKEEPING = ("sense.state", "signal")
MIB = 2**20
GOALS = {"uss_mib": 120, "bookkeeping_share": 0.30, "disk_mb_per_day": 5.0, "cpu_pct": 0.5}


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


def thread_switches(pid: int) -> tuple[int, int]:
    """Voluntary and involuntary context switches of every thread of ``pid``, from
    ``/proc/<pid>/task/*/status`` (a process's own status counts its main thread only)."""
    vol = invol = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        with contextlib.suppress(OSError):
            for line in status.read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    vol += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    invol += int(line.split()[1])
    return vol, invol


def sample_process(proc: psutil.Process) -> ProcSample | None:
    try:
        with proc.oneshot():
            times = proc.cpu_times()
            vol, invol = thread_switches(proc.pid)
            return ProcSample(
                proc.pid,
                _role(proc),
                proc.memory_full_info().uss,
                times.user + times.system,
                vol,
                invol,
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
    from nerve.workspace import WorkspaceDir

    conn = WorkspaceDir.at(ws).connect()
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
    from nerve.workspace import WorkspaceDir

    root = WorkspaceDir.at(ws).log_root
    with EventLog(root, node="bench", durability="os") as log:
        log.seal()
        sealed = _segment_bytes(root)
        before = replay_digest(root)
        log.compact(target_rows=10**9)
    compacted = _segment_bytes(root)
    after = replay_digest(root)
    per_event = compacted / before.events if before.events else 0.0
    days = events_per_s * 86400 / before.events if before.events else 0  # runs a day
    by_group = disk_by_group(root, days)
    day = a_day(root, WorkspaceDir.at(ws), days, by_group.get("(shared)", 0.0) * 1e6 / (days or 1))
    as_run = per_event * events_per_s * 86400
    return {
        "mb_per_day_by_group": by_group,
        "sealed_bytes": sealed,
        "compacted_bytes": compacted,
        "bytes_per_event": round(per_event, 1),
        "sealed_bytes_per_event": round(sealed / before.events, 1) if before.events else 0.0,
        "disk_mb_per_day": round(day["bytes"] / 1e6, 2),
        # the run's bytes scaled to a day as they are: as if it restarted every run length
        "disk_mb_per_day_as_run": round(as_run / 1e6, 2),
        "day_model": day,
        "digest_kept": after.digest == before.digest and after.events == before.events,
    }


def a_day(root: Path, ws: Any, days: float, shared: float) -> dict[str, Any]:
    """A day of one daemon from a short run: what recurs with time (observations, decisions,
    links, periodic checkpoints) scaled from the run to the day; what a daemon writes once
    per start and stop counted once; a segment's footer and dictionaries (``shared``) once
    per segment the day seals (``log.seal_max_age``); an attention snapshot once per
    ``snapshot_every`` observations of the day, at the size of the run's own."""
    whole, once, snap, observations = once_per_run_bytes(root)
    seal_s = ws.config.log.seal_max_age / 1000
    segments = 86400 / seal_s
    every = ws.config.attention.snapshot_every
    snapshots = observations * days / every
    recurring = (whole - once - snap - shared) * days
    total = recurring + once + shared * segments + snap * snapshots
    return {
        "bytes": round(total),
        "recurring_bytes": round(recurring),
        "once_per_run_bytes": once,
        "segments_a_day": round(segments, 1),
        "footer_bytes_a_segment": round(shared),
        "snapshots_a_day": round(snapshots, 1),
        "snapshot_bytes": snap,
    }


ONCE_KINDS = ("daemon.started", "daemon.stopped", "config.loaded")


def once_per_run_bytes(root: Path) -> tuple[int, int, int, int]:
    """The log's bytes; those of the records a daemon writes once per start and stop (its
    start, stop and config records, each sense's first and last state: restored at start,
    checkpointed at stop); those of its attention snapshots (one at stop); and the run's
    observations. Each as the log less those rows, compared with the whole."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from nerve.log.reader import snapshot, table_since
    from nerve.log.segments import encode_table, sort_events

    table = sort_events(table_since(snapshot(root)))
    kinds, subjects = table["kind"].to_pylist(), table["subject"].to_pylist()
    once = [k in ONCE_KINDS for k in kinds]
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, (kind, subject) in enumerate(zip(kinds, subjects, strict=True)):
        if kind == "sense.state":
            first.setdefault(subject, i)
            last[subject] = i
    for i in (*first.values(), *last.values()):
        once[i] = True
    whole = len(encode_table(table))
    snaps = pa.array([k == "attention.snapshot" for k in kinds])
    without_once = len(encode_table(table.filter(pc.invert(pa.array(once)))))
    without_snaps = len(encode_table(table.filter(pc.invert(snaps))))
    return whole, whole - without_once, whole - without_snaps, kinds.count("observation")


def disk_by_group(root: Path, scale: float) -> dict[str, float]:
    """MB/day of each (kind, subject): the log's segment bytes less those of the log written
    without that group's rows, × ``scale`` (the run's events a day per event stored); what
    no group accounts for alone (the footer, shared dictionaries) is ``(shared)``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from nerve.log.reader import snapshot, table_since
    from nerve.log.segments import encode_table, sort_events

    table = sort_events(table_since(snapshot(root)))
    whole = len(encode_table(table))
    kinds, subjects = table["kind"].to_pylist(), table["subject"].to_pylist()
    keys = [f"{k} {s}" for k, s in zip(kinds, subjects, strict=True)]
    out: dict[str, float] = {}
    column = pa.array(keys)
    for key in sorted(set(keys)):
        rest = table.filter(pc.not_equal(column, key))
        out[key] = whole - len(encode_table(rest))
    out["(shared)"] = whole - sum(out.values())
    ranked = sorted(out.items(), key=lambda kv: -kv[1])
    return {k: round(v * scale / 1e6, 3) for k, v in ranked}


# Writer options tried on the run's own events (one segment, as compaction writes it). The
# hashes (id, payload_cid) are random bytes: stored raw in every trial.
DICTIONARY = ["node", "kind", "subject", "source", "trust", "line"]
DELTA = {"physical_ns": "DELTA_BINARY_PACKED", "valid_time_ns": "DELTA_BINARY_PACKED"}
CODEC_TRIALS: dict[str, dict[str, Any]] = {
    "snappy": {"codec": "snappy", "dictionary": DICTIONARY},
    "zstd-1": {"codec": "zstd", "level": 1, "dictionary": DICTIONARY},
    "zstd-3": {"codec": "zstd", "level": 3, "dictionary": DICTIONARY},
    "zstd-9": {"codec": "zstd", "level": 9, "dictionary": DICTIONARY},
    "zstd-19": {"codec": "zstd", "level": 19, "dictionary": DICTIONARY},
    "zstd-9, no dictionary": {"codec": "zstd", "level": 9, "dictionary": []},
    "zstd-9, dictionary + payload": {
        "codec": "zstd",
        "level": 9,
        "dictionary": [*DICTIONARY, "payload"],
    },
    "zstd-3, delta times, every payload_cid (the previous writer)": {
        "codec": "zstd",
        "level": 3,
        "dictionary": DICTIONARY,
        "encoding": DELTA,
        "every_cid": True,
    },
    "zstd-3, delta times": {
        "codec": "zstd",
        "level": 3,
        "dictionary": DICTIONARY,
        "encoding": DELTA,
    },
    "zstd-9, delta times": {
        "codec": "zstd",
        "level": 9,
        "dictionary": DICTIONARY,
        "encoding": DELTA,
    },
}


def codec_trials(root: Path) -> dict[str, Any]:
    """Bytes per event of the log's events written once with each trial's options, the
    columns' share of the current writer's bytes, and a DuckDB read of each trial."""
    import pyarrow.parquet as pq

    from nerve.log.reader import snapshot, table_since
    from nerve.log.segments import sort_events

    table = sort_events(table_since(snapshot(root)))
    rows = max(table.num_rows, 1)
    out: dict[str, Any] = {"rows": table.num_rows, "bytes_per_event": {}, "readable": {}}
    trials = {name: _write_trial(table, trial) for name, trial in CODEC_TRIALS.items()}
    trials["chosen (the segment writer)"] = _current_bytes(table)
    for name, data in trials.items():
        out["bytes_per_event"][name] = round(len(data) / rows, 1)
        out["readable"][name] = _duckdb_rows(data) == table.num_rows
    current = pq.ParquetFile(_pa_buffer(_current_bytes(table))).metadata
    out["footer_bytes_per_event"] = round(current.serialized_size / rows, 1)
    out["column_bytes_per_event"] = {
        current.schema.column(i).name: round(
            sum(
                current.row_group(g).column(i).total_compressed_size
                for g in range(current.num_row_groups)
            )
            / rows,
            1,
        )
        for i in range(current.num_columns)
    }
    return out


def _write_trial(table: Any, trial: dict[str, Any]) -> bytes:
    """The table written with a trial's options; as the writer stores it (payload_cid only
    for erased rows) unless the trial keeps ``every_cid``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nerve.log.codec import stored_form

    table = table if trial.get("every_cid") else stored_form(table)
    raw = ("id", "payload_cid")
    codec = {n: ("none" if n in raw else trial["codec"]) for n in table.schema.names}
    levels = {n: trial["level"] for n in table.schema.names if n not in raw and "level" in trial}
    sink = pa.BufferOutputStream()
    pq.write_table(
        table,
        sink,
        compression=codec,
        compression_level=levels or None,
        use_dictionary=trial["dictionary"],
        column_encoding=trial.get("encoding"),
        write_statistics=["physical_ns", "logical", "kind", "source"],
    )
    return bytes(sink.getvalue().to_pybytes())


def _current_bytes(table: Any) -> bytes:
    from nerve.log.segments import encode_table

    return encode_table(table)


def _pa_buffer(data: bytes) -> Any:
    import pyarrow as pa

    return pa.BufferReader(data)


def _duckdb_rows(data: bytes) -> int:
    import duckdb

    with tempfile.NamedTemporaryFile(suffix=".parquet") as f:
        f.write(data)
        f.flush()
        row = duckdb.connect().execute("SELECT count(*) FROM read_parquet(?)", [f.name]).fetchone()
    return int(row[0]) if row else -1


def _segment_bytes(root: Path) -> int:
    """Bytes of the live segments (a compaction leaves the ones it replaced on disk for a
    grace period; they are not counted)."""
    from nerve.log.store import manifest_state

    live = manifest_state(root).segments()
    return sum((root / "segments" / f"{s.name}.parquet").stat().st_size for s in live)


def replay_verifies(ws: Path) -> bool:
    return nerve_cli(ws, "replay", "--verify", "--json", check=False).returncode == 0


# -- one recorded stream, into nerve and into ActivityWatch's datastore -------------------

# The bundled senses that sample the machine, each at its interval in nerve.yaml. `files`
# and `shell` are left out: they read what the user does, and a bench does not record that.
INSERT_RUNS = 5  # each store replays the stream this often, in turns; the fastest run counts
STREAM_SENSES = ("cpu", "memory", "disk", "network", "power", "processes")
QUERY_SOURCE = "cpu"


@dataclass(frozen=True)
class Obs:
    t_ns: int
    sense: str
    source: int
    trust: int
    valid_time_ns: int | None
    payload: bytes
    line: str
    data: Any


def _load_sense(name: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"bench_sense_{name}", ROOT / "senses" / name / "sense.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record_stream(seconds: float, start_ns: int) -> list[Obs]:
    """``seconds`` of the bundled machine senses, each compute called at its turn (the
    readings are real; the times are the schedule's, so an hour records in seconds)."""
    from nerve.canonical import canonical_json
    from nerve.config import load_config
    from nerve.contract import SenseContext, normalise_result

    config = load_config(ROOT / "nerve.yaml")
    ticks = []
    for name in STREAM_SENSES:
        every_ns = int(config.senses[name].interval or 1000) * 1_000_000
        ticks += [(k * every_ns, name) for k in range(int(seconds * 1e9) // every_ns)]
    modules = {name: _load_sense(name) for name in STREAM_SENSES}
    states = {name: modules[name].initial_state for name in STREAM_SENSES}
    out: list[Obs] = []
    for offset, name in sorted(ticks):
        # every reading, as each compute read it: the stores compared take the same stream
        options = {**config.senses[name].options, "keyframe_s": 0}
        ctx = SenseContext(name, ROOT, options)
        result = normalise_result(modules[name].compute(states[name], ctx), states[name])
        states[name] = result.state
        for raw in result.observations:
            obs = raw.normalised()
            payload = canonical_json(obs.payload) if obs.payload is not None else b""
            out.append(
                Obs(
                    start_ns + offset,
                    name,
                    int(obs.source),
                    int(obs.trust),
                    obs.valid_time_ns,
                    payload,
                    obs.line,
                    obs.payload,
                )
            )
    return out


def _batches(stream: Sequence[Obs]) -> list[list[Obs]]:
    """The stream as the daemon commits it: one batch per compute (same sense, same time)."""
    out: list[list[Obs]] = []
    for obs in stream:
        if out and (out[-1][0].t_ns, out[-1][0].sense) == (obs.t_ns, obs.sense):
            out[-1].append(obs)
        else:
            out.append([obs])
    return out


def nerve_side(
    root: Path, stream: Sequence[Obs], durability: str, method: str = "append_count"
) -> dict[str, Any]:
    """Append one batch per compute (the log's clock reads the stream's times), seal and
    compact; then time "everything from QUERY_SOURCE in the last hour" on the events view.

    ``method``: ``append_count`` stores the batch as aw-core's ``insert_many`` does (nothing
    handed back); ``append_columns`` also returns the stored rows as an Arrow table."""
    from nerve.clock import HybridClock
    from nerve.log.fields import EventFields
    from nerve.log.store import EventLog
    from nerve.query import connect

    now = [stream[0].t_ns if stream else 0]
    batches = _batches(stream)
    with EventLog(
        root,
        node="bench",
        durability=durability,
        clock=HybridClock(lambda: now[0]),
        seal_max_events=10**12,
    ) as log:
        append = getattr(log, method)
        started = time.perf_counter()
        for batch in batches:
            now[0] = batch[0].t_ns
            append(
                EventFields(
                    kind=["observation"] * len(batch),
                    subject=[o.sense for o in batch],
                    source=[o.source for o in batch],
                    trust=[o.trust for o in batch],
                    valid_time_ns=[o.valid_time_ns for o in batch],
                    payload=[o.payload for o in batch],
                    line=[o.line for o in batch],
                )
            )
        insert_s = time.perf_counter() - started
        log.seal()
        log.compact(target_rows=10**9)
    since = (stream[-1].t_ns if stream else 0) - 3600 * 10**9
    conn = connect(root)
    sql = (
        "SELECT ts, data FROM events WHERE subject = ? AND physical_ns >= ? "
        "ORDER BY physical_ns DESC"
    )
    rows, query_s = _best_of(lambda: conn.execute(sql, [QUERY_SOURCE, since]).fetchall())
    conn.close()
    disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return _side(len(stream), insert_s, disk, len(rows), query_s)


def aw_side(path: Path, stream: Sequence[Obs], *, lazy_commit: bool = True) -> dict[str, Any]:
    """ActivityWatch's own SQLite storage (aw-core): one bucket per sense, each compute's
    observations one ``insert_many`` of events with timestamp, duration 0 and data.

    ``lazy_commit``: aw-core's default, a commit once more than 50 statements wait (an
    insert is acknowledged before it is committed); ``False`` commits every insert, the
    guarantee nerve's appends give."""
    from datetime import datetime, timedelta

    from aw_core.models import Event
    from aw_datastore.storages.sqlite import SqliteStorage

    storage = SqliteStorage(testing=True, filepath=str(path), enable_lazy_commit=lazy_commit)
    created = datetime.now(UTC).isoformat()
    for name in STREAM_SENSES:
        storage.create_bucket(name, "nerve.observation", "bench", "bench", created)
    when = lambda ns: datetime.fromtimestamp(ns / 1e9, tz=UTC)  # noqa: E731
    batches = [
        [
            Event(timestamp=when(o.t_ns), duration=0, data={"line": o.line, "payload": o.data})
            for o in b
        ]
        for b in _batches(stream)
    ]
    names = [b[0].sense for b in _batches(stream)]
    started = time.perf_counter()
    for name, events in zip(names, batches, strict=True):
        storage.insert_many(name, events)
    storage.commit()
    insert_s = time.perf_counter() - started
    end = when(stream[-1].t_ns) if stream else datetime.now(UTC)
    found, query_s = _best_of(
        lambda: storage.get_events(QUERY_SOURCE, -1, end - timedelta(hours=1), end)
    )
    storage.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    storage.conn.close()
    disk = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    return _side(len(stream), insert_s, disk, len(found), query_s)


def _best_of(work: Any, runs: int = 5) -> tuple[Any, float]:
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - started)
    return result, best


def _side(events: int, insert_s: float, disk: int, found: int, query_s: float) -> dict[str, Any]:
    return {
        "events": events,
        "insert_s": round(insert_s, 4),
        "inserts_per_s": round(events / insert_s) if insert_s else None,
        "disk_bytes": disk,
        "bytes_per_event": round(disk / events, 1) if events else None,
        "query_rows": found,
        "query_ms": round(query_s * 1000, 3),
    }


def compare_peer(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    say(f"recording {args.stream_s:.0f} s of the bundled machine senses")
    stream = record_stream(args.stream_s, time.time_ns() - int(args.stream_s * 1e9))
    say(f"{len(stream)} observations; into nerve and into aw-core's SQLite storage")
    sides: dict[str, Any] = {
        "nerve": lambda n: nerve_side(work / f"nerve-log-{n}", stream, "os"),
        "nerve_fsync": lambda n: nerve_side(work / f"nerve-fsync-{n}", stream, "fsync"),
        "nerve_table": lambda n: nerve_side(
            work / f"nerve-table-{n}", stream, "os", "append_columns"
        ),
    }
    if importlib.util.find_spec("aw_datastore") is not None:
        sides["aw"] = lambda n: aw_side(work / f"aw-{n}.db", stream)
        sides["aw_eager"] = lambda n: aw_side(work / f"aw-eager-{n}.db", stream, lazy_commit=False)
    else:
        say("aw-core is not installed: `pip install -e '.[bench]'`")
    best = _fastest(sides)
    nerve, nerve_fsync, nerve_table = best["nerve"], best["nerve_fsync"], best["nerve_table"]
    aw, aw_eager = best.get("aw"), best.get("aw_eager")
    codecs = codec_trials(work / "nerve-log-0")
    out: dict[str, Any] = {
        "stream_events": len(stream),
        "nerve": nerve,
        "nerve_fsync": nerve_fsync,
        "nerve_table": nerve_table,
        "aw": aw,
        "aw_eager": aw_eager,
        "codecs": codecs,
    }
    if aw and aw_eager:
        rate = lambda side, peer: _ratio(side["inserts_per_s"], peer["inserts_per_s"])  # noqa: E731
        out["ratios"] = {
            "bytes_per_event": _ratio(nerve["bytes_per_event"], aw["bytes_per_event"]),
            # like for like only: what each side promises on a crash is the same
            "insert_rate": rate(nerve, aw),  # OS-buffered: nerve `os`, aw-core lazy commits
            "insert_rate_durable": rate(nerve_fsync, aw_eager),  # fsync / a commit per insert
            "insert_rate_table": rate(nerve_table, aw),
            "query_latency": _ratio(nerve["query_ms"], aw["query_ms"]),
        }
        out["same_rows"] = nerve["query_rows"] == aw["query_rows"] == aw_eager["query_rows"]
    return out


def _fastest(sides: dict[str, Any], runs: int = INSERT_RUNS) -> dict[str, dict[str, Any]]:
    """Each side's run (into a fresh store each time) whose inserts took least time: a
    store's first run also pays one-time costs (imports, caches), which a replay should
    not. The sides take turns, run by run, so a change in the machine's load falls on all
    of them alike rather than on whichever ran then."""
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for n in range(runs):
        for name, side in sides.items():
            results[name].append(side(n))
    return {name: min(runs_, key=lambda r: r["insert_s"]) for name, runs_ in results.items()}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


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
        ("  as run (a restart every run)", f"{dk['disk_mb_per_day_as_run']} MB", ""),
    ]
    for name, value, goal in rows:
        print(f"{name:<36} {value:>14}  {goal}", file=out)
    for proc in d["uss_by_process"]:
        print(f"  {proc['role']:<20} pid {proc['pid']:>7} {proc['uss_mib']:>7} MiB", file=out)
    print("events by kind: " + json.dumps(lg["kinds"], sort_keys=True), file=out)
    print("disk per day by kind and subject, MB (each group's own bytes):", file=out)
    for group, mb in dk["mb_per_day_by_group"].items():
        print(f"  {group:<36} {mb:>8}", file=out)
    render_peer(result["peer"], out)


def render_peer(peer: dict[str, Any], out: TextIO) -> None:
    print(f"\none recorded stream of {peer['stream_events']} observations", file=out)
    print(
        f"{'store':<22} {'bytes/event':>12} {'inserts/s':>11} {'last hour of cpu, ms':>21}",
        file=out,
    )
    sides = [("nerve", peer["nerve"]), ("nerve (fsync)", peer["nerve_fsync"])]
    sides += [("nerve (rows returned)", peer["nerve_table"])]
    if peer["aw"]:
        sides += [("aw-core sqlite", peer["aw"]), ("aw-core, commit each", peer["aw_eager"])]
    for name, side in sides:
        figures = f"{side['bytes_per_event']:>12} {side['inserts_per_s']:>11,}"
        print(f"{name:<22} {figures} {side['query_ms']:>21}", file=out)
    if peer.get("ratios"):
        r = peer["ratios"]
        print(
            f"nerve / aw-core: bytes {r['bytes_per_event']} (goal <= 0.5), "
            f"query {r['query_latency']} (<= 1); insert rate, like for like (>= 1):",
            file=out,
        )
        for line in _insert_lines(r):
            print("  " + line, file=out)
    else:
        print("aw-core not installed: `.venv/bin/pip install -e '.[bench]'`", file=out)
    codecs = peer["codecs"]
    print(f"segment writer trials ({codecs['rows']} events), bytes/event:", file=out)
    for name, value in codecs["bytes_per_event"].items():
        print(f"  {name:<30} {value:>8}", file=out)


def _insert_lines(r: dict[str, Any]) -> list[str]:
    """The insert ratios, each between two sides that promise the same on a crash."""
    return [
        f"durable: nerve `fsync` / aw-core a commit per insert: {r['insert_rate_durable']} "
        "(both: an acknowledged insert survives a crash and a power loss)",
        f"buffered: nerve `os` / aw-core lazy commits: {r['insert_rate']} (nerve: a process "
        "crash loses nothing acknowledged, a power loss may lose what the OS had not written; "
        "aw-core: a crash loses up to 50 inserts not yet committed)",
        f"nerve `os` with rows returned (append_columns) / aw-core lazy: {r['insert_rate_table']}",
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--seconds", type=float, help="how long the daemon runs")
    parser.add_argument("--sample-s", type=float, help="seconds between samples")
    parser.add_argument("--stream-s", type=float, help="seconds of senses recorded for the peer")
    parser.add_argument("--quick", action="store_true", help="60 s, a sample every 5 s")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    return sized(args, QUICK, DEFAULTS)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    with workdir("nerve-footprint-", keep=args.keep) as work:
        result = {"seconds": args.seconds, "sample_s": args.sample_s, "stream_s": args.stream_s}
        result |= measure_daemon(work, args)
        result["peer"] = peer = compare_peer(work, args)
        result["checks"]["codec_trials_readable"] = all(peer["codecs"]["readable"].values())
        if peer["aw"] is not None:
            result["checks"]["peer_same_rows"] = peer["same_rows"] and peer["aw"]["query_rows"] > 0
    result["goals"] = GOALS
    result["load_avg_1m"] = load_avg_1m()
    result["failed_checks"] = failed_checks(result["checks"])
    render(result, out)
    return finish(result, out)


if __name__ == "__main__":
    sys.exit(main())
