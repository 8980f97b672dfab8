"""`nerve forget` of 1% of events spread over a log, against `nerve compact` of the same log.

    .venv/bin/python bench/forget_bench.py [--events 1000000] [--segment-events 100000]
                                           [--quick] [--keep]

A temporary log of ``--events`` small events (payloads like ``{"i":123,"v":"x"}``), sealed
every ``--segment-events``; every 100th event is a ``shell`` command (``$ export
TOKEN=…``), so the 1% to forget is spread over every segment. The log is copied twice:

* **compact**: ``EventLog.compact`` merges every segment into one (reads and writes it all);
* **forget**: ``nerve.privacy.forget.apply`` of ``--source shell``, as the daemon or the CLI
  runs it: seal, select, write every segment again without those payloads and lines,
  append the ``payload.erased`` event and swap the segments in one manifest record.

One run of each, each on a fresh writer over its own copy (page cache warm for both: the
copies were just read). The goal is forget ≤ 1.5 × compact. Then it checks, on the forgotten
copy, that the replay digest before the erasure is the digest before the forget
(``digest_unchanged``), that ``verify`` is clean and reports the erasure
(``verify_clean``), and that exactly the shell events lost their payload and line, no other
(``exactly_selected_erased``); and that compaction kept the digest (``compact_digest``).
Ends with one line ``RESULT {json}``; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from nerve.log.fields import EventFields

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, load_avg_1m, new_parser, say, sized, workdir

QUICK = {"events": 50_000, "segment_events": 10_000}
DEFAULTS = {"events": 1_000_000, "segment_events": 100_000}
SHELL_EVERY = 100  # 1% of events
BATCH = 10_000
GOAL = 1.5


def build(root: Path, events: int, segment_events: int) -> None:
    """The log: batches appended as columns, sealed every ``segment_events``."""
    from nerve.log.store import EventLog

    with EventLog(root, node="bench", durability="os", seal_max_events=10**12) as log:
        for start in range(0, events, BATCH):
            count = min(BATCH, events - start)
            log.append_columns(EventFields(**_columns(start, count)))
            if (start + count) % segment_events == 0:
                log.seal()
        log.seal()


def _columns(start: int, count: int) -> dict[str, Any]:
    idx = range(start, start + count)
    shell = [i % SHELL_EVERY == 0 for i in idx]
    return {
        "kind": ["observation"] * count,
        "subject": [f"s{i % 7}" for i in idx],
        "source": [5 if s else 1 + i % 4 for s, i in zip(shell, idx, strict=True)],
        "trust": [i % 4 for i in idx],
        "valid_time_ns": [None] * count,
        "payload": [
            b'{"command":"export TOKEN=t%d"}' % i if s else b'{"i":%d,"v":"x"}' % i
            for s, i in zip(shell, idx, strict=True)
        ],
        "line": [
            f"$ export TOKEN=t{i}" if s else f"reading {i % 1000}"
            for s, i in zip(shell, idx, strict=True)
        ],
    }


def request() -> Any:
    """What is forgotten: every shell event."""
    from nerve.privacy.forget import Request
    from nerve.privacy.selection import Selection

    return Request(Selection(sources=(5,)), "bench")


def run_compact(root: Path) -> float:
    from nerve.log.store import EventLog

    with EventLog(root, node="bench", durability="os") as log:
        started = time.perf_counter()
        log.compact(target_rows=10**9)
        return time.perf_counter() - started


def run_forget(root: Path) -> tuple[float, dict[str, Any]]:
    from nerve.config.models import RetentionConfig
    from nerve.log.store import EventLog
    from nerve.privacy.forget import apply

    with EventLog(root, node="bench", durability="os") as log:
        started = time.perf_counter()
        result = apply(log, request(), RetentionConfig())
        return time.perf_counter() - started, result.to_json()


def shell_ids(root: Path) -> set[bytes]:
    import pyarrow.compute as pc

    from nerve.log.reader import snapshot, table_since

    table = table_since(snapshot(root), columns=["id", "source"])
    return set(table.filter(pc.equal(table.column("source"), 5)).column("id").to_pylist())


def erased_ids(root: Path) -> set[bytes]:
    import pyarrow.compute as pc

    from nerve.log.reader import snapshot, table_since

    table = table_since(snapshot(root), columns=["id", "line"])
    return set(table.filter(pc.is_null(table.column("line"))).column("id").to_pylist())


def measure(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    from nerve.log.reader import replay_digest
    from nerve.log.verify import verify

    base = work / "base"
    say(f"building a log of {args.events} events in segments of {args.segment_events}")
    started = time.perf_counter()
    build(base, args.events, args.segment_events)
    built_s = time.perf_counter() - started
    before = replay_digest(base)
    wanted = shell_ids(base)
    shutil.copytree(base, work / "compact")
    shutil.copytree(base, work / "forget")
    say("compact")
    compact_s = run_compact(work / "compact")
    say("forget")
    forget_s, forgot = run_forget(work / "forget")
    say("checking")
    after = replay_digest(work / "forget")
    report = verify(work / "forget")
    return {
        "events": args.events,
        "segment_events": args.segment_events,
        "segments": len(list((base / "segments").glob("*.parquet"))),
        "selected": len(wanted),
        "erased": forgot["erased"],
        "build_s": round(built_s, 3),
        "compact_s": round(compact_s, 3),
        "forget_s": round(forget_s, 3),
        "ratio": round(forget_s / compact_s, 3) if compact_s else None,
        "goal_ratio": GOAL,
        "digest": before.digest,
        "checks": {
            "digest_unchanged": bool(after.checkpoints)
            and after.checkpoints[0].digest == before.digest
            and after.checkpoints[0].events == before.events,
            "verify_clean": report.ok and bool(report.notes) and not report.warnings,
            "exactly_selected_erased": erased_ids(work / "forget") == wanted
            and forgot["erased"] == len(wanted),
            "compact_digest": replay_digest(work / "compact").digest == before.digest,
        },
    }


def render(result: dict[str, Any], out: TextIO) -> None:
    print(
        f"log: {result['events']} events in {result['segments']} segments; "
        f"forget takes {result['selected']} ({result['selected'] / result['events']:.1%})",
        file=out,
    )
    print(f"{'operation':<10} {'seconds':>9} {'events/s':>12}", file=out)
    for name in ("compact", "forget"):
        seconds = result[f"{name}_s"]
        rate = result["events"] / seconds if seconds else 0
        print(f"{name:<10} {seconds:>9.3f} {rate:>12,.0f}", file=out)
    print(f"forget / compact = {result['ratio']} (goal <= {GOAL})", file=out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--events", type=int)
    parser.add_argument("--segment-events", type=int)
    parser.add_argument("--quick", action="store_true", help="50k events")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    return sized(args, QUICK, DEFAULTS)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    with workdir("nerve-forget-", keep=args.keep) as work:
        result = measure(work, args)
    result["load_avg_1m"] = load_avg_1m()
    result["failed_checks"] = failed_checks(result["checks"])
    render(result, out)
    return finish(result, out)


if __name__ == "__main__":
    sys.exit(main())
