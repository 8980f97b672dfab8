"""nerve's event log against its peers: one generated stream, the same work, one run.

    .venv/bin/python bench/log_bench.py [--events N] [--query-events M] [--quick]
                                        [--rounds R] [--profile]

Every writer stamps the same HLCs (a clock whose wall reading moves 1 ms per batch), computes
the same blake3 ids and makes each batch of 1,000 events durable with one fsync:

* nerve: ``EventLog.append_columns`` per batch (sealing inside the run), then ``seal()``;
* sqlite3 in WAL mode, ``synchronous=FULL``, ``executemany`` of 1,000 rows per transaction,
  with the ids (same work) and without them (the issue's reference figure);
* ``eventsourcing``'s ``SQLiteApplicationRecorder`` (``StoredEvent`` batches);
* JSON lines, flushed and fsynced every 1,000 lines.

Peers compute ids with nerve's batch path (``codec.build_table``), as nerve does; sqlite3 with
ids runs once more on the per-event reference path (``id_preimage`` + blake3) as a separate
row. Reads compare ``replay_digest`` with a bare Parquet read of the id column and with
SQLite's digest (every id fetched at once, hashed once; the row-by-row loop is a separate
row); ``verify`` with recomputing the ids alone on the batch path (the reference path is a
separate row); and one DuckDB GROUP BY over nerve's segments with the same query over one
Parquet file of the same rows. Each measurement keeps its best of ``--rounds`` interleaved
runs. The last stdout line is ``RESULT {json}``; progress goes to stderr; ``--profile`` adds
cProfile tables of nerve's paths there. The exit status is 1 when an internal check fails
(``ids_match``, ``verify_ok``, ``query_results_match``).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import json
import os
import pstats
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from pathlib import Path
from typing import Any, TextIO

import blake3
import duckdb
import pyarrow.parquet as pq

from nerve.clock import HybridClock
from nerve.events import cid, id_preimage
from nerve.log.codec import build_table, fixed_bytes, preimages
from nerve.log.fields import EventFields
from nerve.log.reader import replay_digest, snapshot
from nerve.log.store import EventLog
from nerve.log.verify import verify
from nerve.query import connect

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, workdir

BATCH = 1_000
QUERY_CHUNK = 100_000
SEAL_EVENTS = 100_000
WARM_BATCHES = 5
NODE = "bench"
KIND = "observation"
SUBJECTS = ("cpu", "disk", "net", "focus", "shell")
WALL_BASE = 1_750_000_000_000_000_000
TICK_NS = 1_000_000
QUERY = "SELECT source, kind, count(*), sum(length(line)) FROM {source} GROUP BY ALL"
QUICK = {"events": 50_000, "query_events": 1_000_000}
DEFAULTS = {"events": 1_000_000, "query_events": 10_000_000}
HAVE_EVENTSOURCING = importlib.util.find_spec("eventsourcing") is not None


# -- the stream ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Batch:
    """Already-encoded columns for one group commit (generated outside any timing)."""

    kind: list[str]
    subject: list[str]
    source: list[int]
    trust: list[int]
    valid_time_ns: list[int]
    payload: list[bytes]
    line: list[str]

    def __len__(self) -> int:
        return len(self.kind)

    def columns(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


def make_batch(start: int, count: int) -> Batch:
    idx = range(start, start + count)
    return Batch(
        kind=[KIND] * count,
        subject=[SUBJECTS[i % len(SUBJECTS)] for i in idx],
        source=[i % 10 for i in idx],
        trust=[i % 4 for i in idx],
        valid_time_ns=[WALL_BASE + i * 1_000 for i in idx],
        payload=[b'{"i":%d,"v":"x"}' % i for i in idx],
        line=[f"{SUBJECTS[i % len(SUBJECTS)]} reading {i % 1000}" for i in idx],
    )


def make_stream(events: int, size: int = BATCH) -> list[Batch]:
    return [make_batch(s, min(size, events - s)) for s in range(0, events, size)]


class TickingWall:
    """A wall clock that moves 1 ms per reading, so every writer stamps the same HLCs."""

    def __init__(self) -> None:
        self.now = WALL_BASE

    def __call__(self) -> int:
        self.now += TICK_NS
        return self.now


def bench_clock() -> HybridClock:
    return HybridClock(TickingWall())


# -- the id paths the peers run ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stamped:
    """One batch after the per-event reference path: stamps, payload cids, preimages, ids."""

    physical_ns: int
    first_logical: int
    cids: list[bytes]
    preimages: list[bytes]
    ids: list[bytes]

    def logicals(self) -> range:
        return range(self.first_logical, self.first_logical + len(self.ids))


def reference_ids(clock: HybridClock, b: Batch) -> Stamped:
    """Stamp a batch and compute every id one event at a time, as ``nerve.events`` does."""
    first = clock.reserve(len(b))
    p, lo = first
    cids = [cid(x) for x in b.payload]
    fields = zip(b.kind, b.subject, b.source, b.trust, b.valid_time_ns, cids, b.line, strict=True)
    pres = [id_preimage((p, lo + j), NODE, *f) for j, f in enumerate(fields)]
    return Stamped(p, lo, cids, pres, [cid(x) for x in pres])


def _split32(data: bytes) -> list[bytes]:
    return [data[i : i + 32] for i in range(0, len(data), 32)]


def batch_ids(clock: HybridClock, b: Batch, *, with_preimages: bool = False) -> Stamped:
    """Stamp a batch and compute its ids with nerve's batch path (``codec.build_table``)."""
    p, lo = clock.reserve(len(b))
    table = build_table((p, lo, len(b)), node=NODE, fields=EventFields(**b.columns()))
    pres = preimages(table).to_pylist() if with_preimages else []
    cids = _split32(fixed_bytes(table.column("payload_cid")))
    return Stamped(p, lo, cids, pres, _split32(fixed_bytes(table.column("id"))))


IdPath = Callable[[HybridClock, Batch], Stamped]


# -- append peers ----------------------------------------------------------------------------


def append_nerve(root: Path, batches: Sequence[Batch]) -> None:
    log = EventLog(
        root, node=NODE, durability="fsync", seal_max_events=SEAL_EVENTS, clock=bench_clock()
    )
    with log:
        for b in batches:
            log.append_columns(EventFields(**b.columns()))
        log.seal()


SQLITE_PRAGMAS = {"journal_mode": "wal", "synchronous": 2}  # 2 is FULL
SQLITE_TABLE = """CREATE TABLE events (
    seq INTEGER PRIMARY KEY, physical_ns INTEGER, logical INTEGER, node TEXT, kind TEXT,
    subject TEXT, source INTEGER, trust INTEGER, valid_time_ns INTEGER, payload_cid BLOB,
    payload BLOB, line TEXT, id BLOB)"""
SQLITE_WITH_IDS = (
    "INSERT INTO events (physical_ns, logical, node, kind, subject, source, trust, "
    "valid_time_ns, payload_cid, payload, line, id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
)
SQLITE_NO_IDS = (
    "INSERT INTO events (physical_ns, logical, node, kind, subject, source, trust, "
    "valid_time_ns, payload, line) VALUES (?,?,?,?,?,?,?,?,?,?)"
)


def sqlite_open(path: Path) -> sqlite3.Connection:
    """WAL with synchronous=FULL: the WAL is fsynced at every commit (checked here)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    pragmas = sqlite_pragmas(conn)
    if pragmas != SQLITE_PRAGMAS:
        conn.close()
        raise RuntimeError(f"{path}: sqlite3 refused the bench's settings: {pragmas}")
    conn.execute(SQLITE_TABLE)
    return conn


def sqlite_pragmas(conn: sqlite3.Connection) -> dict[str, Any]:
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    return {"journal_mode": mode, "synchronous": conn.execute("PRAGMA synchronous").fetchone()[0]}


def _rows_with_ids(clock: HybridClock, b: Batch, id_path: IdPath) -> list[tuple[Any, ...]]:
    s = id_path(clock, b)
    return list(
        zip(
            repeat(s.physical_ns), s.logicals(), repeat(NODE), b.kind, b.subject, b.source,
            b.trust, b.valid_time_ns, s.cids, b.payload, b.line, s.ids,
        )
    )  # fmt: skip


def _rows_without_ids(clock: HybridClock, b: Batch) -> list[tuple[Any, ...]]:
    p, lo = clock.reserve(len(b))
    return list(
        zip(
            repeat(p), range(lo, lo + len(b)), repeat(NODE), b.kind, b.subject, b.source,
            b.trust, b.valid_time_ns, b.payload, b.line,
        )
    )  # fmt: skip


def append_sqlite(path: Path, batches: Sequence[Batch], *, ids: IdPath | None) -> None:
    """``ids``: the id path (batch or per-event reference), or None to store no ids."""
    clock, conn = bench_clock(), sqlite_open(path)
    try:
        for b in batches:
            if ids is None:
                sql, rows = SQLITE_NO_IDS, _rows_without_ids(clock, b)
            else:
                sql, rows = SQLITE_WITH_IDS, _rows_with_ids(clock, b, ids)
            conn.execute("BEGIN")
            conn.executemany(sql, rows)
            conn.execute("COMMIT")
    finally:
        conn.close()


def append_eventsourcing(path: Path, batches: Sequence[Batch]) -> None:
    """The recorder level of ``eventsourcing``: one stream per subject, state = id+fields."""
    from eventsourcing.persistence import StoredEvent
    from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

    store = SQLiteDatastore(str(path), originator_id_type="text")
    recorder = SQLiteApplicationRecorder(store)
    recorder.create_table()
    clock, versions = bench_clock(), dict.fromkeys(SUBJECTS, 0)
    try:
        for b in batches:
            s = batch_ids(clock, b, with_preimages=True)
            stored = []
            for subject, pre, pay, eid in zip(
                b.subject, s.preimages, b.payload, s.ids, strict=True
            ):
                versions[subject] += 1
                stored.append(StoredEvent(subject, versions[subject], KIND, eid + pre + pay))
            recorder.insert_events(stored)
    finally:
        store.close()


def eventsourcing_pragmas(path: Path) -> dict[str, Any]:
    from eventsourcing.sqlite import SQLiteDatastore

    store = SQLiteDatastore(str(path), originator_id_type="text")
    try:
        with store.transaction(commit=False) as c:
            c.execute("PRAGMA journal_mode")
            mode = c.fetchone()[0]
            c.execute("PRAGMA synchronous")
            return {"journal_mode": mode, "synchronous": c.fetchone()[0]}
    finally:
        store.close()


def _json_lines(clock: HybridClock, b: Batch) -> str:
    s = batch_ids(clock, b)
    rows = zip(
        s.logicals(), b.subject, b.source, b.trust, b.valid_time_ns, b.payload, b.line, s.cids,
        s.ids, strict=True,
    )  # fmt: skip
    lines = [
        json.dumps(
            {
                "hlc": [s.physical_ns, lo], "node": NODE, "kind": KIND, "subject": subj,
                "source": src, "trust": tr, "valid_time_ns": vt, "payload": pay.decode(),
                "line": ln, "payload_cid": c.hex(), "id": eid.hex(),
            }
        )
        for lo, subj, src, tr, vt, pay, ln, c, eid in rows
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def append_jsonl(path: Path, batches: Sequence[Batch]) -> None:
    clock = bench_clock()
    with path.open("w", encoding="utf-8") as f:
        for b in batches:
            f.write(_json_lines(clock, b))
            f.flush()
            os.fsync(f.fileno())


def ids_reference(batches: Sequence[Batch]) -> list[bytes]:
    clock = bench_clock()
    return [b"".join(reference_ids(clock, b).ids) for b in batches]


def ids_nerve_batch(batches: Sequence[Batch]) -> None:
    clock = bench_clock()
    for b in batches:
        first = clock.reserve(len(b))
        build_table(
            (first.physical_ns, first.logical, len(b)), node=NODE, fields=EventFields(**b.columns())
        )


# -- reading back ----------------------------------------------------------------------------


def parquet_ids(files: Sequence[Path]) -> int:
    """The floor: read each segment's id column, hash nothing."""
    return sum(pq.read_table(f, columns=["id"]).num_rows for f in files)


def sqlite_digest(path: Path) -> tuple[int, str]:
    """What a competent user writes: fetch every id at once, hash the concatenation once."""
    conn = sqlite3.connect(path)
    try:
        ids = [row[0] for row in conn.execute("SELECT id FROM events ORDER BY seq").fetchall()]
    finally:
        conn.close()
    return len(ids), blake3.blake3(b"".join(ids)).hexdigest()


def sqlite_digest_row_by_row(path: Path) -> tuple[int, str]:
    """The same digest, hashed one row at a time in Python (the weaker, earlier peer)."""
    conn = sqlite3.connect(path)
    hasher, count = blake3.blake3(), 0
    try:
        for (eid,) in conn.execute("SELECT id FROM events ORDER BY seq"):
            hasher.update(eid)
            count += 1
    finally:
        conn.close()
    return count, hasher.hexdigest()


# -- the query -------------------------------------------------------------------------------


def build_query_log(root: Path, events: int, say: Callable[[str], None]) -> None:
    """M events in batches of 100k without fsync, then compacted into large segments."""
    with EventLog(root, node=NODE, durability="os", clock=bench_clock()) as log:
        for start in range(0, events, QUERY_CHUNK):
            log.append_columns(
                EventFields(**make_batch(start, min(QUERY_CHUNK, events - start)).columns())
            )
            if (start // QUERY_CHUNK) % 10 == 9:
                say(f"query log: {start + QUERY_CHUNK:,} of {events:,} events")
        log.seal()
        say("query log: compacting")
        log.compact()


def write_one_file(root: Path, path: Path) -> None:
    """The same rows, in the same order, as one Parquet file with pyarrow's defaults."""
    files = snapshot(root).files
    with pq.ParquetWriter(path, pq.read_schema(files[0])) as writer:
        for f in files:
            writer.write_table(pq.read_table(f))


def query_nerve(root: Path) -> list[tuple[Any, ...]]:
    conn = connect(root, [])
    try:
        return sorted(conn.execute(QUERY.format(source="events")).fetchall())
    finally:
        conn.close()


def query_one_file(path: Path) -> list[tuple[Any, ...]]:
    conn = duckdb.connect()
    try:
        source = "read_parquet('" + str(path).replace("'", "''") + "')"
        return sorted(conn.execute(QUERY.format(source=source)).fetchall())
    finally:
        conn.close()


# -- running ---------------------------------------------------------------------------------


def timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


# (rate key, file or folder name, writer): every writer the append rounds run, in order
APPENDERS: tuple[tuple[str, str, Callable[[Path, Sequence[Batch]], None]], ...] = (
    ("append.nerve", "nerve", append_nerve),
    ("append.sqlite_ids", "ids.db", partial(append_sqlite, ids=batch_ids)),
    ("append.sqlite_ids_reference", "ref.db", partial(append_sqlite, ids=reference_ids)),
    ("append.sqlite_no_ids", "plain.db", partial(append_sqlite, ids=None)),
    ("append.jsonl", "events.jsonl", append_jsonl),
    *((("append.eventsourcing", "es.db", append_eventsourcing),) if HAVE_EVENTSOURCING else ()),
)


@dataclass
class Bench:
    """One run: a temp folder, the sizes, and the best rate seen for each measurement.

    Every measurement runs ``rounds`` times, interleaved with its peers (all appends, then
    all appends again, ...), and keeps its best: other work on a small machine then slows
    one round of every peer rather than every round of one.
    """

    work: Path
    events: int
    query_events: int
    rounds: int = 3
    err: TextIO = sys.stderr
    profile: bool = False
    rates: dict[str, float | None] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        print(f"[bench] {text}", file=self.err, flush=True)

    def keep(self, key: str, count: int, fn: Callable[..., Any], *args: Any) -> Any:
        """Time one call, keep the best ``count / seconds`` under ``key``, return its result."""
        seconds, out = timed(fn, *args)
        rate = count / seconds
        self.rates[key] = max(rate, self.rates.get(key) or 0.0)
        self.say(f"{key}: {count:,} in {seconds:.3f} s = {rate:,.0f}/s")
        return out

    def run_profile(self, label: str, fn: Callable[..., Any], *args: Any) -> None:
        prof = cProfile.Profile()
        prof.runcall(fn, *args)
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(15)
        print(f"--- profile: {label} (by own time) ---\n{text.getvalue()}", file=self.err)


def warm_up(work: Path, batches: Sequence[Batch]) -> None:
    """A small pass over every path first, so no timed run pays for imports or first calls."""
    warm, few = work / "warm", batches[:WARM_BATCHES]
    warm.mkdir()
    for _, name, write in APPENDERS:
        write(warm / name, few)
    ids_reference(few)
    ids_nerve_batch(few)
    replay_digest(warm / "nerve")
    parquet_ids(snapshot(warm / "nerve").files)
    sqlite_digest(warm / "ids.db")
    sqlite_digest_row_by_row(warm / "ids.db")
    verify(warm / "nerve")
    shutil.rmtree(warm)


def run_appends(bench: Bench, batches: Sequence[Batch]) -> Path:
    """Append rounds; returns the folder of the last round, which the reads use."""
    n, folder = bench.events, bench.work / "round-0"
    for r in range(bench.rounds):
        bench.say(f"append round {r + 1} of {bench.rounds}: {n:,} events, fsync per {BATCH:,}")
        if r:
            shutil.rmtree(folder)
        folder = bench.work / f"round-{r}"
        folder.mkdir()
        for key, name, write in APPENDERS:
            bench.keep(key, n, write, folder / name, batches)
        ids = bench.keep("ids.reference", n, ids_reference, batches)
        bench.keep("ids.nerve_batch", n, ids_nerve_batch, batches)
    bench.checks["reference_digest"] = blake3.blake3(b"".join(ids)).hexdigest()
    bench.checks["segments"] = len(snapshot(folder / "nerve").files)
    return folder


def note_peers(bench: Bench, folder: Path) -> None:
    bench.checks["sqlite_pragmas"] = SQLITE_PRAGMAS
    if not HAVE_EVENTSOURCING:
        bench.rates["append.eventsourcing"] = None
        bench.notes.append("eventsourcing is not installed (pip install -e '.[bench]'): skipped")
        return
    bench.checks["eventsourcing_pragmas"] = eventsourcing_pragmas(folder / "es.db")
    bench.notes.append(
        "eventsourcing: SQLiteApplicationRecorder.insert_events (recorder level, no aggregate "
        "objects), one stream per subject, state = id + id preimage + payload; its "
        "insert runs one execute per event, as the library does"
    )


def run_reads(bench: Bench, folder: Path) -> None:
    root, n = folder / "nerve", bench.events
    files = snapshot(root).files
    for r in range(bench.rounds):
        bench.say(f"read round {r + 1} of {bench.rounds}")
        digest = bench.keep("replay.nerve_digest", n, replay_digest, root)
        rows = bench.keep("replay.parquet_ids", n, parquet_ids, files)
        count, theirs = bench.keep("replay.sqlite_digest", n, sqlite_digest, folder / "ids.db")
        slow = bench.keep(
            "replay.sqlite_digest_rows", n, sqlite_digest_row_by_row, folder / "ids.db"
        )
        report = bench.keep("verify.nerve", n, verify, root)
    reference_db = sqlite_digest(folder / "ref.db")[1]
    bench.checks.update(
        replay_events=digest.events,
        parquet_rows=rows,
        sqlite_rows=count,
        ids_match=digest.digest
        == theirs
        == slow[1]
        == reference_db
        == bench.checks["reference_digest"]
        and digest.events == count == rows == n,
        verify_ok=report.ok and report.digest == digest.digest,
    )


def run_query(bench: Bench) -> None:
    root, one, m = bench.work / "query", bench.work / "one.parquet", bench.query_events
    bench.say(f"building a {m:,}-event log for the query")
    seconds, _ = timed(build_query_log, root, m, bench.say)
    bench.say(f"query log built in {seconds:.1f} s; writing one Parquet file")
    write_one_file(root, one)
    for _ in range(bench.rounds):
        theirs = bench.keep("query.one_file", m, query_one_file, one)
        ours = bench.keep("query.nerve", m, query_nerve, root)
    bench.checks.update(
        query_segments=len(snapshot(root).files), query_results_match=ours == theirs
    )


def run_profiles(bench: Bench, batches: Sequence[Batch]) -> None:
    root = bench.work / "profiled"
    bench.run_profile("nerve append", append_nerve, root, batches)
    bench.run_profile("nerve replay_digest", replay_digest, root)
    bench.run_profile("nerve verify", verify, root)
    if bench.query_events:
        bench.run_profile("nerve query", query_nerve, bench.work / "query")


# -- the report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Goal:
    """``ours`` at least ``target`` times ``peer`` (or at least ``target``/s with no peer)."""

    name: str
    ours: str
    peer: str | None
    target: float

    def value(self, rates: dict[str, float | None]) -> float | None:
        ours = rates.get(self.ours)
        if ours is None:
            return None
        if self.peer is None:
            return ours
        peer = rates.get(self.peer)
        return ours / peer if peer else None

    def text(self) -> str:
        return f">= {self.target:,.0f}/s" if self.peer is None else f"nerve >= {self.target:.1f}x"


GOALS = (
    Goal(
        "append vs sqlite3 WAL executemany + batch ids (the same work)",
        "append.nerve",
        "append.sqlite_ids",
        1.0,
    ),
    Goal("append rate", "append.nerve", None, 300_000),
    Goal(
        "replay digest vs a bare Parquet read of the id column",
        "replay.nerve_digest",
        "replay.parquet_ids",
        0.3,
    ),
    Goal(
        "replay digest vs SQLite SELECT id (fetchall) + one blake3",
        "replay.nerve_digest",
        "replay.sqlite_digest",
        10,
    ),
    Goal(
        "verify vs recomputing the ids alone (batch path)",
        "verify.nerve",
        "ids.nerve_batch",
        0.5,
    ),
    Goal(
        "group-by vs the same query on one Parquet file",
        "query.nerve",
        "query.one_file",
        0.8,
    ),
)

# (section, [(label, rate key, the nerve key this row is compared with)])
LAYOUT: tuple[tuple[str, tuple[tuple[str, str, str | None], ...]], ...] = (
    (
        "append, fsync once per 1,000 events",
        (
            ("nerve append_columns (+ seal)", "append.nerve", None),
            ("sqlite3 WAL executemany + batch ids", "append.sqlite_ids", "append.nerve"),
            (
                "sqlite3 ... + per-event reference ids",
                "append.sqlite_ids_reference",
                "append.nerve",
            ),
            ("sqlite3 WAL executemany, no ids", "append.sqlite_no_ids", "append.nerve"),
            ("eventsourcing SQLite + batch ids", "append.eventsourcing", "append.nerve"),
            ("JSON lines + batch ids", "append.jsonl", "append.nerve"),
        ),
    ),
    (
        "ids only, no storage",
        (
            ("reference ids (per event)", "ids.reference", "append.nerve"),
            ("nerve batch ids (build_table)", "ids.nerve_batch", "append.nerve"),
        ),
    ),
    (
        "replay: every id back, in order",
        (
            ("nerve replay_digest", "replay.nerve_digest", None),
            ("bare Parquet read of id column", "replay.parquet_ids", "replay.nerve_digest"),
            ("SQLite SELECT id fetchall + one b3", "replay.sqlite_digest", "replay.nerve_digest"),
            (
                "SQLite SELECT id, b3 row by row",
                "replay.sqlite_digest_rows",
                "replay.nerve_digest",
            ),
        ),
    ),
    (
        "full verify",
        (
            ("nerve verify", "verify.nerve", None),
            ("nerve batch ids (build_table)", "ids.nerve_batch", "verify.nerve"),
            ("reference ids (per event)", "ids.reference", "verify.nerve"),
        ),
    ),
    (
        "query: source, kind, count, sum(length(line)) (rows/s)",
        (
            ("nerve events view (segments)", "query.nerve", None),
            ("one Parquet file", "query.one_file", "query.nerve"),
        ),
    ),
)


def goal_for(key: str, compare: str | None) -> Goal | None:
    """The goal a table row carries: nerve vs this peer, or nerve's own absolute rate."""
    wanted = (compare, key) if compare is not None else (key, None)
    return next((g for g in GOALS if (g.ours, g.peer) == wanted), None)


def _num(value: float | None, suffix: str) -> str:
    return "n/a" if value is None else f"{value:,.0f}{suffix}"


def table_line(label: str, key: str, compare: str | None, rates: dict[str, float | None]) -> str:
    rate, ours = rates.get(key), rates.get(compare) if compare else None
    ratio = f"{ours / rate:.2f}x" if ours and rate else "-"
    goal = goal_for(key, compare)
    target, met = ("-", "-") if goal is None else (goal.text(), _met(goal, rates))
    return f"  {label:<38} {_num(rate, '/s'):>16} {ratio:>10}  {target:<16} {met}"


def _met(goal: Goal, rates: dict[str, float | None]) -> str:
    value = goal.value(rates)
    return "n/a" if value is None else ("yes" if value >= goal.target else "NO")


CHECKS = ("ids_match", "verify_ok", "query_results_match")


def failed_checks(checks: dict[str, Any]) -> list[str]:
    """The internal checks that ran and did not hold (a failed one makes the exit status 1)."""
    return [name for name in CHECKS if name in checks and checks[name] is not True]


def _figure(goal: Goal, value: float) -> str:
    return f"{value:,.0f}/s" if goal.peer is None else f"{value:.2f}x"


def goal_line(goal: Goal, rates: dict[str, float | None]) -> str:
    value = goal.value(rates)
    shown = "n/a" if value is None else _figure(goal, value)
    return f"  {goal.name}: {shown} (goal {goal.text()}: {_met(goal, rates)})"


def render(bench: Bench, out: TextIO) -> None:
    head = f"  {'measurement':<38} {'events/s':>16} {'nerve ÷':>10}  {'goal':<16} met?"
    print(f"nerve log bench: {bench.events:,} events, query over {bench.query_events:,}", file=out)
    print(head, file=out)
    for section, rows in LAYOUT:
        print(section, file=out)
        for label, key, compare in rows:
            if key in bench.rates:
                print(table_line(label, key, compare, bench.rates), file=out)
    print("goals (nerve ÷ the named peer, same run):", file=out)
    for goal in GOALS:
        print(goal_line(goal, bench.rates), file=out)
    for name in CHECKS:
        if name in bench.checks:
            print(f"check {name}: {bench.checks[name]}", file=out)
    for note in bench.notes:
        print(f"note: {note}", file=out)


def summary(bench: Bench) -> dict[str, Any]:
    rates = bench.rates
    goals = [
        {"name": g.name, "value": g.value(rates), "target": g.target, "met": _met(g, rates)}
        for g in GOALS
    ]
    return {
        "events": bench.events,
        "query_events": bench.query_events,
        "batch": BATCH,
        "rounds": bench.rounds,
        "rates": {k: None if v is None else round(v) for k, v in rates.items()},
        "goals": goals,
        "checks": bench.checks,
        "failed_checks": failed_checks(bench.checks),
        "notes": bench.notes,
    }


def run(bench: Bench) -> dict[str, Any]:
    bench.say(f"generating {bench.events:,} events in batches of {BATCH:,}")
    batches = make_stream(bench.events)
    warm_up(bench.work, batches)
    folder = run_appends(bench, batches)
    note_peers(bench, folder)
    run_reads(bench, folder)
    if bench.query_events:
        run_query(bench)
    if bench.profile:
        run_profiles(bench, batches)
    return summary(bench)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--events", type=int, help="events to append (default 1,000,000)")
    parser.add_argument("--query-events", type=int, help="rows for the query (default 10M)")
    parser.add_argument("--quick", action="store_true", help="50k events, 1M query rows")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved runs, best kept")
    parser.add_argument("--profile", action="store_true", help="cProfile nerve's paths to stderr")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else DEFAULTS
    args.events = args.events or sizes["events"]
    args.query_events = sizes["query_events"] if args.query_events is None else args.query_events
    return args


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    with workdir("nerve-bench-") as work:
        bench = Bench(work, args.events, args.query_events, args.rounds, profile=args.profile)
        result = run(bench)
    render(bench, out)
    return finish(result, out)


if __name__ == "__main__":
    sys.exit(main())
