"""`nerve ask` latency over a large log (1M events by default).

    .venv/bin/python bench/ask_bench.py [--events N] [--runs R] [--quick] [--keep DIR]

Builds a workspace whose log holds a realistic mix of events — sense states (30%), resource
readings, process and network samples, file changes, shell commands, focus and system-log
lines, attention decisions — appended with ``EventLog.append_columns`` in batches of 100k
under ``durability: os``, then sealed and compacted. The workspace's ``recall.fallback`` is
a command (a Python one-liner that reads the envelope and prints a fixed answer). Then it
times three questions:

* ``tier0`` "which files changed recently?" — answered by Tier 0, no model call;
* ``open`` "why is the laptop fan so loud this afternoon?" — no term overlaps any line: a pure
  recency fill, escalated to the command;
* ``bm25`` "did git push fail again?" — hundreds of BM25 hits in the window, escalated;

each through ``nerve.recall.ask`` in-process (a fresh workspace and DuckDB connection per
run, so every run reads the log; the envelope build alone is timed too) and through the
``nerve ask`` CLI in a subprocess (interpreter start and imports included; ``nerve --help``
is timed as the start-up baseline). Questions run with ``record=False`` / ``--no-record`` so
every run sees the same log. One warm-up run per case (none with ``--quick``), then
``--runs`` timed ones: p50, p95 (nearest rank) and min. The load average before and after is
part of the result. The last line is ``RESULT {json}``; progress goes to stderr. ``--quick``
means 50k events and 3 runs unless ``--events`` or ``--runs`` says otherwise. The exit status
is 1 when an internal check fails: a question answered at another tier than expected, a CLI
run that fails, or a built log holding another number of events than asked for.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nerve.canonical import canonical_json
from nerve.events import NERVE_SOURCE, SourceClass
from nerve.log.fields import EventFields
from nerve.log.store import EventLog
from nerve.recall import ask, build_retrieval
from nerve.workspace import WorkspaceDir, init_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser

BATCH = 100_000
TIER0_QUESTION = "which files changed recently?"
OPEN_QUESTION = "why is the laptop fan so loud this afternoon?"
BM25_QUESTION = "did git push fail again?"
FALLBACK_SCRIPT = "import sys; sys.stdin.read(); print('the fan follows the cpu load')"

# (share of events, kind, source, trust, subject, line maker, payload maker)
Maker = Callable[[int], str]
_DIRS = ("src/nerve", "src/nerve/log", "tests", "docs", "bench", "notes")
_CMDS = ("git status", "pytest -q", "ls -la", "make build", "vim README.md", "git push")
_PROCS = ("python", "firefox", "code", "postgres", "node", "ssh")


def _file_line(i: int) -> str:
    change = ("modified", "added", "deleted")[i % 7 % 3]
    return f"file {change} {_DIRS[i % len(_DIRS)]}/mod_{i % 977}.py"


def _file_payload(i: int) -> dict[str, Any]:
    line = _file_line(i)
    return {"change": line.split()[1], "path": line.split()[2]}


MIX: list[tuple[int, str, int, int, str, Maker, Callable[[int], Any]]] = [
    (30, "sense.state", NERVE_SOURCE, 1, "cpu", lambda i: "", lambda i: {"state": {"n": i}}),
    (
        15,
        "observation",
        SourceClass.THERMAL_POWER,
        1,
        "cpu",
        lambda i: f"cpu {i % 97}.{i % 10}% load1 {i % 4}.{i % 100:02d} (8 cores)",
        lambda i: {"percent": i % 97, "load1": i % 4},
    ),
    (
        8,
        "observation",
        SourceClass.THERMAL_POWER,
        1,
        "memory",
        lambda i: f"memory {i % 90}% used of 16.0 GiB",
        lambda i: {"percent": i % 90},
    ),
    (
        10,
        "observation",
        SourceClass.PROCESS_TREE,
        1,
        "processes",
        lambda i: f"top {_PROCS[i % 6]} {i % 50}% cpu, {200 + i % 300} processes",
        lambda i: {"top": _PROCS[i % 6]},
    ),
    (
        10,
        "observation",
        SourceClass.NETWORK,
        1,
        "network",
        lambda i: f"net en0 down {i % 900}.{i % 10} KiB/s up {i % 90}.0 KiB/s",
        lambda i: {"nic": "en0", "down": i % 900},
    ),
    (12, "observation", SourceClass.FILE_CHANGE, 1, "files", _file_line, _file_payload),
    (
        5,
        "observation",
        SourceClass.SHELL,
        2,
        "shell",
        lambda i: f"$ {_CMDS[i % len(_CMDS)]}",
        lambda i: {"command": _CMDS[i % len(_CMDS)]},
    ),
    (
        4,
        "observation",
        SourceClass.APP_FOCUS,
        1,
        "focus",
        lambda i: f"focus {_PROCS[i % 6]} window {i % 13}",
        lambda i: {"app": _PROCS[i % 6]},
    ),
    (
        4,
        "observation",
        SourceClass.SYSTEM_LOG,
        3,
        "syslog",
        lambda i: f"kernel: usb {i % 5}-1 reset high-speed device number {i % 40}",
        lambda i: None,
    ),
    (
        1,
        "attention.decision",
        NERVE_SOURCE,
        1,
        "attention",
        lambda i: f"{('surface', 'hold:value', 'hold:budget')[i % 3]} salience {i % 1000}",
        lambda i: {
            "outcome": ("surface", "hold:value", "hold:budget")[i % 3],
            "probe": "salience",
            "value_milli": i % 1000,
            "cost_milli": 400,
            "charged_uj": 250_000 if i % 3 == 0 else 0,
            "budget_before_uj": 1_000_000,
            "budget_after_uj": 750_000 if i % 3 == 0 else 1_000_000,
            "source_line": _file_line(i),
        },
    ),
]


def _plan(count: int) -> np.ndarray:
    weights = np.array([m[0] for m in MIX], dtype=np.int64)
    rng = np.random.default_rng(20240601)
    return rng.choice(len(MIX), size=count, p=weights / weights.sum())


def _columns(which: np.ndarray, start: int) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {k: [] for k in ("kind", "subject", "source", "trust", "line")}
    payloads: list[bytes] = []
    for offset, choice in enumerate(which.tolist()):
        i = start + offset
        _, kind, source, trust, subject, line, payload = MIX[choice]
        cols["kind"].append(kind)
        cols["subject"].append(subject)
        cols["source"].append(int(source))
        cols["trust"].append(trust)
        cols["line"].append(line(i))
        body = payload(i)
        payloads.append(b"" if body is None else canonical_json(body))
    return {**cols, "payload": payloads, "valid_time_ns": [None] * len(payloads)}


def build_log(root: Path, count: int) -> None:
    """Append ``count`` events to a log at ``root`` in batches, then seal and compact."""
    plan = _plan(count)
    with EventLog(root, node="bench", durability="os", seal_max_events=BATCH) as log:
        for start in range(0, count, BATCH):
            log.append_columns(EventFields(**_columns(plan[start : start + BATCH], start)))
            print(f"  appended {min(start + BATCH, count):,}", file=sys.stderr)
        log.seal()
        log.compact(target_rows=1_000_000)


CASES = (
    ("tier0", TIER0_QUESTION, 0),
    ("open", OPEN_QUESTION, 1),
    ("bm25", BM25_QUESTION, 1),
)


def _percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _summary(samples: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples]
    return {
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(_percentile(ms, 0.95), 1),
        "min_ms": round(min(ms), 1),
    }


def _timed(fn: Callable[[], Any], runs: int, warm: bool = True) -> tuple[list[float], Any]:
    samples, last = [], None
    if warm:
        fn()  # warm the page cache and DuckDB's first-use costs once
    for _ in range(runs):
        started = time.perf_counter()
        last = fn()
        samples.append(time.perf_counter() - started)
    return samples, last


def _workspace(root: Path) -> WorkspaceDir:
    ws = init_workspace(root)
    argv = json.dumps([sys.executable, "-c", FALLBACK_SCRIPT])
    ws.config_path.write_text(
        "log:\n  durability: os\n"
        f"recall:\n  fallback: {{kind: command, argv: {argv}, timeout: 30s}}\n"
    )
    return WorkspaceDir.at(root)


def _ask(root: Path, question: str) -> Any:
    return ask(WorkspaceDir.at(root), question, record=False)  # a fresh workspace: config reread


def _library(ws: WorkspaceDir, runs: int, warm: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, question, tier in CASES:
        samples, result = _timed(
            lambda q=question: ask(WorkspaceDir.at(ws.root), q, record=False), runs, warm
        )
        if result.tier != tier:
            raise SystemExit(f"{name}: expected tier {tier}, got {result.tier}: {result.text}")
        envelope, _ = _timed(
            lambda q=question: build_retrieval(WorkspaceDir.at(ws.root), q), runs, warm
        )
        out[name] = {
            "ask": _summary(samples),
            "envelope": _summary(envelope),
            "hits": sum(1 for s in result.envelope.spans if s.via == "bm25"),
            "window_spans": result.envelope.window_spans,
        }
        _report(f"library {name}", out[name]["ask"], f"envelope {out[name]['envelope']}")
    return out


def _cli(ws: WorkspaceDir, runs: int, warm: bool) -> dict[str, Any]:
    base = [sys.executable, "-m", "nerve", "--workspace", str(ws.root)]
    env = {**os.environ, "NO_COLOR": "1"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], capture_output=True, text=True, env=env, check=False)

    out: dict[str, Any] = {}
    startup, _ = _timed(lambda: run("--help"), runs, warm)
    out["startup_help"] = _summary(startup)
    _report("cli nerve --help", out["startup_help"])
    for name, question, _ in CASES:
        samples, proc = _timed(lambda q=question: run("ask", "--no-record", q), runs, warm)
        if proc.returncode != 0:
            raise SystemExit(f"nerve ask {question!r} failed: {proc.stderr}")
        out[name] = _summary(samples)
        _report(f"cli ask {name}", out[name])
    return out


def _report(label: str, figures: dict[str, float], extra: str = "") -> None:
    line = f"{label:<22} p50 {figures['p50_ms']:>8.1f} ms   p95 {figures['p95_ms']:>8.1f} ms"
    print(f"{line}   {extra}".rstrip())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--events", type=int, help="events in the log (default 1,000,000)")
    parser.add_argument("--runs", type=int, help="timed runs per case (default 10)")
    parser.add_argument("--quick", action="store_true", help="50k events, 3 runs unless given")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the workspace here")
    args = parser.parse_args(argv)
    if args.events is None:  # a flag the caller gave always wins over --quick
        args.events = 50_000 if args.quick else 1_000_000
    if args.runs is None:
        args.runs = 3 if args.quick else 10
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = None if args.keep else Path(tempfile.mkdtemp(prefix="nerve-ask-bench-"))
    root = args.keep or (tmp / "ws" if tmp else Path("ws"))
    try:
        result = _run(root, args.events, args.runs, warm=not args.quick)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return finish(result)


def _run(root: Path, events: int, runs: int, *, warm: bool = True) -> dict[str, Any]:
    built = not (root / "nerve.yaml").exists()
    if not built:
        ws, build_s = WorkspaceDir.at(root), 0.0
    else:
        ws, started = _workspace(root), time.perf_counter()
        build_log(ws.log_root, events)
        build_s = time.perf_counter() - started
    count = int(ws.connect().execute("SELECT count(*) FROM events").fetchone()[0])
    load = [round(x, 2) for x in os.getloadavg()]
    print(f"log: {count:,} events (built in {build_s:.1f} s); {runs} runs; load {load}")
    # A wrong tier or a failing CLI run stops the bench at once (SystemExit, status 1).
    checks = {"log_holds_the_events_asked_for": count == events or not built}
    return {
        "load_before": load,
        "events": count,
        "runs": runs,
        "build_s": round(build_s, 1),
        "cpus": os.cpu_count(),
        "warm_up_runs": warm,
        "library": _library(ws, runs, warm),
        "cli": _cli(ws, runs, warm),
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "checks": checks,
        "failed_checks": [name for name, ok in checks.items() if not ok],
    }


if __name__ == "__main__":
    sys.exit(main())
