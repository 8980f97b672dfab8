"""The randomised partition suite of ``nerve sync``: runs of 3-5 devices (real daemons) and
real servers under partitions, kills, pauses, clock skew and repeated boxes, each checked to
converge with no acknowledged event lost or doubled.

    .venv/bin/python bench/sync_partition_bench.py --runs 20 --seed 1
    .venv/bin/python bench/sync_partition_bench.py --runs 10 --seed 1 --transport s3
    .venv/bin/python bench/sync_partition_bench.py --quick        # 1 short run, 3 devices

Run ``k`` uses seed ``S + k``; a run and its schedule are decided by that seed alone (what
the machine's timing does to it is not). Each run: a fresh three-node NATS cluster (servers
killed, paused, restarted) or a fresh prefix of one SeaweedFS bucket (paused), devices
reaching it through fault-injecting proxies, a seeded schedule of emits and faults, then
everything healed and a bounded wait (see ``tests/helpers/partition_run.py``). A failed
run prints its seed, schedule and each device's history to stderr. Exits 1 if a run failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.partition import nats_place
from tests.helpers.partition_run import PlaceFactory, RunReport, run, s3_places

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, say, sized, workdir


def devices_range(text: str) -> tuple[int, int]:
    """``3..5`` or ``4``: the least and most devices of a run."""
    low, _, high = text.partition("..")
    return int(low), int(high or low)


@contextlib.contextmanager
def places(transport: str, folder: Path) -> Iterator[PlaceFactory]:
    """What each run's servers are: a fresh NATS cluster per run, or one SeaweedFS."""
    if transport == "nats":
        yield lambda run_folder, seed: nats_place(run_folder / "nats")
        return
    from tests.helpers.seaweed import seaweed

    with seaweed(folder / "s3", bucket="sync") as server:
        os.environ.update(server.env)  # the daemons inherit the bucket's keys
        with s3_places(server) as factory:
            yield factory


def main(argv: list[str] | None = None) -> int:
    parser = new_parser(__doc__)
    parser.add_argument("--runs", type=int, default=None, help="runs (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first run")
    parser.add_argument("--transport", choices=("nats", "s3"), default="nats")
    parser.add_argument("--devices", type=devices_range, default=None, help="3..5")
    parser.add_argument("--steps", type=int, default=None, help="schedule steps (default 40)")
    parser.add_argument("--heal-s", type=float, default=120.0, help="bound on the wait")
    parser.add_argument("--quick", action="store_true", help="1 run of 3 devices, 15 steps")
    parser.add_argument("--keep", action="store_true", help="keep the folders")
    args = sized(
        parser.parse_args(argv),
        {"runs": 1, "devices": (3, 3), "steps": 15},
        {"runs": 20, "devices": (3, 5), "steps": 40},
    )
    reports: list[RunReport] = []
    with (
        workdir("sync-partition-", keep=args.keep) as folder,
        places(args.transport, folder) as place_of,
    ):
        for k in range(args.runs):
            seed = args.seed + k
            report = run(
                seed,
                folder / f"run{seed}",
                place_of,
                devices=args.devices,
                steps=args.steps,
                heal_s=args.heal_s,
            )
            reports.append(report)
            say(_line(report))
            if not report.passed:
                print(report.text(), file=sys.stderr, flush=True)
    return finish(_result(args, reports))


def _line(report: RunReport) -> str:
    verdict = "passed" if report.passed else "FAILED"
    return (
        f"seed {report.seed}: {verdict}, {report.devices} devices, {report.acked} acked, "
        f"{report.kills} daemon kills, {report.failed_rounds} failed rounds, "
        f"converged in {report.converge_s} s, {report.seconds:.1f} s"
    )


def _result(args: argparse.Namespace, reports: list[RunReport]) -> dict[str, object]:
    seconds = [r.seconds for r in reports]
    passed = sum(r.passed for r in reports)
    converge = [r.converge_s for r in reports if r.converge_s is not None]
    print(f"{'runs':<28}{len(reports):>10}")
    print(f"{'passed':<28}{passed:>10}")
    print(f"{'seconds per run (mean)':<28}{statistics.fmean(seconds or [0]):>10.1f}")
    return {
        "transport": args.transport,
        "seed": args.seed,
        "runs": len(reports),
        "devices": list(args.devices),
        "steps": args.steps,
        "passed": passed,
        "failed": len(reports) - passed,
        "failed_seeds": [r.seed for r in reports if not r.passed],
        "acked": sum(r.acked for r in reports),
        "daemon_kills": sum(r.kills for r in reports),
        "failed_rounds": sum(r.failed_rounds for r in reports),
        "seconds_per_run": round(statistics.fmean(seconds or [0]), 1),
        "seconds_max": round(max(seconds or [0]), 1),
        "converge_s_max": max(converge or [0]),
        "checks": {"every_run_passed": passed == len(reports) and bool(reports)},
    }


if __name__ == "__main__":
    raise SystemExit(main())
