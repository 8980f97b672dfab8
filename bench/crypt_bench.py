"""Encryption at rest against the plain log: the same events, the same work, one run.

    .venv/bin/python bench/crypt_bench.py [--appends N] [--query-events M] [--rounds R]
                                          [--quick]

Two logs, one plain and one encrypted (``nerve.log.crypt``), written with the same clock so
they hold the same events (the same ids, the same replay digest):

* durable append: N single-event appends, each fsynced (``append_drafts``), events/s;
* a GROUP BY over M events through ``nerve.query.connect`` (a fresh connection and cold
  caches each round: the encrypted log pays its decryption every time);
* ``verify`` with the key: every id, address and the manifest chain;
* bytes on disk under the log's folder.

Each timing keeps the best of ``--rounds`` interleaved runs. Checks: the same digest and
query result both ways, verify clean, and the goals append ≥ 0.8× plain, query ≤ 2×,
verify ≤ 1.3×, bytes ≤ 1.05×. With ``--quick`` the three timing goals are reported under
``goals_met`` but are not checks: at its sizes (a tenth of a second per run) they measure
the machine's load more than encryption, and the suite's run must not fail on a busy host.
The last stdout line is ``RESULT {json}``; progress goes to stderr; the exit status is 1
when a check fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nerve import encfs
from nerve.clock import HybridClock
from nerve.log import crypt
from nerve.log import segments as seg
from nerve.log.drafts import Draft
from nerve.log.fields import EventFields
from nerve.log.reader import replay_digest
from nerve.log.store import EventLog
from nerve.log.verify import verify
from nerve.query import connect

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, say, sized, workdir

NODE = "bench"
WALL_BASE = 1_750_000_000_000_000_000
CHUNK = 100_000
TURN = 25
SUBJECTS = ("cpu", "disk", "net", "focus", "shell")
QUERY = "SELECT source, kind, count(*), sum(length(line)) FROM events GROUP BY ALL ORDER BY ALL"
QUICK = {"appends": 200, "query_events": 50_000, "rounds": 5}
DEFAULTS = {"appends": 2_000, "query_events": 1_000_000, "rounds": 3}
GOALS = {"append": 0.8, "query": 2.0, "verify": 1.3, "bytes": 1.05}


class TickingWall:
    """A wall clock that moves 1 ms per reading: both logs stamp the same HLCs."""

    def __init__(self) -> None:
        self.now = WALL_BASE

    def __call__(self) -> int:
        self.now += 1_000_000
        return self.now


def batch(start: int, count: int) -> dict[str, Any]:
    idx = range(start, start + count)
    return {
        "kind": ["observation"] * count,
        "subject": [SUBJECTS[i % len(SUBJECTS)] for i in idx],
        "source": [i % 10 for i in idx],
        "trust": [i % 4 for i in idx],
        "valid_time_ns": [WALL_BASE + i * 1_000 for i in idx],
        "payload": [b'{"i":%d,"v":"x"}' % i for i in idx],
        "line": [f"{SUBJECTS[i % len(SUBJECTS)]} reading {i % 1000}" for i in idx],
    }


def make_log(root: Path, encrypted: bool) -> None:
    if encrypted:
        crypt.new_keyring(root, b"k" * 32, crypt.file_source())


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = work()
    return time.perf_counter() - start, value


def appends(roots: dict[str, Path], count: int) -> dict[str, float]:
    """Seconds each log takes for ``count`` single-event appends, each durable (fsync)
    before the next; the logs take turns every ``TURN`` appends, so a change of load on
    the machine falls on both."""
    drafts = [Draft.of(source=1, line=f"command {i} ran", payload={"i": i}) for i in range(count)]
    spent = dict.fromkeys(roots, 0.0)
    logs = {name: EventLog(root, node=NODE, durability="fsync") for name, root in roots.items()}
    try:
        for start in range(0, count, TURN):
            for name, log in logs.items():
                began = time.perf_counter()
                for draft in drafts[start : start + TURN]:
                    log.append_drafts([draft])
                spent[name] += time.perf_counter() - began
    finally:
        for log in logs.values():
            log.close()
    return spent


def build_query_log(root: Path, events: int) -> None:
    clock = HybridClock(TickingWall())
    with EventLog(root, node=NODE, durability="os", clock=clock) as log:
        for start in range(0, events, CHUNK):
            log.append_columns(EventFields(**batch(start, min(CHUNK, events - start))))
        log.seal()
        log.compact()


def cold_query(root: Path) -> list[tuple[Any, ...]]:
    """A fresh connection with nothing decrypted yet, then the GROUP BY."""
    encfs._SHARED = None
    seg._CACHE.clear()
    conn = connect(root)
    try:
        return conn.execute(QUERY).fetchall()
    finally:
        conn.close()


def disk_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and p.name != "LOCK")


def best(rounds: int, works: dict[str, Callable[[], float]]) -> dict[str, float]:
    """The best of ``rounds`` interleaved runs of each work (each returns seconds)."""
    found: dict[str, float] = {}
    for _ in range(rounds):
        for name, work in works.items():
            found[name] = min(found.get(name, float("inf")), work())
    return found


def run(args: argparse.Namespace, tmp: Path, say: Callable[[str], None]) -> dict[str, Any]:
    logs = {"plain": tmp / "plain", "encrypted": tmp / "encrypted"}
    for name, root in logs.items():
        make_log(root, name == "encrypted")

    say(f"durable appends: {args.appends:,} each way x {args.rounds}")
    append_s: dict[str, float] = {}
    for round_ in range(args.rounds):
        roots = {name: tmp / f"append-{name}-{round_}" for name in logs}
        for name, root in roots.items():
            make_log(root, name == "encrypted")
        for name, spent in appends(roots, args.appends).items():
            append_s[name] = min(append_s.get(name, float("inf")), spent)
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)
    say(f"query logs: {args.query_events:,} events each")
    for root in logs.values():
        build_query_log(root, args.query_events)
    answers = {n: cold_query(r) for n, r in logs.items()}
    query_s = best(
        args.rounds, {n: (lambda r=r: timed(lambda: cold_query(r))[0]) for n, r in logs.items()}
    )
    say("verify")
    reports = {n: verify(r) for n, r in logs.items()}
    verify_s = best(
        args.rounds, {n: (lambda r=r: timed(lambda: verify(r))[0]) for n, r in logs.items()}
    )
    sizes = {n: disk_bytes(r) for n, r in logs.items()}
    digests = {n: replay_digest(r).digest for n, r in logs.items()}
    return figures(args, append_s, query_s, verify_s, sizes, digests, answers, reports)


def figures(
    args: argparse.Namespace,
    append_s: dict[str, float],
    query_s: dict[str, float],
    verify_s: dict[str, float],
    sizes: dict[str, int],
    digests: dict[str, str],
    answers: dict[str, Any],
    reports: dict[str, Any],
) -> dict[str, Any]:
    ratios = {
        "append": append_s["plain"] / append_s["encrypted"],  # throughput: higher is better
        "query": query_s["encrypted"] / query_s["plain"],
        "verify": verify_s["encrypted"] / verify_s["plain"],
        "bytes": sizes["encrypted"] / sizes["plain"],
    }
    goals = {
        "append_ratio_ok": ratios["append"] >= GOALS["append"],
        "query_ratio_ok": ratios["query"] <= GOALS["query"],
        "verify_ratio_ok": ratios["verify"] <= GOALS["verify"],
    }
    checks: dict[str, Any] = {
        **({} if args.quick else goals),
        "bytes_ratio_ok": ratios["bytes"] <= GOALS["bytes"],
        "same_digest": digests["plain"] == digests["encrypted"],
        "same_answer": answers["plain"] == answers["encrypted"],
        "verify_ok": all(r.ok for r in reports.values()),
    }
    return {
        "appends": args.appends,
        "query_events": args.query_events,
        "rounds": args.rounds,
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "append_per_s": {n: round(args.appends / s, 1) for n, s in append_s.items()},
        "query_s": {n: round(s, 4) for n, s in query_s.items()},
        "verify_s": {n: round(s, 4) for n, s in verify_s.items()},
        "bytes": sizes,
        "ratios": {n: round(r, 3) for n, r in ratios.items()},
        "goals": GOALS,
        "goals_met": goals,
        "checks": checks,
        "failed_checks": [name for name, ok in checks.items() if ok is False],
    }


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = new_parser(__doc__)
    p.add_argument("--quick", action="store_true", help="small sizes (the test suite's run)")
    p.add_argument("--appends", type=int)
    p.add_argument("--query-events", type=int)
    p.add_argument("--rounds", type=int)
    args = p.parse_args(argv)
    return sized(args, QUICK, DEFAULTS)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    with workdir("crypt-bench-") as tmp:
        result = run(args, tmp, say)
    r = result["ratios"]
    say(
        f"append {result['append_per_s']} ({r['append']}x of plain, goal >= {GOALS['append']})\n"
        f"query  {result['query_s']} s ({r['query']}x, goal <= {GOALS['query']})\n"
        f"verify {result['verify_s']} s ({r['verify']}x, goal <= {GOALS['verify']})\n"
        f"bytes  {result['bytes']} ({r['bytes']}x, goal <= {GOALS['bytes']})\n"
        f"load average {result['load_avg']}"
    )
    return finish(result)


if __name__ == "__main__":
    sys.exit(main())
