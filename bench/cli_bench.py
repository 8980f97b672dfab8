"""How fast the CLI answers, next to the floor every typer + rich CLI pays.

    .venv/bin/python bench/cli_bench.py [--rounds 15] [--events 1000000] [--quick] [--keep]

One temporary workspace with no senses, holding ``--events`` sealed events (built with
``EventLog.append_columns`` in batches of 100,000), and a running daemon on it (waited for
until its warm-up is over). Each round runs every command once, in the same order, as a
fresh process (what a person at a shell gets):

* **floor**: ``python -c "import typer, rich"``, the least any CLI on this stack can cost;
* **typer_app**: a one-command typer app parsing ``emit``'s three options, what typer itself
  costs to run a command (it converts option values through pydantic);
* ``nerve --version``, ``nerve --help``, ``nerve status``;
* ``nerve emit --source shell --line … -q`` through the running daemon;
* ``nerve tail -n 20`` over the ``--events`` log (stdout piped);

and, on a second small workspace with no daemon (a few hundred observations attended, so
the sealed chain has links, and shipped to a fleet warehouse in a local folder):

* **emit_offline**: ``nerve emit … -q`` with no daemon (the command opens the log itself);
* **audit_show**: ``nerve audit show 1``;
* **fleet_query**: ``nerve fleet query "SELECT count(*) FROM fleet_events"`` (a few rows);
* **start**: ``nerve start`` until its socket answers ``status`` (then it is stopped, off
  the clock), at most ``START_ROUNDS`` rounds.

Every command runs with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` is dropped
from the commands' environment, as a person's shell does not set it: without the cache each
run compiles nerve's modules again, ~0.1 s a command); the first round writes the cache.

It reports the median wall time of each (and its CPU time, user + system, which a loaded
machine inflates much less) and its ratio to the floor's median, against the
goals: ``--version`` and ``--help`` ≤ 1.5× the floor, ``emit`` ≤ 2×, ``tail -n 20`` ≤ 0.5 s;
``emit_offline`` ≤ 0.4 s, ``start`` ≤ 1.5 s, ``audit_show`` ≤ 0.5 s, ``fleet_query`` ≤ 1 s.
Goals are reported, not asserted. The checks are about correctness: each command printed
what it should, every emit was stored, and ``--version``, ``--help``, ``status`` and ``emit``
imported none of duckdb, pyarrow, numpy, pandas or pydantic (``python -X importtime``; typer
converts option values through pydantic unless nerve does it). Ends with one
line ``RESULT {json}``; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

QUICK = {"rounds": 3, "events": 20_000}
DEFAULTS = {"rounds": 15, "events": 1_000_000}
GOALS = {"version": 1.5, "help": 1.5, "emit": 2.0}
TAIL_GOAL_S = 0.5
SECONDS_GOALS = {"tail": TAIL_GOAL_S, "emit_offline": 0.4, "start": 1.5, "audit_show": 0.5}
SECONDS_GOALS["fleet_query"] = 1.0
START_ROUNDS = 3
SIDE_OBSERVATIONS = 400
TAIL_N = 20
HEAVY = ("duckdb", "pyarrow", "numpy", "pandas", "pydantic")
LIGHT = ("version", "help", "status", "emit")
BATCH = 100_000


def say(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def nerve_argv() -> list[str]:
    """The installed ``nerve`` script next to this interpreter, else ``python -m nerve``."""
    script = Path(sys.executable).with_name("nerve")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nerve"]


def make_workspace(root: Path, events: int) -> None:
    from nerve.events import SourceClass, Trust
    from nerve.workspace import WorkspaceDir, init_workspace

    init_workspace(root)
    (root / "nerve.yaml").write_text("senses: {}\nlog:\n  seal_max_events: 10000000\n")
    with WorkspaceDir.at(root).open_log() as log:
        for start in range(0, events, BATCH):
            count = min(BATCH, events - start)
            log.append_columns(
                kind=["observation"] * count,
                subject=["bench"] * count,
                source=[int(SourceClass.SHELL)] * count,
                trust=[int(Trust.FIRST_PARTY)] * count,
                valid_time_ns=[None] * count,
                payload=[b'{"i":%d}' % i for i in range(start, start + count)],
                line=[f"command {i}" for i in range(start, start + count)],
            )
        log.seal()


def make_side(root: Path) -> None:
    """A small workspace with no daemon: observations attended (a chain with links), then
    shipped to a fleet warehouse in a folder beside it."""
    from nerve.workspace import init_workspace

    init_workspace(root)
    (root / "nerve.yaml").write_text("senses: {}\n")
    warehouse = root.parent / "warehouse"
    sources = ["file_change", "network", "shell", "process_tree", "app_focus", "system_log"]
    lines = "".join(
        json.dumps(
            {
                "source": "endpoint" if i < SIDE_OBSERVATIONS // 2 else sources[i % 6],
                "subject": "cpu",
                "line": f"event {i}",
            }
        )
        + "\n"
        for i in range(SIDE_OBSERVATIONS)
    )  # fmt: skip: a steady source, then a storm of others (the detector fires on novelty)
    nerve = [*nerve_argv(), "--workspace", str(root)]
    steps = [["emit", "--jsonl", "-"], ["attend", "--replay"], ["seal"]]
    steps += [
        ["fleet", "init", "--warehouse", str(warehouse), "--host", "bench"],
        ["fleet", "ship"],
    ]
    for args in steps:
        subprocess.run([*nerve, *args], input=lines, check=True, capture_output=True, text=True,
                       env=command_env(), timeout=300)  # fmt: skip


def side_commands(side: Path) -> dict[str, list[str]]:
    nerve = [*nerve_argv(), "--workspace", str(side)]
    return {
        "emit_offline": [*nerve, "emit", "--source", "shell", "--line", "bench", "-q"],
        "audit_show": [*nerve, "audit", "show", "1"],
        "fleet_query": [*nerve, "fleet", "query", "SELECT count(*) AS n FROM fleet_events"],
    }


def time_start(side: Path, env: dict[str, str]) -> tuple[float, bool]:
    """``nerve start`` until ``status`` answers; the daemon is stopped after, off the clock."""
    nerve = [*nerve_argv(), "--workspace", str(side)]
    started = time.perf_counter()
    subprocess.run([*nerve, "start"], capture_output=True, env=env, timeout=120)
    answered = False
    while time.perf_counter() - started < 60 and not answered:
        answered = subprocess.run([*nerve, "status"], capture_output=True, env=env).returncode == 0
    seconds = time.perf_counter() - started
    subprocess.run([*nerve, "stop"], capture_output=True, env=env, timeout=120)
    return seconds, answered


# typer's own cost of running a command: since typer 0.2x it parses every option through a
# pydantic TypeAdapter, which no import-only floor shows. Reported beside the floor.
TYPER_APP = """
import typer
app = typer.Typer()
@app.command()
def emit(source: str = typer.Option(...), line: str = "", quiet: bool = typer.Option(False, "-q")):
    pass
app()
"""


def commands(root: Path) -> dict[str, list[str]]:
    nerve = [*nerve_argv(), "--workspace", str(root)]
    return {
        "floor": [sys.executable, "-c", "import typer, rich"],
        "typer_app": [sys.executable, "-c", TYPER_APP, "--source", "shell", "--line", "x", "-q"],
        "version": [*nerve_argv(), "--version"],  # as a person types them: no workspace
        "help": [*nerve_argv(), "--help"],
        "status": [*nerve, "status"],
        "emit": [*nerve, "emit", "--source", "shell", "--line", "bench", "-q"],
        "tail": [*nerve, "tail", "-n", str(TAIL_N)],
    }


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return time.perf_counter() - started, proc


def children_cpu_s() -> float:
    """CPU seconds (user + system) of every child waited for so far: on a loaded machine
    the wall time grows with the load, a command's own CPU time much less."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def heavy_imports(argv: list[str], env: dict[str, str]) -> list[str]:
    """The heavy top-level packages a command imports, from ``-X importtime``."""
    if argv[0] != sys.executable:  # the script: run the same entry point under -X importtime
        argv = [sys.executable, "-m", "nerve", *argv[1:]]
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    found = re.findall(r"\|\s+([A-Za-z_][\w.]*)\s*$", proc.stderr, flags=re.MULTILINE)
    return sorted({name.split(".")[0] for name in found} & set(HEAVY))


def _tail_lines(out: str) -> int:
    return len(out.splitlines())


def command_env() -> dict[str, str]:
    """The commands' environment: the caller's, with bytecode caching on (see above)."""
    env = {**os.environ, "NO_COLOR": "1", "NERVE_WORKSPACE": ""}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(root: Path, side: Path, rounds: int) -> dict[str, Any]:
    env = command_env()
    argvs = {**commands(root), **side_commands(side)}
    times: dict[str, list[float]] = {name: [] for name in argvs}
    cpu: dict[str, list[float]] = {name: [] for name in argvs}
    outputs: dict[str, list[subprocess.CompletedProcess[str]]] = {name: [] for name in argvs}
    for round_ in range(rounds):
        for name, argv in argvs.items():
            before = children_cpu_s()
            seconds, proc = timed(argv, env)
            times[name].append(seconds)
            cpu[name].append(children_cpu_s() - before)
            outputs[name].append(proc)
        say(
            f"round {round_ + 1}/{rounds}: "
            + ", ".join(f"{n} {t[-1]:.3f}s" for n, t in times.items())
        )
    starts = [time_start(side, env) for _ in range(min(rounds, START_ROUNDS))]
    times["start"] = [seconds for seconds, _ in starts]
    medians = {name: statistics.median(values) for name, values in times.items()}
    floor = medians["floor"]
    return {
        "median_s": {name: round(value, 4) for name, value in medians.items()},
        "median_cpu_s": {name: round(statistics.median(v), 4) for name, v in cpu.items()},
        "ratio_to_floor": {
            name: round(value / floor, 2) for name, value in medians.items() if name != "floor"
        },
        "outputs": outputs,
        "start_answered": all(answered for _, answered in starts),
        "heavy": {name: heavy_imports(argvs[name], env) for name in LIGHT},
    }


def stored(root: Path) -> int:
    from nerve.workspace import WorkspaceDir

    conn = WorkspaceDir.at(root).connect()
    row = conn.execute("SELECT count(*) FROM events WHERE line = 'bench'").fetchone()
    return int(row[0]) if row else 0


def verdicts(result: dict[str, Any], outputs: dict[str, Any], emitted: int) -> dict[str, Any]:
    from nerve import __version__

    ok = {name: all(p.returncode == 0 for p in procs) for name, procs in outputs.items()}
    for name, procs in outputs.items():
        failed = [p for p in procs if p.returncode != 0]
        if failed:
            say(f"{name} exited {failed[0].returncode}: {failed[0].stderr.strip()[-300:]}")
    return {
        "every_command_exit_0": all(ok.values()),
        "version_text": all(p.stdout == f"nerve {__version__}\n" for p in outputs["version"]),
        "help_lists_exit_codes": all("Exit codes" in p.stdout for p in outputs["help"]),
        "status_running": all("running" in p.stdout for p in outputs["status"]),
        "every_emit_stored": emitted == len(outputs["emit"]) + 1,  # + the importtime run
        "tail_prints_n": all(_tail_lines(p.stdout) == TAIL_N for p in outputs["tail"]),
        "audit_show_decodes_a_link": all("seq" in p.stdout for p in outputs["audit_show"]),
        "fleet_query_counts": all(p.stdout.split()[-1:] != ["0"] for p in outputs["fleet_query"]),
        "start_answers": result.pop("start_answered"),
        "light_imports": all(not found for found in result["heavy"].values()),
    }


def goals(result: dict[str, Any]) -> dict[str, bool]:
    met = {
        f"{name}_le_{limit}x": result["ratio_to_floor"][name] <= limit
        for name, limit in GOALS.items()
    }
    for name, limit in SECONDS_GOALS.items():
        met[f"{name}_le_{limit}s"] = result["median_s"][name] <= limit
    return met


def render(result: dict[str, Any], out: TextIO) -> None:
    out.write(f"{'command':<14}{'median':>10}{'cpu':>10}{'× floor':>10}{'goal':>10}\n")
    for name, seconds in result["median_s"].items():
        ratio = result["ratio_to_floor"].get(name, 1.0)
        cpu = result["median_cpu_s"].get(name)
        cpu_text = "" if cpu is None else f"{cpu * 1000:.0f}ms"
        goal = f"{SECONDS_GOALS[name]:.1f} s" if name in SECONDS_GOALS else GOALS.get(name, "")
        goal = f"{goal}×" if isinstance(goal, float) else goal
        out.write(f"{name:<14}{seconds * 1000:>8.0f}ms{cpu_text:>10}{ratio:>9.2f}×{goal:>10}\n")
    for goal, met in result["goals"].items():
        out.write(f"goal {goal}: {'met' if met else 'NOT met'}\n")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--events", type=int)
    parser.add_argument("--quick", action="store_true", help=f"defaults {QUICK}")
    parser.add_argument("--keep", action="store_true", help="keep the workspace")
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def wait_warm(nerve: list[str], deadline_s: float = 600) -> None:
    """Until ``status --json`` says the daemon's warm-up is over (``nerve start`` returns
    once the socket answers; reading back a long log takes longer)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        proc = subprocess.run([*nerve, "status", "--json"], capture_output=True, text=True,
                              env=command_env(), timeout=120)  # fmt: skip
        if proc.returncode == 0 and json.loads(proc.stdout).get("warming") is False:
            return
        time.sleep(0.2)
    raise SystemExit("[bench] the daemon did not finish warming up")


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="nerve-cli-")) / "ws"
    side = root.parent / "side"
    nerve = [*nerve_argv(), "--workspace", str(root)]
    try:
        say(f"building a log of {args.events} events, and a small one with a chain and a fleet")
        make_workspace(root, args.events)
        make_side(side)
        subprocess.run(
            [*nerve, "start"], check=True, capture_output=True, env=command_env(), timeout=120
        )
        try:
            wait_warm(nerve)  # the rounds measure a daemon at work, not one warming up
            result = measure(root, side, args.rounds)
        finally:
            subprocess.run([*nerve, "stop"], capture_output=True, env=command_env(), timeout=120)
        outputs = result.pop("outputs")
        result["checks"] = verdicts(result, outputs, stored(root))
    finally:
        if args.keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root.parent, ignore_errors=True)
    result.update(rounds=args.rounds, events=args.events)
    result["goals"] = goals(result)
    result["load_avg_1m"] = round(os.getloadavg()[0], 2)
    result["failed_checks"] = [name for name, ok in result["checks"].items() if not ok]
    render(result, out)
    print("RESULT " + json.dumps(result, sort_keys=True), file=out)
    for name in result["failed_checks"]:
        say(f"check failed: {name}")
    return 1 if result["failed_checks"] else 0


if __name__ == "__main__":
    sys.exit(main())
