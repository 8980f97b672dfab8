"""`nerve fleet` at the scale where Iceberg tables break: many hosts, one table.

    .venv/bin/python bench/fleet_scale_bench.py [--hosts 1000] [--catalog rest|sql]
                                                [--rows 200] [--hour-s 240] [--workers 8]
                                                [--quick] [--keep]

``--hosts`` simulated hosts (real nerve workspaces, each with its own host name and audit
key, ``--rows`` events per ship) ship to one table on SeaweedFS S3 on loopback, with its
Iceberg REST catalog (``rest``, SigV4-signed, an S3 Tables bucket) or a SQLite catalog
(``sql``). In compressed time:

1. **an hour of ships**: each host ships once at its own slot of an ``--hour-s``-second
   "hour" (the offset ``fleet.ship_interval`` gives it), ``--workers`` ships at most at once,
   while a scheduled maintain runs every quarter of the hour (as ``maintain_interval`` would);
2. **a stampede**: every host seals one more segment (stamped "now") and all ship at once;
3. **maintain** (keep nothing older, no grace), then **query** ``--since 1h`` (the stampede's
   hour) and **verify** every host; then one host's file is deleted and another's head is
   rolled back, and verify must catch both.

All hosts ship from this one process, which is one committer for them (ships that wait
for its commit hand it their request; see ``nerve/fleet/group.py``).

Reported: ships/s (``commits_per_s``), ship latency p50/p99, lost races per ship p50/p99
(``conflicts``) and commits a ship had to try again (``retries``),
metadata.json size and snapshot count before and after maintain, manifests, the query's
plan time and files read, verify's time, peak memory (RSS) after each phase, the load
average. Checks (exit 1 when one fails): no segment lost or duplicated, no failed ship,
every host verifies after maintain, both tamperings caught, metadata.json ≤ 1 MB after
maintain, the query reads ≤ 2x the files of its hour. The latency and retry goals
(p99 ≤ 2 s, ≤ 1 retry per commit at p99) are reported under ``goals``.
Ends with one line ``RESULT {json}``; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, load_avg_1m, new_parser, say, sized, workdir

IN_FLIGHT_S = 60.0  # the shortest grace a maintain running beside ships is given
QUICK = {"hosts": 6, "rows": 50, "hour_s": 3.0, "workers": 4}
DEFAULTS = {"hosts": 1000, "rows": 200, "hour_s": 240.0, "workers": 8}
HOUR_NS = 3600 * 10**9
METADATA_GOAL, SHIP_P99_GOAL_S, CONFLICT_P99_GOAL, QUERY_FACTOR = 1_000_000, 2.0, 1, 2


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def pct(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def build_hosts(work: Path, count: int, rows: int, settings: dict[str, Any]) -> list[Any]:
    """``count`` workspaces, each with one sealed segment of the hour before last."""
    from tests.helpers.fleet import make_host

    hosts = []
    for index in range(count):
        name = f"h{index:05d}"
        hosts.append(make_host(work / "hosts" / name, name, rows=rows, ages_h=(1.5,), **settings))
        if index and index % 200 == 0:
            say(f"built {index} hosts")
    return hosts


def cpu_s(server: Any = None) -> float:
    """CPU seconds used so far by this process (every thread), plus the storage server's
    process group when given (it runs on the same cores): a figure load does not inflate."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    total = usage.ru_utime + usage.ru_stime
    if server is not None:
        total += server_cpu_s(server.process.pid)
    return total


def server_cpu_s(pid: int) -> float:
    """utime + stime of ``pid`` and the processes of its group, from /proc (Linux)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pid or int(stat.parent.name) == pid:  # field 5: process group
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def ship_timed(ws: Any) -> dict[str, Any]:
    from nerve.errors import NerveError
    from nerve.fleet.ship import ship

    started = time.perf_counter()
    try:
        result = ship(ws)
    except NerveError as exc:
        return {"ok": False, "error": str(exc), "seconds": time.perf_counter() - started}
    return {
        "ok": True,
        "seconds": result.seconds,
        "conflicts": result.conflicts,
        "retries": result.retries,
        "steps": result.timings,
    }


def jittered_round(
    hosts: list[Any], hour_s: float, workers: int, maintains: list[Any]
) -> tuple[float, list[Any]]:
    """Each host ships at its slot of the compressed hour (its ``ship_interval`` offset),
    while a scheduled maintain runs every quarter of it (as ``maintain_interval: 900``
    would), keeping a quarter's snapshots."""
    import threading

    from nerve.runtime.shipper import slot_offset

    start = time.perf_counter()
    order = sorted(hosts, key=lambda ws: slot_offset(ws.root.name, 3600))
    futures = []
    done = threading.Event()
    upkeep = threading.Thread(
        target=scheduled_maintain, args=(hosts[0], hour_s / 4, done, maintains)
    )
    upkeep.start()
    try:
        with ThreadPoolExecutor(workers) as pool:
            for ws in order:
                due = start + slot_offset(ws.root.name, 3600) / 3600 * hour_s
                time.sleep(max(0.0, due - time.perf_counter()))
                futures.append(pool.submit(ship_timed, ws))
            results = [f.result() for f in futures]
    finally:
        done.set()
        upkeep.join()
    return time.perf_counter() - start, results


def scheduled_maintain(ws: Any, every_s: float, done: Any, out: list[Any]) -> None:
    """``fleet maintain`` every ``every_s`` until ``done``, through a warehouse of its own."""
    from nerve.fleet.maintain import maintain
    from nerve.fleet.warehouse import open_warehouse, resolve

    wh = open_warehouse(resolve(ws.config.fleet, ws.data))
    # The hour is compressed, a commit in flight is not: an orphan younger than this may be
    # a manifest a ship has written and not yet committed (a quick run's 0.75 s was not).
    grace_s = max(every_s, IN_FLIGHT_S)
    while not done.wait(every_s):
        wh.refresh()
        out.append(maintain(wh, keep_s=every_s, grace_s=grace_s).to_json())


def stampede(hosts: list[Any], rows: int, workers: int) -> tuple[float, list[Any]]:
    from tests.helpers.fleet import add_segment

    for ws in hosts:
        add_segment(ws, rows=rows)
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(ship_timed, hosts))
    return time.perf_counter() - start, results


def cpu_per_ship(before: tuple[float, float], server: Any, ships: int) -> dict[str, float]:
    """CPU seconds per ship since ``before``: nerve's (this process) and with the storage
    server's (SeaweedFS: S3 and the REST catalog) added."""
    ours, both = cpu_s() - before[0], cpu_s(server) - before[1]
    return {
        "cpu_s_per_ship": round(ours / ships, 4),
        "cpu_s_per_ship_with_server": round(both / ships, 4),
    }


def ship_figures(seconds: float, results: list[Any]) -> dict[str, Any]:
    good = [r for r in results if r["ok"]]
    return {
        "ships": len(results),
        "failed": len(results) - len(good),
        "errors": sorted({r["error"] for r in results if not r["ok"]})[:3],
        "seconds": round(seconds, 2),
        "commits_per_s": round(len(good) / seconds, 2) if seconds else 0.0,
        "ship_p50_s": round(pct([r["seconds"] for r in good], 0.50), 3),
        "ship_p99_s": round(pct([r["seconds"] for r in good], 0.99), 3),
        "conflicts_p50": pct([r["conflicts"] for r in good], 0.50),
        "conflicts_p99": pct([r["conflicts"] for r in good], 0.99),
        "conflicts_max": max((r["conflicts"] for r in good), default=0),
        "retries_p50": pct([r["retries"] for r in good], 0.50),
        "retries_p99": pct([r["retries"] for r in good], 0.99),
        "steps_mean_s": _mean_steps(good),
        "commits": sum(1 for r in good if "group_hosts" in r["steps"]),  # the others were taken
    }


def _mean_steps(results: list[Any]) -> dict[str, float]:
    """Mean seconds per ship step, over the ships that worked."""
    sums: Counter[str] = Counter()
    for r in results:
        sums.update({k: v for k, v in r["steps"].items() if k != "group_hosts"})
    return {k: round(v / len(results), 3) for k, v in sums.items()} if results else {}


def registered_counts(wh: Any, hosts: list[Any]) -> tuple[int, int]:
    """(lost, duplicated) segments: each host's live segments against the table's files."""
    from nerve.fleet.warehouse import host_of, segment_name
    from nerve.log.manifest import read_manifest

    wh.refresh()
    seen = Counter((host_of(f.file_path), segment_name(f.file_path)) for f in wh.data_files())
    wanted = {
        (ws.root.name, s.name)
        for ws in hosts
        for s in read_manifest(ws.log_root / "manifest.jsonl").segments()
    }
    lost = sum(1 for key in wanted if key not in seen)
    duplicated = sum(n - 1 for n in seen.values() if n > 1) + sum(
        1 for key in seen if key not in wanted
    )
    return lost, duplicated


def table_figures(wh: Any) -> dict[str, Any]:
    from nerve.fleet.maintain import metadata_bytes

    wh.refresh()
    snapshot = wh.table.current_snapshot()
    return {
        "metadata_bytes": metadata_bytes(wh),
        "snapshots": len(wh.table.metadata.snapshots),
        "manifests": len(snapshot.manifests(wh.table.io)) if snapshot else 0,
        "files": len(wh.data_files()),
    }


def tamper_caught(wh: Any, hosts: list[Any], old_head: bytes, trust: Path) -> dict[str, bool]:
    """One host's file deleted, another's head rolled back: verify names both."""
    from nerve.fleet.verify import verify_fleet
    from nerve.fleet.warehouse import host_of

    victim, rolled = hosts[0].root.name, hosts[-1].root.name
    path = next(f.file_path for f in wh.data_files() if host_of(f.file_path) == victim)
    wh.delete(path)
    wh.write(f"{wh.host_dir(rolled)}/head.json", old_head)
    reports = {r.host: r for r in verify_fleet(wh, trust, hosts=[victim, rolled])}
    return {
        "deleted_file_caught": [k for k, _ in reports[victim].problems] == ["missing"],
        "rolled_back_head_caught": [k for k, _ in reports[rolled].problems] == ["rolled-back"],
    }


def fleet_settings(s3: Any, work: Path, catalog: str) -> dict[str, Any]:
    from tests.helpers.seaweed import table_bucket

    settings: dict[str, Any] = {"endpoint": s3.endpoint}
    if catalog == "rest":
        settings["warehouse"] = table_bucket(s3, "fleet-scale")
        settings |= {"catalog": s3.catalog, "rest_signing": "s3tables"}
        settings["files"] = f"s3://{s3.bucket}/scale"
    else:
        settings["warehouse"] = f"s3://{s3.bucket}/scale"
        settings["catalog"] = f"sqlite:///{work / 'catalog.db'}"
    return settings


def measure(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    from nerve.fleet.maintain import maintain
    from nerve.fleet.query import plan
    from nerve.fleet.setup import init_fleet
    from nerve.fleet.verify import verify_fleet
    from tests.helpers.seaweed import seaweed

    result: dict[str, Any] = {"hosts": args.hosts, "rows": args.rows, "catalog": args.catalog}
    result |= {"hour_s": args.hour_s, "workers": args.workers}
    with seaweed(work / "seaweed", iceberg=args.catalog == "rest") as s3:
        os.environ.update(s3.env)
        settings = fleet_settings(s3, work, args.catalog)
        started = time.perf_counter()
        hosts = build_hosts(work, args.hosts, args.rows, settings)
        result["build_s"] = round(time.perf_counter() - started, 1)
        warehouse = settings.pop("warehouse")
        _, wh = init_fleet(hosts[0], {"warehouse": warehouse, **settings, "host": "h00000"})
        say(f"{args.hosts} hosts built in {result['build_s']} s; the jittered hour")
        maintains: list[Any] = []
        cpu = (cpu_s(), cpu_s(s3))
        result["hour"] = ship_figures(*jittered_round(hosts, args.hour_s, args.workers, maintains))
        result["hour"] |= cpu_per_ship(cpu, s3, args.hosts)
        result["hour"]["maintains"] = len(maintains)
        result["hour"]["metadata_bytes_max"] = max(
            (m["metadata_bytes_before"] for m in maintains), default=0
        )
        result["peak_rss_mb_ships"] = peak_rss_mb()
        trust = work / "verifier"
        old_head = wh.read(f"{wh.host_dir(hosts[-1].root.name)}/head.json") or b""
        say(f"hour: {result['hour']}; the stampede")
        cpu = (cpu_s(), cpu_s(s3))
        result["stampede"] = ship_figures(*stampede(hosts, args.rows, args.workers))
        result["stampede"] |= cpu_per_ship(cpu, s3, args.hosts)
        say(f"stampede: {result['stampede']}")
        result["before_maintain"] = table_figures(wh)
        started = time.perf_counter()
        maintain(wh, keep_s=0, grace_s=0)
        result["maintain_s"] = round(time.perf_counter() - started, 2)
        result["after_maintain"] = table_figures(wh)
        result["peak_rss_mb_maintain"] = peak_rss_mb()
        result["lost"], result["duplicated"] = registered_counts(wh, hosts)
        started = time.perf_counter()
        fleet = plan(wh, since_ns=time.time_ns() - HOUR_NS)
        result["query_plan_s"] = round(time.perf_counter() - started, 3)
        result["query_files_read"], result["query_files_total"] = fleet.read, fleet.total
        started = time.perf_counter()
        reports = verify_fleet(wh, trust)
        result["verify_s"] = round(time.perf_counter() - started, 2)
        result["verify_ok"] = len(reports) == args.hosts and all(r.ok for r in reports)
        result["verify_failed"] = [r.host for r in reports if not r.ok][:5]
        result["peak_rss_mb_verify"] = peak_rss_mb()
        result["tamper"] = tamper_caught(wh, hosts, old_head, trust)
    return result


def judge(result: dict[str, Any]) -> None:
    hour, stamp = result["hour"], result["stampede"]
    result["metadata_bytes"] = result["after_maintain"]["metadata_bytes"]
    good = [h for h in (hour, stamp) if h["ships"] > h["failed"]]
    result["ship_p99_s"] = max((h["ship_p99_s"] for h in good), default=0.0)
    result["conflicts_p99"] = max((h["conflicts_p99"] for h in good), default=0)
    result["retries_p99"] = max((h["retries_p99"] for h in good), default=0)
    result["checks"] = {
        "nothing_lost": result["lost"] == 0,
        "nothing_duplicated": result["duplicated"] == 0,
        "no_failed_ship": hour["failed"] == 0 and stamp["failed"] == 0,
        "every_host_verifies_after_maintain": result["verify_ok"],
        "a_deleted_file_is_caught": result["tamper"]["deleted_file_caught"],
        "a_rolled_back_head_is_caught": result["tamper"]["rolled_back_head_caught"],
        "metadata_at_most_1mb": result["metadata_bytes"] <= METADATA_GOAL,
        "query_reads_at_most_2x_its_hour": result["query_files_read"]
        <= QUERY_FACTOR * result["hosts"],
    }
    result["goals"] = {
        "ship_p99_at_most_2s": result["ship_p99_s"] <= SHIP_P99_GOAL_S,
        "retries_p99_at_most_1": result["retries_p99"] <= CONFLICT_P99_GOAL,
    }


def render(result: dict[str, Any], out: TextIO) -> None:
    for phase in ("hour", "stampede"):
        f = result[phase]
        print(
            f"{phase}: {f['ships']} ships in {f['seconds']} s ({f['commits_per_s']} commits/s), "
            f"{f['failed']} failed; ship p50 {f['ship_p50_s']} s, p99 {f['ship_p99_s']} s; "
            f"lost races p50 {f['conflicts_p50']}, p99 {f['conflicts_p99']}, "
            f"max {f['conflicts_max']}; retries p99 {f['retries_p99']}; CPU per ship "
            f"{f['cpu_s_per_ship']} s (with the server {f['cpu_s_per_ship_with_server']} s)",
            file=out,
        )
    b, a = result["before_maintain"], result["after_maintain"]
    print(
        f"maintain ({result['maintain_s']} s): metadata.json {b['metadata_bytes']} -> "
        f"{a['metadata_bytes']} B, snapshots {b['snapshots']} -> {a['snapshots']}, "
        f"manifests {b['manifests']} -> {a['manifests']}, files {a['files']}",
        file=out,
    )
    print(
        f"query --since 1h: plan {result['query_plan_s']} s, reads {result['query_files_read']} "
        f"of {result['query_files_total']} files; verify {result['hosts']} hosts: "
        f"{result['verify_s']} s, ok={result['verify_ok']}; lost {result['lost']}, "
        f"duplicated {result['duplicated']}; load {result['load_avg_1m']}",
        file=out,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--hosts", type=int)
    parser.add_argument("--catalog", choices=("rest", "sql"), default="rest")
    parser.add_argument("--rows", type=int, help="events per host per ship")
    parser.add_argument("--hour-s", type=float, help="seconds the compressed hour lasts")
    parser.add_argument("--workers", type=int, help="ships under way at once at most")
    parser.add_argument("--quick", action="store_true", help="6 hosts, a 3-second hour")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    return sized(args, QUICK, DEFAULTS)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    with workdir("nerve-fleet-scale-", keep=args.keep) as work:
        os.environ.setdefault("XDG_STATE_HOME", str(work / "state"))
        result = measure(work, args)
    result["load_avg_1m"] = load_avg_1m()
    judge(result)
    result["failed_checks"] = failed_checks(result["checks"])
    render(result, out)
    return finish(result, out)


if __name__ == "__main__":
    sys.exit(main())
