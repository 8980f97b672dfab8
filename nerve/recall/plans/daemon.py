"""Plans about nerve's own daemon: when it started and stopped (``daemon.started`` /
``daemon.stopped``), whether it is running by the log's account, and which senses reported
(``sense.state``). One answer holds all of it: a person asking "is nerve running?" is helped
by when it started and stopped, and "which senses ran?" by when.
"""

from __future__ import annotations

import re

from nerve.recall.plans.log import Found, Reader
from nerve.recall.plans.parse import Plan

__all__ = ["daemon"]

_RUNS = (
    "SELECT kind, physical_ns, id, line FROM events "
    "WHERE kind IN ('daemon.started', 'daemon.stopped') ORDER BY physical_ns, logical"
)
_SENSES = "SELECT DISTINCT subject FROM events WHERE kind = 'sense.state' ORDER BY subject"


def daemon(reader: Reader, plan: Plan) -> Found:
    """Each run of the daemon the log records, the newest last, and the senses that reported."""
    marks = reader.conn.execute(_RUNS).fetchall()
    if not marks:
        return Found("The log records no start or stop of nerve's daemon, so I cannot say when "
                     "it ran.", answered=False)  # fmt: skip
    runs, cited = [], []
    for kind, t, eid, line in marks:
        cited.append(bytes(eid).hex())
        if kind == "daemon.started":
            pid = re.search(r"\(pid \d+\)", str(line))
            runs.append(f"started at {reader.when(int(t))}" + (f" {pid[0]}" if pid else ""))
        elif runs and "stopped" not in runs[-1]:
            runs[-1] += f", stopped at {reader.when(int(t))}"
        else:
            runs.append(f"stopped at {reader.when(int(t))}")
    state = ("it is not running now: its last record is a stop" if marks[-1][0] == "daemon.stopped"
             else "no stop is recorded after its last start, so it is running (or ended "
             "without a clean stop)")  # fmt: skip
    senses = [str(s) for (s,) in reader.conn.execute(_SENSES).fetchall() if s]
    text = "nerve's daemon " + "; then ".join(runs) + f"; {state}."
    if senses:
        text += f" Senses that reported: {', '.join(senses)}."
    return Found(text, tuple(cited[-6:]))
