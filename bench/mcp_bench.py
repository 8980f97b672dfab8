"""`nerve mcp` tool-call latency through a real client session over a large log (1M events).

    .venv/bin/python bench/mcp_bench.py [--events N] [--runs R] [--quick] [--keep DIR]

Builds the log ``ask_bench.py`` builds (a realistic mix of sense states, readings, file
changes, shell commands, attention decisions; sealed and compacted), then times three tool
calls:

* ``recent`` — the newest 50 events (bookkeeping hidden), as ``nerve tail`` reads them;
* ``query`` — a group-by over the whole log (``source_name, kind, count(*)``) in the sandbox;
* ``ask`` — "which files changed recently?", answered by Tier 0 (no model call);

three ways: as a **library** call in-process (``nerve.mcp.tools``, the work the tool does,
with the privacy screen, returning its pydantic model), and through a **session**: the SDK's
stdio client talking to a ``nerve mcp`` subprocess (JSON-RPC over pipes, argument
validation, the budget, the structured result, and the ``agent.access`` record appended
before the answer goes back) — once **without** a daemon (each record opens the log as its
writer for one append) and once **with** one (the record goes through its socket). ``nerve
ask --no-record`` through the CLI (a new process per question) is timed next to them.
One warm-up call per case (none with ``--quick``), then ``--runs`` timed ones: p50 and p99
(nearest rank). The load average before and after is part of the result.

Checks: every session call succeeds; the session without a daemon returns exactly what the
library call does (the JSON of the same model) and adds one ``agent.access`` record per call
and nothing else; the session with the daemon adds one record per call too (the daemon
writes its own records besides: its start and stop; attention is off in this workspace, so
the daemon is idle while it is timed). ``--quick`` means 20k events and 5 runs unless
``--events`` or ``--runs`` says otherwise. The last line is ``RESULT {json}``; progress goes
to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
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

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

import nerve
from nerve.log.reader import snapshot, table_since
from nerve.mcp import tools
from nerve.mcp.budgets import Allowance
from nerve.privacy.screen import Screen
from nerve.workspace import WorkspaceDir, init_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser

QUESTION = "which files changed recently?"
GROUP_BY = (
    "SELECT source_name, kind, count(*) AS n FROM events WHERE kind <> 'agent.access' "
    "GROUP BY ALL ORDER BY n DESC, source_name, kind"
)
# The arguments a session sends, and the library call that does the same work.
CASES: dict[str, tuple[dict[str, Any], Callable[[tools.Call], Any]]] = {
    "recent": ({"limit": 50}, lambda call: tools.recent(call, limit=50)),
    "query": ({"sql": GROUP_BY}, lambda call: tools.query(call, GROUP_BY)),
    "ask": ({"question": QUESTION}, lambda call: tools.ask(call, QUESTION)),
}
CONFIG = """\
log:
  durability: os
attention:
  enabled: false  # else the daemon spends the bench attending to a million observations
mcp:
  max_rows: {call: 1000, session: 100000000}
  max_bytes: {call: 4194304, session: 100000000000}
  query_timeout: 60s
"""


def _ask_bench() -> Any:
    """``bench/ask_bench.py``, for its log builder."""
    path = Path(__file__).with_name("ask_bench.py")
    spec = importlib.util.spec_from_file_location("nerve_ask_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _summary(samples: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples]
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(_percentile(ms, 0.99), 2),
        "min_ms": round(min(ms), 2),
    }


def _report(label: str, figures: dict[str, float]) -> None:
    print(
        f"{label:<26} p50 {figures['p50_ms']:>9.2f} ms   p99 {figures['p99_ms']:>9.2f} ms"
        f"   min {figures['min_ms']:>9.2f} ms"
    )


def _plain(value: Any) -> Any:
    """A result as the JSON an agent receives."""
    return json.loads(value.model_dump_json()) if hasattr(value, "model_dump_json") else value


def library(ws: WorkspaceDir, runs: int, warm: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    figures, results = {}, {}
    door = nerve.open(ws.root, read_only=True)  # the MCP server's own way in
    allowance = Allowance(1000, 4 * 1024 * 1024)
    for name, (_, call) in CASES.items():

        def once(call: Callable[[tools.Call], Any] = call) -> Any:
            return call(tools.Call(door, Screen(ws.config.privacy), allowance, 60_000))

        samples = []
        for index in range(runs + int(warm)):
            started = time.perf_counter()
            results[name] = _plain(once())
            if index >= int(warm):
                samples.append(time.perf_counter() - started)
        figures[name] = _summary(samples)
        _report(f"library {name}", figures[name])
    return figures, results


def session(
    ws: WorkspaceDir, runs: int, warm: bool, label: str
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """Timed calls through one stdio session; (figures, last results, calls made)."""
    env = {"NO_COLOR": "1", "XDG_STATE_HOME": str(ws.root / "state")}
    args = ["-m", "nerve", "--workspace", str(ws.root), "mcp"]
    server = StdioServerParameters(command=sys.executable, args=args, env=env)
    figures: dict[str, Any] = {}
    results: dict[str, Any] = {}
    calls = 0

    async def main() -> None:
        nonlocal calls
        info = Implementation(name="mcp-bench", version="1")
        async with Client(server, client_info=info) as client:
            for name, (arguments, _) in CASES.items():
                samples = []
                for index in range(runs + int(warm)):
                    started = time.perf_counter()
                    result = await client.call_tool(name, arguments)
                    elapsed = time.perf_counter() - started
                    calls += 1
                    if result.is_error:
                        raise SystemExit(f"session {name} failed: {result.content}")
                    results[name] = result.structured_content
                    if index >= int(warm):
                        samples.append(elapsed)
                figures[name] = _summary(samples)
                _report(f"session {label} {name}", figures[name])

    anyio.run(main)
    return figures, results, calls


def cli_ask(ws: WorkspaceDir, runs: int, warm: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "nerve", "--workspace", str(ws.root), "ask", "--no-record"]
    env = {**os.environ, "NO_COLOR": "1"}
    samples = []
    for index in range(runs + int(warm)):
        started = time.perf_counter()
        proc = subprocess.run([*cmd, QUESTION], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"nerve ask failed: {proc.stderr}")
        if index >= int(warm):
            samples.append(time.perf_counter() - started)
    figures = _summary(samples)
    _report("cli nerve ask", figures)
    return figures


def _daemon(ws: WorkspaceDir, verb: str) -> None:
    cmd = [sys.executable, "-m", "nerve", "--workspace", str(ws.root), verb]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)


def _kinds(ws: WorkspaceDir, since: int) -> list[str]:
    """The kinds of the events stored after the first ``since``."""
    return [str(k) for k in table_since(snapshot(ws.log_root)).column("kind").to_pylist()[since:]]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--events", type=int, help="events in the log (default 1,000,000)")
    parser.add_argument("--runs", type=int, help="timed calls per case (default 30)")
    parser.add_argument("--quick", action="store_true", help="20k events, 5 runs unless given")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the workspace here")
    args = parser.parse_args(argv)
    if args.events is None:  # a flag the caller gave always wins over --quick
        args.events = 20_000 if args.quick else 1_000_000
    if args.runs is None:
        args.runs = 5 if args.quick else 30
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = None if args.keep else Path(tempfile.mkdtemp(prefix="nerve-mcp-bench-"))
    root = args.keep or (tmp / "ws" if tmp else Path("ws"))
    try:
        result = run(root, args.events, args.runs, warm=not args.quick)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return finish(result)


def _build(root: Path, events: int) -> tuple[WorkspaceDir, float, bool]:
    if (root / "nerve.yaml").exists():
        return WorkspaceDir.at(root), 0.0, False
    ws = init_workspace(root)
    ws.config_path.write_text(CONFIG)
    started = time.perf_counter()
    _ask_bench().build_log(ws.log_root, events)
    return WorkspaceDir.at(root), time.perf_counter() - started, True


def run(root: Path, events: int, runs: int, *, warm: bool = True) -> dict[str, Any]:
    ws, build_s, built = _build(root, events)
    count = snapshot(ws.log_root).count
    load = [round(x, 2) for x in os.getloadavg()]
    print(f"log: {count:,} events (built in {build_s:.1f} s); {runs} runs; load {load}")
    lib, lib_results = library(ws, runs, warm)
    alone, alone_results, alone_calls = session(ws, runs, warm, "no daemon")
    alone_kinds, served_from = _kinds(ws, count), snapshot(ws.log_root).count
    _daemon(ws, "start")
    try:
        served, _, served_calls = session(ws, runs, warm, "daemon")
    finally:
        _daemon(ws, "stop")
    cli = cli_ask(ws, min(runs, 10), warm)
    served_access = _kinds(ws, served_from).count("agent.access")  # the daemon adds its own
    overhead = {
        name: {
            "no_daemon_p50_ms": round(alone[name]["p50_ms"] - lib[name]["p50_ms"], 2),
            "daemon_p50_ms": round(served[name]["p50_ms"] - lib[name]["p50_ms"], 2),
        }
        for name in CASES
    }
    print(f"session overhead over the library call (p50): {json.dumps(overhead)}")
    checks = {
        "log_holds_the_events_asked_for": count == events or not built,
        # with the daemon, its own start record shows in `recent` and the group-by
        "session_matches_the_library": alone_results == lib_results,
        "one_access_record_per_call": served_access == served_calls,
        "nothing_else_written": alone_kinds == ["agent.access"] * alone_calls,
    }
    return {
        "load_before": load,
        "events": count,
        "runs": runs,
        "build_s": round(build_s, 1),
        "cpus": os.cpu_count(),
        "warm_up_runs": warm,
        "library": lib,
        "session_no_daemon": alone,
        "session_daemon": served,
        "overhead": overhead,
        "cli_ask": cli,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "checks": checks,
        "failed_checks": [name for name, ok in checks.items() if not ok],
    }


if __name__ == "__main__":
    sys.exit(main())
