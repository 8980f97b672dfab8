"""Fork children that read and verify a log, each leaving through a normal interpreter exit.

usage: python exit_stress.py LOG_ROOT RUNS PARALLEL

Everything is imported once here, then each child is forked: hundreds of runs stay cheap,
and each child still ends with ``sys.exit``, the interpreter shutdown that used to abort
(never ``os._exit``, which would skip it). Prints ``exit-code:count`` pairs, e.g. ``0:240``
or ``-6:2 0:238`` (-6: killed by SIGABRT); exits 1 if any child did not exit 0.
"""

from __future__ import annotations

import collections
import gc
import os
import sys
from pathlib import Path

import pyarrow.dataset  # noqa: F401  (the parquet reader's lazy import, done once here)

from nerve.log.reader import replay_digest
from nerve.log.verify import verify


def work(root: Path) -> int:
    """What a reading process does: the replay digest, then a full verify, last of all."""
    digest = replay_digest(root)
    report = verify(root)
    return 0 if report.ok and report.digest == digest.digest else 3


def spawn(root: Path, cpu: int) -> None:
    sys.stdout.flush()
    if os.fork() == 0:
        # One CPU for the whole child (threads started later inherit it): a worker thread
        # then waits for the main thread's time slice, as it does on a loaded machine.
        os.sched_setaffinity(0, {cpu})
        sys.exit(work(root))  # in the child: unwinds to the top of the script, a normal exit


def main() -> int:
    root, runs, parallel = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    cpus = sorted(os.sched_getaffinity(0))
    codes: collections.Counter[int] = collections.Counter()
    running = 0
    # What is imported so far is shared with every child. Frozen, the collector's passes skip
    # it, so a child's exit no longer walks (and so copies) every object of the parent: ~0.21
    # s of CPU a child becomes ~0.08 s. The exit is the same: sys.exit, interpreter
    # finalization, Arrow's worker threads winding down.
    gc.freeze()
    for run in range(runs):
        if running == parallel:
            codes[os.waitstatus_to_exitcode(os.wait()[1])] += 1
            running -= 1
        spawn(root, cpus[run % len(cpus)])
        running += 1
    for _ in range(running):
        codes[os.waitstatus_to_exitcode(os.wait()[1])] += 1
    print(" ".join(f"{code}:{n}" for code, n in sorted(codes.items())))
    return 0 if set(codes) == {0} else 1


if __name__ == "__main__":
    sys.exit(main())
