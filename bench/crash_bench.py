"""SIGKILL a real writer hundreds of times: every acknowledged event survives exactly once.

    .venv/bin/python bench/crash_bench.py [--kills N] [--logs L] [--quick]

Each log gets its own sequence of writer processes (``tests/helpers/crash_writer.py``, each
forked from one warm process: ``tests/helpers/forked.py``) that append small batches, seal and
compact often, and print each event once its append returned; each is killed with SIGKILL at
a random instant after its first acknowledgement. After the
last kill a writer opens the log (as a restarted daemon would) and the bench counts what was
acknowledged, lost and duplicated, and runs ``verify``. Exits 1 if anything was lost or
duplicated, or verify found a problem. The last stdout line is ``RESULT {json}``.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.crash_util import CrashTally, crash_rounds

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser


def main(argv: list[str] | None = None) -> int:
    parser = new_parser(__doc__)
    parser.add_argument("--kills", type=int, default=None, help="total kills (default 520)")
    parser.add_argument("--logs", type=int, default=2, help="logs killed side by side")
    parser.add_argument("--quick", action="store_true", help="20 kills, for tests")
    args = parser.parse_args(argv)
    kills = args.kills if args.kills is not None else (20 if args.quick else 520)
    per_log = max(1, kills // args.logs)
    tallies: dict[int, CrashTally] = {}
    errors: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nerve-crash-") as tmp:

        def run(seed: int) -> None:
            try:
                tallies[seed] = crash_rounds(Path(tmp) / f"log{seed}", per_log, seed)
            except Exception as exc:  # reported in the result
                errors.append(f"log {seed}: {exc}")

        threads = [threading.Thread(target=run, args=(s,)) for s in range(1, args.logs + 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    total = CrashTally()
    for tally in tallies.values():
        total.kills += tally.kills
        total.acked += tally.acked
        total.lost += tally.lost
        total.duplicated += tally.duplicated
        total.by_step.update(tally.by_step)
        total.problems += tally.problems
    seconds = time.monotonic() - started
    print(f"{'kills':<28}{total.kills:>12,}")
    for step in ("append", "seal", "compact"):
        print(f"{'  landed in ' + step:<28}{total.by_step[step]:>12,}")
    print(f"{'events acknowledged':<28}{total.acked:>12,}")
    print(f"{'lost':<28}{total.lost:>12,}")
    print(f"{'duplicated':<28}{total.duplicated:>12,}")
    print(f"{'verify problems':<28}{len(total.problems):>12,}")
    print(f"{'seconds':<28}{seconds:>12.1f}")
    checks = {
        "rounds_ran": not errors,
        "nothing_lost": total.lost == 0,
        "nothing_duplicated": total.duplicated == 0,
        "verify_ok": not total.problems,
    }
    failed = [name for name, ok in checks.items() if not ok]
    result = {
        "kills": total.kills,
        "by_step": dict(total.by_step),
        "acked": total.acked,
        "lost": total.lost,
        "duplicated": total.duplicated,
        "problems": total.problems[:10],
        "errors": errors,
        "checks": checks,
        "failed_checks": failed,
        "seconds": round(seconds, 1),
    }
    return finish(result)


if __name__ == "__main__":
    raise SystemExit(main())
