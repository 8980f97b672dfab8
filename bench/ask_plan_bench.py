"""`nerve ask` by parts (issue 41): latency of the planned questions over a 30-day log.

    .venv/bin/python bench/ask_plan_bench.py [--days 30] [--rate 0.646] [--runs 5] [--quick]
        [--log DIR]

Builds a log of ``days`` × 86,400 × ``rate`` events (0.646 events/s is the footprint bench's
measured rate for the bundled senses), spread evenly over the days by ``valid_time_ns``
(the time every plan reads), in the senses' own payload shapes: cpu and load readings, memory
readings, processes' top samples (with a memory grower), shell commands through the hook
(exit status, duration), window focus changes, file changes, attention decisions and
``sense.state`` bookkeeping. It is appended with ``EventLog.append_columns``, sealed and
compacted. Then it asks the issue's example questions through ``nerve.recall.ask`` (a fresh
workspace and DuckDB connection each time, ``record=False``, ``now`` the log's last second)
and, as the floor, one hand-written DuckDB query per question over the same facts (a fresh
connection each time, so the floor pays the same open). Nothing routes ``ask`` through a
daemon: it reads the log's files with DuckDB whether or not one runs. A process keeps what it
read from each sealed segment (``nerve.recall.plans.memo``), so the first run of a question
(``first_*``: what a one-shot ``nerve ask`` pays, after the others warmed the page cache) is
timed apart from the ``--runs`` after it (p50 / p95: a long-lived process's, the daemon's or
the UI's). p50 / p95 are nearest rank over every question's runs; also the slowest question.
Each is given in CPU time too (``cpu_*``: the process's, DuckDB's threads included), which a
loaded machine inflates less than the wall clock.
Goal: p95 ≤ 300 ms. The last line is
``RESULT {json}``; the exit status is 1 when a question is not answered by a plan (a plan
saying the log does not cover the question's time, as a short ``--days`` log does not cover
07:42, counts as answered).

``--log DIR`` keeps the workspace in ``DIR``: the first run builds it there, later runs with
the same ``--days`` and ``--rate`` ask over it without building again (a 30-day log takes
minutes to build).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np

from nerve.canonical import canonical_json
from nerve.events import NERVE_SOURCE, SourceClass
from nerve.log.fields import EventFields
from nerve.log.store import EventLog
from nerve.recall import ask
from nerve.workspace import WorkspaceDir, init_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, say, sized, workdir

BATCH = 100_000
NS = 1_000_000_000
START = 1_777_593_600 * NS  # 2026-05-01 00:00 UTC
_CMDS = ("git status", "pytest -q", "make build", "ls -la", "vim README.md", "yes")
_APPS = (("xterm", "vim notes.md"), ("firefox", "Docs — Mozilla Firefox"),
         ("xterm", "build: make build"), ("code", "main.py — x"))  # fmt: skip
_MIB = 1024**2


def _cpu(i: int) -> tuple[str, int, str, str, dict[str, Any]]:
    load = (i % 400) / 100
    return ("observation", SourceClass.ENDPOINT, "cpu", f"cpu {i % 97}.0% load1 {load:.2f}",
            {"percent": i % 97, "load1": load})  # fmt: skip


def _memory(i: int) -> tuple[str, int, str, str, dict[str, Any]]:
    return ("observation", SourceClass.ENDPOINT, "memory", f"mem {i % 90}.0%",
            {"percent": i % 90, "used_bytes": (i % 90) * 160 * _MIB})  # fmt: skip


def _top(i: int) -> tuple[str, int, str, str, dict[str, Any]]:
    grow = {"pid": 7000 + i // 5000, "name": "python3", "cmdline": "python3 memgrow.py",
            "user": "u", "cpu_permille": 300, "rss_bytes": (i % 3000) * _MIB,
            "start_time": 1_777_000_000 + i // 5000}  # fmt: skip
    mypy = {"pid": 555, "name": "mypy", "cmdline": "mypy nerve", "user": "u", "cpu_permille": 5,
            "rss_bytes": 424 * _MIB, "start_time": 1_777_000_555}  # fmt: skip
    hog = {"pid": 888, "name": "yes", "cpu_permille": 980, "rss_bytes": 2 * _MIB,
           "start_time": 1_777_000_888}  # fmt: skip
    payload = {"event": "top", "interval_ms": 10_000, "cpu": [hog], "memory": [grow, mypy],
               "over": []}  # fmt: skip
    return ("observation", SourceClass.PROCESS_TREE, "processes", "top yes 98%", payload)


def _shell(i: int) -> tuple[str, int, str, str, dict[str, Any]]:
    cmd, code = _CMDS[i % len(_CMDS)], (0, 0, 2, 0, 1)[i % 5]
    payload = {"command": cmd, "exit": code, "duration_ms": 40 + i % 5000, "cwd": "/home/u"}
    return ("observation", SourceClass.SHELL, "shell", f"$ {cmd}", payload)


def _focus(i: int) -> tuple[str, int, str, str, dict[str, Any]]:
    app, title = _APPS[i % len(_APPS)]
    payload = {"event": "focus", "app": app, "title": title, "window": i % 9, "pid": 7}
    return ("observation", SourceClass.APP_FOCUS, "focus", f"focus {app}: {title}", payload)


def _file(i: int) -> tuple[str, int, str, str, dict[str, Any]]:
    path = f"src/mod_{i % 97}.py"
    return ("observation", SourceClass.FILE_CHANGE, "files", f"file modified {path}",
            {"path": path, "change": "modified"})  # fmt: skip


def _decision(i: int) -> tuple[str, int, str, str, dict[str, Any]]:
    outcome = ("surface", "hold:value", "hold:budget")[i % 3]
    payload = {"outcome": outcome, "probe": "value:memory.used_mib", "value_milli": i % 1000,
               "cost_milli": 400, "charged_uj": 0, "budget_before_uj": 1_000_000,
               "budget_after_uj": 1_000_000, "source_line": f"mem {i % 90}.0%"}  # fmt: skip
    return ("attention.decision", NERVE_SOURCE, "attention", f"{outcome}: memory", payload)


def _state(i: int) -> tuple[str, int, str, str, dict[str, Any]]:
    return ("sense.state", NERVE_SOURCE, "cpu", "", {"state": {"n": i}})


Maker = Callable[[int], tuple[str, int, str, str, dict[str, Any]]]
# (share, maker): roughly the bundled senses' mix in the footprint bench's day
MIX: list[tuple[int, Maker]] = [(20, _cpu), (15, _memory), (25, _top), (8, _shell),
                                (6, _focus), (12, _file), (2, _decision), (12, _state)]  # fmt: skip


def _columns(which: list[int], start: int, count: int, span_ns: int) -> EventFields:
    cols: dict[str, list[Any]] = {k: [] for k in ("kind", "subject", "source", "trust", "line")}
    payloads, times = [], []
    for offset, choice in enumerate(which):
        i = start + offset
        kind, source, subject, line, payload = MIX[choice][1](i)
        cols["kind"].append(kind)
        cols["subject"].append(subject)
        cols["source"].append(int(source))
        cols["trust"].append(1)
        cols["line"].append(line)
        payloads.append(canonical_json(payload))
        times.append(START + i * span_ns // count)
    return EventFields(**cols, payload=payloads, valid_time_ns=times)


def build_log(root: Path, count: int, span_ns: int) -> None:
    """``count`` events spread over ``span_ns`` from :data:`START`, sealed and compacted."""
    weights = np.array([m[0] for m in MIX], dtype=np.float64)
    plan = np.random.default_rng(41).choice(len(MIX), size=count, p=weights / weights.sum())
    with EventLog(root, node="bench", durability="os", seal_max_events=BATCH) as log:
        for start in range(0, count, BATCH):
            which = plan[start : start + BATCH].tolist()
            log.append_columns(_columns(which, start, count, span_ns))
            say(f"appended {min(start + BATCH, count):,}")
        log.seal()
        log.compact(target_rows=1_000_000)


def _questions(now: int) -> list[tuple[str, str, list[Any]]]:
    """The issue's examples, each with a hand-written query of the same facts (its floor)."""
    t = "coalesce(valid_time_ns, physical_ns)"
    minute = now - 4 * 60 * NS
    return [
        ("what happened at 07:42?", f"SELECT source, count(*) FROM events WHERE {t} >= ? "
         f"AND {t} < ? GROUP BY 1", [minute, minute + 60 * NS]),
        ("what was I doing between 07:41 and 07:43?", f"SELECT line FROM events WHERE "
         f"source IN (0, 1, 5) AND {t} >= ? AND {t} < ? ORDER BY {t}",
         [minute - 60 * NS, minute + 120 * NS]),
        ("what did I run 2 minutes ago?", f"SELECT line FROM events WHERE source = 5 AND {t} "
         "BETWEEN ? AND ?", [now - 150 * NS, now - 90 * NS]),
        ("which process used the most memory?", "SELECT max(payload) FROM events WHERE "
         "source = 3 AND kind = 'observation'", []),
        ("how much memory did memgrow.py use?", "SELECT max(payload) FROM events WHERE "
         "source = 3 AND kind = 'observation' AND line LIKE 'top%'", []),
        ("how long was I in vim?", f"SELECT {t}, line FROM events WHERE source = 1 "
         f"ORDER BY {t}", []),
        ("which window was I in before Firefox?", f"SELECT {t}, line FROM events WHERE "
         f"source = 1 ORDER BY {t}", []),
        ("what was the load average during the last 10 minutes?", "SELECT avg(TRY_CAST("
         f"json_extract(data, '$.load1') AS DOUBLE)) FROM events WHERE source = 8 AND "
         f"subject = 'cpu' AND {t} >= ?", [now - 600 * NS]),
        ("how busy was the machine today?", "SELECT avg(TRY_CAST(json_extract(data, "
         f"'$.percent') AS DOUBLE)) FROM events WHERE source = 8 AND subject = 'cpu' AND {t} >= ?",
         [now - (now - START) % (86_400 * NS)]),
        ("when did memory peak?", f"SELECT {t} FROM events WHERE source = 8 AND subject = "
         "'memory' ORDER BY TRY_CAST(json_extract(data, '$.percent') AS DOUBLE) DESC LIMIT 1", []),
        ("what's my exit code for make build?", "SELECT line FROM events WHERE source = 5 AND "
         "line LIKE '%make build%'", []),
        ("did the yes command finish?", "SELECT line FROM events WHERE source = 5 AND "
         "line LIKE '%yes%'", []),
        ("what got surfaced?", "SELECT line FROM events WHERE kind = 'attention.decision' AND "
         "line LIKE 'surface%'", []),
    ]  # fmt: skip


def _p50_p95(prefix: str, values: list[float]) -> dict[str, float]:
    """The median and the 95th percentile (nearest rank) of ``values``, keyed ``PREFIXp50_ms``."""
    return {
        f"{prefix}p50_ms": round(statistics.median(values), 1),
        f"{prefix}p95_ms": round(_percentile(values, 0.95), 1),
    }


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _timed(fn: Callable[[], Any], runs: int, cpu: list[float]) -> list[float]:
    """Each of ``runs`` runs' time, after one untimed run; their CPU time (the process's,
    DuckDB's threads too) appended to ``cpu``."""
    fn()  # warm the page cache and DuckDB's first-use costs once
    out = []
    for _ in range(runs):
        started, used = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - used) * 1000)
    return out


def _measure(root: Path, now: int, runs: int) -> dict[str, Any]:
    per: dict[str, dict[str, float]] = {}
    plan_ms: list[float] = []
    floor_ms: list[float] = []
    first_ms: list[float] = []
    plan_cpu: list[float] = []
    floor_cpu: list[float] = []
    first_cpu: list[float] = []
    unplanned = []
    for question, sql, args in _questions(now):

        def direct(q: str = question) -> Any:
            return ask(WorkspaceDir.at(root), q, record=False, now_ns=now, tz=UTC)

        def floor(s: str = sql, a: list[Any] = args) -> Any:
            conn = WorkspaceDir.at(root).connect()
            try:
                return conn.execute(s, a).fetchall()
            finally:
                conn.close()

        started, used = time.perf_counter(), time.process_time()
        result = direct()
        first = (time.perf_counter() - started) * 1000
        first_cpu.append((time.process_time() - used) * 1000)
        uncovered = result.text.startswith("Nothing was recorded ")  # a short --days log
        if not (result.intent or "").startswith("plan:") or not (result.answered or uncovered):
            unplanned.append(question)
        mine_cpu: list[float] = []
        hand_cpu: list[float] = []
        mine, hand = _timed(direct, runs, mine_cpu), _timed(floor, runs, hand_cpu)
        plan_cpu += mine_cpu
        floor_cpu += hand_cpu
        plan_ms += mine
        floor_ms += hand
        first_ms.append(first)
        per[question] = {"p50_ms": round(statistics.median(mine), 1),
                         "floor_p50_ms": round(statistics.median(hand), 1),
                         "first_ms": round(first, 1),
                         "cpu_p50_ms": round(statistics.median(mine_cpu), 1),
                         "floor_cpu_p50_ms": round(statistics.median(hand_cpu), 1)}  # fmt: skip
        say(f"{question!r}: {per[question]}")
    return {
        **_p50_p95("", plan_ms),
        **_p50_p95("floor_", floor_ms),
        **_p50_p95("first_", first_ms),
        **_p50_p95("cpu_", plan_cpu),
        **_p50_p95("floor_cpu_", floor_cpu),
        **_p50_p95("first_cpu_", first_cpu),
        "slowest": max(per, key=lambda q: per[q]["p50_ms"]),
        "questions": per,
        "unplanned": unplanned,
    }


def _kept_workspace(folder: Path, count: int, span_ns: int) -> Path:
    """The workspace in ``folder`` holding ``count`` events over ``span_ns``: built there the
    first time (its size noted in ``built.json`` once complete), reused after."""
    note, size = folder / "built.json", {"events": count, "span_ns": span_ns}
    if note.exists():
        if json.loads(note.read_text()) != size:
            raise SystemExit(f"{folder} holds another log ({note.read_text()}); pick a new --log")
        say(f"reusing the log in {folder}")
        return folder / "ws"
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"{folder} is not empty and holds no finished log")
    ws = init_workspace(folder / "ws")
    say(f"building {count:,} events over {span_ns // (86_400 * NS)} days in {folder}")
    build_log(ws.log_root, count, span_ns)
    note.write_text(json.dumps(size))
    return ws.root


def main(argv: list[str] | None = None) -> int:
    parser = new_parser(__doc__)
    parser.add_argument("--days", type=float)
    parser.add_argument("--rate", type=float, default=0.646)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--log", type=Path, help="build the workspace here once and reuse it")
    args = sized(parser.parse_args(argv), {"days": 1.0, "runs": 2}, {"days": 30.0, "runs": 5})
    span = int(args.days * 86_400) * NS
    count = max(1000, int(args.days * 86_400 * args.rate))
    now = START + span - NS
    if args.log is not None:
        figures = _measure(_kept_workspace(args.log, count, span), now, args.runs)
    else:
        with workdir("ask-plan", keep=args.keep) as folder:
            ws = init_workspace(folder / "ws")
            say(f"building {count:,} events over {args.days} days")
            build_log(ws.log_root, count, span)
            figures = _measure(ws.root, now, args.runs)
    result = {"days": args.days, "rate": args.rate, "events": count, "runs": args.runs,
              **figures, "goal_p95_ms": 300,
              "checks": {"every_question_planned": not figures["unplanned"]}}  # fmt: skip
    return finish(result)


if __name__ == "__main__":
    raise SystemExit(main())
