"""Plans about nerve's own daemon: when it started (on which workspace) and stopped
(``daemon.started`` / ``daemon.stopped``) and how long it ran, whether it is running by the
log's account, the memory its process used (the processes sense's samples of its pid), how
many observations the senses recorded, and which senses reported (``sense.state``). One
answer holds all of it: a person asking "is nerve running?" is helped by when it started and
stopped, and "which senses ran?" by when.
"""

from __future__ import annotations

import re

from nerve.recall.plans.log import Found, Reader
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.things import length, peak_memory_of

__all__ = ["daemon"]

_RUNS = (
    "SELECT kind, physical_ns, id, line, json_extract_string(data, '$.workspace') FROM events "
    "WHERE kind IN ('daemon.started', 'daemon.stopped') ORDER BY physical_ns, logical"
)
_SENSES = "SELECT DISTINCT subject FROM events WHERE kind = 'sense.state' ORDER BY subject"


def daemon(reader: Reader, plan: Plan) -> Found:
    """Each run of the daemon the log records, the newest last, and the senses that reported."""
    marks = reader.conn.execute(_RUNS).fetchall()
    if not marks:
        return Found("The log records no start or stop of nerve's daemon, so I cannot say when "
                     "it ran.", answered=False)  # fmt: skip
    runs, cited, pids, began, folders = [], [], [], None, []
    for kind, t, eid, line, folder in marks:
        cited.append(bytes(eid).hex())
        if kind == "daemon.started":
            pid = re.search(r"\(pid (\d+)\)", str(line))
            pids += [int(pid[1])] if pid else []
            runs.append(f"started at {reader.when(int(t))}" + (f" {pid[0]}" if pid else ""))
            folders += [str(folder)] if folder else []
            began = int(t)
        elif runs and began is not None:
            runs[-1] += f", stopped at {reader.when(int(t))} (up {length(int(t) - began)})"
            began = None
        else:
            runs.append(f"stopped at {reader.when(int(t))}")
    state = ("it is not running now: its last record is a stop" if marks[-1][0] == "daemon.stopped"
             else "no stop is recorded after its last start, so it is running (or ended "
             "without a clean stop)")  # fmt: skip
    senses = [str(s) for (s,) in reader.conn.execute(_SENSES).fetchall() if s]
    text = "nerve's daemon " + "; then ".join(runs) + f"; {state}."
    if folders:
        text += f" It watched the workspace {folders[-1]}."
    if senses:
        text += f" Senses that reported: {', '.join(senses)}."
    text += _memory(reader, pids[-1:], cited) + _observations(reader)
    return Found(text, tuple(cited[-6:]))


def _memory(reader: Reader, pids: list[int], cited: list[str]) -> str:
    """The memory the daemon's newest process used at its peak, from its samples ("" if none)."""
    peak = peak_memory_of(reader, pids[0]) if pids else None
    if peak is None:
        return ""
    cited.append(peak[0].id)
    return f" Its process used at most {peak[1]} of memory (at {reader.when(peak[0].t)})."


def _observations(reader: Reader) -> str:
    """How many observations the senses recorded, in the whole log."""
    row = reader.conn.execute("SELECT count(*) FROM events WHERE kind = 'observation'").fetchone()
    return f" The senses recorded {int(row[0]) if row else 0} observations in all."
