"""SIGKILL a real writer process at random instants; shared by the crash test and bench.

Each writer is forked from one warm process (:mod:`tests.helpers.forked`).
"""

from __future__ import annotations

import collections
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from nerve.log.reader import events_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from tests.helpers import crash_writer, forked


@dataclass
class CrashTally:
    kills: int = 0
    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    by_step: collections.Counter[str] = field(default_factory=collections.Counter)
    problems: list[str] = field(default_factory=list)


def kill_once(root: Path, round_no: int, rng: random.Random) -> tuple[list[str], str]:
    """Run a writer, kill it at a random instant; (acknowledged lines, step it was in)."""
    writer = forked.start(crash_writer.main, root, round_no)
    head = writer.read(60)  # the writer has acknowledged something: it has opened the log
    time.sleep(rng.uniform(0.0, 0.25))
    code, rest, err = writer.kill()
    # 255: the fork server could not report the status (it lost the race with the kill under
    # load); a writer that failed on its own says so on stderr, which must then be empty.
    if code != -signal.SIGKILL and not (code == 255 and not err):
        raise AssertionError(f"writer exited {code}: {err.decode()[-2000:]}")
    # Only whole lines were acknowledged: the last one may be cut mid-write.
    lines = (head + rest).decode().split("\n")[:-1]
    step = "append"
    for line in reversed(lines):
        if line.startswith("#"):
            step = "append" if line == "#done" else line[1:]
            break
    return [x for x in lines if x and not x.startswith("#")], step


def crash_rounds(root: Path, rounds: int, seed: int) -> CrashTally:
    rng = random.Random(seed)
    tally = CrashTally()
    acked: list[str] = []
    for round_no in range(rounds):
        lines, step = kill_once(root, seed * 100_000 + round_no, rng)
        acked += lines
        tally.kills += 1
        tally.by_step[step] += 1
    with EventLog(root, node="check"):
        pass  # a writer opens after the last kill, as a restarted daemon would
    counts = collections.Counter(e.line for e in events_since(root))
    tally.acked = len(acked)
    tally.duplicated = sum(1 for n in counts.values() if n > 1)
    tally.lost = len(set(acked) - set(counts))
    report = verify(root)
    tally.problems = [str(p) for p in report.problems]
    return tally
