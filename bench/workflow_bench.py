"""Workflow runs and gate-check fires, measured through the real engine and real processes.

    .venv/bin/python bench/workflow_bench.py [--runs 1000] [--concurrency 8] [--fires 200]
                                             [--rounds 3] [--durability fsync] [--quick]

A temporary workspace holds two trivial workflows: ``trio`` (three roles, each returning a
constant; the moderator goes a → b → c → END) and ``solo`` (one such role). A kernel runs
in this process (``Kernel(ws, with_ipc=False, watch=False)``, the engine loaded as in the
daemon, roles in their worker processes, every step durably appended with ``--durability``).

* **runs/s**: ``--runs`` runs of ``trio`` requested at once (``overlap: buffer_all``) with
  ``--concurrency`` slots, from the first request to the last ``completed`` status;
* **per-round overhead**: a fifth as many ``trio`` and ``solo`` runs (at least 10), one at
  a time: ``(t_trio - t_solo) / 2`` per run is what one more round costs (a role call, a
  moderator call, one durable commit), with each run's fixed cost cancelled out;
* **check fire vs bare spawn**: ``--fires`` x ``--rounds`` fires of each kind, in batches of
  10 interleaved batch by batch so that load drifts hit all alike: the argv a gate check runs
  (a Python script printing ``{"pass": true}``) spawned bare with ``subprocess.run``; fired
  with ``nerve.checks.dispatch.fire``; fired as ``nerve check fire`` does through the daemon
  (a ``check.fired`` and a ``check.verdict`` event durable before it returns); and fired by
  a run's output checks (``nerve.flow.judge.evaluate`` over 10 outputs, whose commits
  overlap the next check). Rates are 1 / the median time per fire. The goal is a gate fire
  rate of at least 0.8x the bare rate.

Run timings keep the best of ``--rounds`` rounds. Progress goes to stderr, a table to
stdout, and the last line is ``RESULT {json}``. ``--quick`` picks small sizes for every flag
not given. The exit status is 1 when an internal check fails: a run that did not complete,
or a check fire that did not pass.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

from nerve.checks.catalog import runnable
from nerve.checks.dispatch import fire
from nerve.checks.manifest import parse_manifest
from nerve.contract import WorkflowTrigger
from nerve.flow.judge import evaluate, fire_one, run_dir
from nerve.runtime.kernel import Kernel
from nerve.workspace import WorkspaceDir

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, new_parser, say

GOAL_FIRE_RATIO = 0.8
BATCH = 10
QUICK = {"runs": 100, "fires": 30, "rounds": 1}
DEFAULTS = {"runs": 1000, "fires": 200, "rounds": 3}
ROLE = "def {name}(start, messages):\n    return {{'content': '{name}', 'meta': {{}}}}\n"
TRIO = "".join(ROLE.format(name=n) for n in "abc") + (
    "roles = {'a': a, 'b': b, 'c': c}\n"
    "def moderator(context, round, max_rounds):\n"
    "    return ['a', 'b', 'c', '__end__'][round]\n"
)
SOLO = ROLE.format(name="a") + (
    "roles = {'a': a}\n"
    "def moderator(context, round, max_rounds):\n"
    "    return ['a', '__end__'][round]\n"
)
CHECK = "import json\nprint(json.dumps({'pass': True, 'findings': []}))\n"
MANIFEST = """---
id: trivial
kind: deterministic
command: python checks_bin/trivial.py
default_severity: blocking
description: always passes
fire_on: gate
---
"""
TERMINAL = {"completed", "failed", "dropped", "held", "interrupted"}


def build(root: Path, concurrency: int, durability: str) -> WorkspaceDir:
    for name, code in (("trio", TRIO), ("solo", SOLO)):
        (root / "workflows" / name).mkdir(parents=True)
        (root / "workflows" / name / "workflow.py").write_text(code)
    (root / "checks_bin").mkdir()
    (root / "checks_bin" / "trivial.py").write_text(CHECK)
    (root / "workflows" / "checks").mkdir()
    (root / "workflows" / "checks" / "trivial.md").write_text(MANIFEST)
    (root / "report.md").write_text("# a report\n")
    wf = f"concurrency: {concurrency}, overlap: buffer_all, max_queue: 1000000"
    (root / "nerve.yaml").write_text(
        f"senses: {{}}\nlog:\n  durability: {durability}\n"
        f"workflows:\n  trio: {{{wf}}}\n  solo: {{{wf}}}\n  one-trio: {{path: workflows/trio}}\n"
        f"  one-solo: {{path: workflows/solo}}\n"
    )
    return WorkspaceDir(root)


class Finished:
    """Counts runs reaching a final status, from the committer's listener."""

    def __init__(self) -> None:
        self.count = 0
        self.failed = 0
        self.changed = asyncio.Event()

    def __call__(self, table: pa.Table) -> None:
        kinds = table.column("kind").to_pylist()
        for i, kind in enumerate(kinds):
            if kind == "workflow.status":
                status = json.loads(table.column("payload")[i].as_py())["status"]
                if status in TERMINAL:
                    self.count += 1
                    self.failed += status != "completed"
                    self.changed.set()

    async def wait(self, target: int) -> None:
        while self.count < target:
            self.changed.clear()
            await self.changed.wait()


async def timed_runs(kernel: Kernel, done: Finished, name: str, n: int, *, serial: bool) -> float:
    """Seconds from the first request to the n-th finished run of ``name``."""
    base = done.count
    started = time.perf_counter()
    for i in range(n):
        await kernel.request_workflow(WorkflowTrigger(name, prompt=str(i)), source="bench")
        if serial:
            await done.wait(base + i + 1)
    await done.wait(base + n)
    return time.perf_counter() - started


async def bench_runs(kernel: Kernel, args: argparse.Namespace) -> dict[str, Any]:
    done = Finished()
    kernel.committer.listeners.append(done)
    for name in ("trio", "solo", "one-trio", "one-solo"):  # spawn every worker first
        await timed_runs(kernel, done, name, 1, serial=True)
    say(f"{args.runs} runs of trio, concurrency {args.concurrency}")
    many = [
        await timed_runs(kernel, done, "trio", args.runs, serial=False) for _ in range(args.rounds)
    ]
    serial_n = max(10, args.runs // 5)
    say(f"{serial_n} runs of one-trio and one-solo, one at a time")
    trio = [
        await timed_runs(kernel, done, "one-trio", serial_n, serial=True)
        for _ in range(args.rounds)
    ]
    solo = [
        await timed_runs(kernel, done, "one-solo", serial_n, serial=True)
        for _ in range(args.rounds)
    ]
    per_run_trio, per_run_solo = min(trio) / serial_n, min(solo) / serial_n
    return {
        "runs": args.runs,
        "concurrency": args.concurrency,
        "runs_per_s": round(args.runs / min(many), 1),
        "serial_runs": serial_n,
        "serial_trio_ms_per_run": round(per_run_trio * 1000, 3),
        "serial_solo_ms_per_run": round(per_run_solo * 1000, 3),
        "per_round_overhead_ms": round((per_run_trio - per_run_solo) / 2 * 1000, 3),
        "failed_runs": done.failed,
    }


async def bench_fires(kernel: Kernel, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    manifest = runnable(parse_manifest(root / "workflows" / "checks" / "trivial.md"))
    argv = [*manifest.command, "--stage", "bench", "--output-path", "report.md"]
    outputs = [f"out-{i}.md" for i in range(BATCH)]
    for name in outputs:
        (run_dir(root, "bench") / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir(root, "bench") / name).write_text("# an output\n")

    failed = {"bare": 0, "fire": 0, "recorded": 0, "gate": 0}  # fires that did not pass

    async def bare() -> None:
        for _ in range(BATCH):
            done = subprocess.run(argv, cwd=root, stdin=subprocess.DEVNULL, capture_output=True)
            failed["bare"] += done.returncode != 0

    async def unrecorded() -> None:
        for _ in range(BATCH):
            verdict = fire(manifest, path=Path("report.md"), root=root, run="bench")
            failed["fire"] += verdict.result != "passed"

    async def recorded() -> None:
        for _ in range(BATCH):
            verdict = await fire_one(
                kernel.committer.append, root=root, manifest=manifest, path="report.md", run="b"
            )
            failed["recorded"] += verdict.result != "passed"

    async def gate() -> None:
        reasons = await evaluate(
            kernel.committer.append,
            root=root,
            run="bench",
            workflow="bench",
            outputs=outputs,
            manifests=[manifest],
        )
        failed["gate"] += len(reasons)

    paths = {"bare": bare, "fire": unrecorded, "recorded": recorded, "gate": gate}
    times: dict[str, list[float]] = {name: [] for name in paths}
    batches = max(1, args.fires * args.rounds // BATCH)
    say(f"check fires: {batches} batches of {BATCH} per path, interleaved batch by batch")
    for _ in range(batches):
        for name, fn in paths.items():  # one batch of each in turn: load drifts hit all alike
            started = time.perf_counter()
            await fn()
            times[name].append((time.perf_counter() - started) / BATCH)
    per_fire = {name: statistics.median(found) for name, found in times.items()}
    rate = {name: 1 / seconds for name, seconds in per_fire.items()}
    return {
        "fires": batches * BATCH,
        "bare_per_s": round(rate["bare"], 1),
        "fire_per_s": round(rate["fire"], 1),
        "recorded_fire_per_s": round(rate["recorded"], 1),
        "gate_fire_per_s": round(rate["gate"], 1),
        "fire_vs_bare": round(rate["fire"] / rate["bare"], 3),
        "recorded_vs_bare": round(rate["recorded"] / rate["bare"], 3),
        "gate_vs_bare": round(rate["gate"] / rate["bare"], 3),
        "gate_overhead_ms": round((per_fire["gate"] - per_fire["bare"]) * 1000, 3),
        "recorded_overhead_ms": round((per_fire["recorded"] - per_fire["bare"]) * 1000, 3),
        "goal_met": rate["gate"] / rate["bare"] >= GOAL_FIRE_RATIO,
        "failed_fires": failed,
    }


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="nerve-wf-bench-"))
    try:
        ws = build(root, args.concurrency, args.durability)
        kernel = Kernel(ws, with_ipc=False, watch=False)
        await kernel.start()
        try:
            runs = await bench_runs(kernel, args)
            fires = await bench_fires(kernel, root, args)
        finally:
            await kernel.stop()
        result = {"durability": args.durability, **runs, **fires}
        result["checks"] = {
            "every_run_completed": runs["failed_runs"] == 0,
            "every_fire_passed": not any(fires["failed_fires"].values()),
        }
        result["failed_checks"] = failed_checks(result["checks"])
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


def render(result: dict[str, Any], out: TextIO) -> None:
    rows = [
        ("runs/s (trio, concurrency {concurrency})", "runs_per_s"),
        ("ms per run, one at a time (trio)", "serial_trio_ms_per_run"),
        ("ms per run, one at a time (solo)", "serial_solo_ms_per_run"),
        ("per-round overhead, ms", "per_round_overhead_ms"),
        ("bare spawns/s", "bare_per_s"),
        ("check fires/s (dispatch only)", "fire_per_s"),
        ("check fires/s (one recorded fire, durable)", "recorded_fire_per_s"),
        ("check fires/s (in a gate, recorded)", "gate_fire_per_s"),
        ("fire (dispatch only) / bare spawn rate", "fire_vs_bare"),
        ("one recorded fire / bare spawn rate", "recorded_vs_bare"),
        ("gate fire / bare spawn rate (goal >= 0.8)", "gate_vs_bare"),
        ("gate fire overhead over bare, ms", "gate_overhead_ms"),
    ]
    for label, key in rows:
        print(f"{label.format(**result):<48} {result[key]}", file=out)
    for name, ok in result["checks"].items():
        print(f"check {name}: {ok}", file=out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--runs", type=int, help="runs of trio at once (default 1,000)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--fires", type=int, help="check fires of each kind (default 200)")
    parser.add_argument("--rounds", type=int, help="rounds, best kept (default 3)")
    parser.add_argument("--durability", choices=("fsync", "os"), default="fsync")
    parser.add_argument(
        "--quick", action="store_true", help="100 runs, 30 fires, 1 round unless given"
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else DEFAULTS
    for key, value in sizes.items():
        if getattr(args, key) is None:  # a flag the caller gave always wins
            setattr(args, key, value)
    return args


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    result = asyncio.run(run_all(parse_args(argv)))
    render(result, out)
    return finish(result, out)


if __name__ == "__main__":
    raise SystemExit(main())
