"""What the shell hook adds to each command, next to the same shell without it.

    .venv/bin/python bench/shell_hook_bench.py [--commands 400] [--rounds 3] [--quick]

For each shell found (bash, zsh; the first only with ``--quick``), an interactive shell
(``-i``, no start-up files) reads
``--commands`` commands (``true``, and every tenth ``false``) from a pipe, in three setups
that take turns for ``--rounds`` rounds: **plain** (no hook), **hook, daemon down** and
**hook, daemon up** (a running daemon whose ``shell`` sense reads the spool). A last
``PROMPT_COMMAND`` / ``precmd`` step, the same in all three, writes ``$EPOCHREALTIME`` at
each prompt; the time from one prompt to the next is what a person waits per command. The
added latency is the hooked setup's percentile minus the plain one's (each setup's best
round counts, so a change of load falls on all alike). Goal: ≤ 5 ms added at p99.

Checks: every command of every hooked run is in the spool, with the right exit status (and
nothing for the plain runs); with the daemon down nothing is lost: once a daemon starts,
every spooled command becomes a ``shell`` observation; and the added p99 is within the goal
(reported, not checked, with ``--quick``, whose few commands make p99 the slowest one). Ends
with ``RESULT {json}``; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUICK = {"commands": 60, "rounds": 1}
DEFAULTS = {"commands": 400, "rounds": 3}
GOAL_MS = 5.0
NERVE = [sys.executable, "-m", "nerve"]

_TIMER = {
    "bash": '__bench_t() { printf \'%s\\n\' "$EPOCHREALTIME" >>"$BENCH_TIMES"; }\n'
    'PROMPT_COMMAND="${PROMPT_COMMAND:+$PROMPT_COMMAND;}__bench_t"\n',
    "zsh": "zmodload zsh/datetime\n__bench_t() { print -r -- $EPOCHREALTIME >>$BENCH_TIMES }\n"
    "precmd_functions+=(__bench_t)\n",
}
_ARGV = {"bash": ["bash", "--norc", "--noprofile", "-i"], "zsh": ["zsh", "-f", "-i"]}


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _script(shell: str, hook: Path | None, commands: int) -> str:
    lines = [_TIMER[shell], f"source {hook}" if hook else ""]
    lines += ["false" if i % 10 == 9 else "true" for i in range(commands)]
    return "\n".join([*lines, "exit 0", ""])


def run_shell(shell: str, hook: Path | None, commands: int, tmp: Path, spool: Path) -> list[float]:
    """One interactive shell reading the commands; the prompt-to-prompt gaps, in ms."""
    times = tmp / f"times-{shell}"
    times.unlink(missing_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp),
        "HISTFILE": str(tmp / f"history-{shell}"),
        "BENCH_TIMES": str(times),
        "NERVE_SHELL_SPOOL": str(spool),
        "TERM": "dumb",
    }
    subprocess.run(
        _ARGV[shell],
        input=_script(shell, hook, commands),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    stamps = (
        [float(t.replace(",", ".")) for t in times.read_text().split()] if times.exists() else []
    )
    gaps = [(b - a) * 1000 for a, b in itertools.pairwise(stamps)]
    return gaps[2:]  # the first prompts include the hook's own set-up


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(gaps: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(gaps), 3) if gaps else float("nan"),
        "p99_ms": round(percentile(gaps, 0.99), 3),
    }


def spooled(spool: Path) -> list[tuple[int, str]]:
    """(exit status, command) per spool line."""
    if not spool.exists():
        return []
    rows = [line.split("\t") for line in spool.read_text().splitlines()]
    return [(int(r[5]), r[7]) for r in rows if len(r) == 8]


def _expected(commands: int) -> list[tuple[int, str]]:
    return [(1, "false") if i % 10 == 9 else (0, "true") for i in range(commands)]


class Daemon:
    """A daemon whose only sense is ``shell``, reading the bench's spool."""

    def __init__(self, tmp: Path, spool: Path) -> None:
        self.root = tmp / "ws"
        self.root.mkdir(exist_ok=True)
        history = tmp / "no-history"
        (self.root / "nerve.yaml").write_text(
            "senses:\n  shell:\n    interval: 500ms\n    options:\n"
            f"      spool: {json.dumps(str(spool))}\n      files: [{json.dumps(str(history))}]\n"
            "      max_per_compute: 10000\n"
        )
        self.env = {**os.environ, "NERVE_SHELL_SPOOL": str(spool)}

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*NERVE, "--workspace", str(self.root), *args],
            capture_output=True, text=True, env=self.env, timeout=120, check=False,
        )  # fmt: skip

    def start(self, timeout: float = 180.0) -> None:
        """Start it; on a loaded machine `nerve start` may give up waiting while the daemon
        still comes up, so its status is polled a while longer."""
        done = self.cli("start")
        deadline = time.monotonic() + timeout
        while done.returncode != 0 and time.monotonic() < deadline:
            if self.cli("status").returncode == 0:
                return
            time.sleep(1)
        if done.returncode != 0:
            raise RuntimeError(f"nerve start failed: {done.stderr.strip()}")

    def stop(self) -> None:
        self.cli("stop")

    def observed(self) -> int:
        done = self.cli("query", "SELECT count(*) FROM events WHERE kind = 'observation'", "--csv")
        lines = done.stdout.strip().splitlines()
        return int(lines[-1]) if done.returncode == 0 and len(lines) >= 2 else -1

    def wait_observed(self, want: int, timeout: float = 60.0) -> int:
        deadline, seen = time.monotonic() + timeout, -1
        while time.monotonic() < deadline:
            seen = self.observed()
            if seen >= want:
                return seen
            time.sleep(0.5)
        return seen


def _hook(shell: str, tmp: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from nerve.shellhook import hook

    path = tmp / f"hook.{shell}"
    path.write_text(hook(shell))
    return path


def bench_shell(shell: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """Rounds of plain / hook with the daemon down / hook with it up, in turns."""
    hook = _hook(shell, tmp)
    best: dict[str, list[float]] = {}
    spool_ok, lost = True, 0
    for rnd in range(args.rounds):
        say(f"{shell}: round {rnd + 1}/{args.rounds}")
        spool = tmp / f"{shell}-{rnd}.spool"
        _keep_best(best, "plain", run_shell(shell, None, args.commands, tmp, tmp / "plain.spool"))
        spool_ok = spool_ok and spooled(tmp / "plain.spool") == []
        _keep_best(best, "hook_daemon_down", run_shell(shell, hook, args.commands, tmp, spool))
        spool_ok = spool_ok and spooled(spool) == _expected(args.commands)
        (tmp / f"{shell}-{rnd}").mkdir()
        daemon = Daemon(tmp / f"{shell}-{rnd}", spool)
        daemon.start()  # it reads what was spooled while it was down: nothing may be lost
        try:
            seen = daemon.wait_observed(args.commands)
            lost += args.commands - seen if seen >= 0 else args.commands
            gaps = run_shell(shell, hook, args.commands, tmp, spool)
            _keep_best(best, "hook_daemon_up", gaps)
            spool_ok = spool_ok and spooled(spool) == _expected(args.commands) * 2
        finally:
            daemon.stop()
    figures = {setup: _summary(gaps) for setup, gaps in best.items()}
    added = {
        setup: round(figures[setup]["p99_ms"] - figures["plain"]["p99_ms"], 3)
        for setup in ("hook_daemon_down", "hook_daemon_up")
    }
    added_p50 = {
        setup: round(figures[setup]["p50_ms"] - figures["plain"]["p50_ms"], 3)
        for setup in ("hook_daemon_down", "hook_daemon_up")
    }
    return {
        "figures": figures,
        "added_p99_ms": added,
        "added_p50_ms": added_p50,
        "spool_ok": spool_ok,
        "lost": lost,
    }


def _keep_best(best: dict[str, list[float]], setup: str, gaps: list[float]) -> None:
    """A setup's round with the lowest p99 counts: load that comes and goes falls on all."""
    if gaps and (setup not in best or percentile(gaps, 0.99) < percentile(best[setup], 0.99)):
        best[setup] = gaps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    base = QUICK if args.quick else DEFAULTS
    for key, value in base.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    shells = [s for s in ("bash", "zsh") if shutil.which(s)]
    shells = shells[:1] if args.quick else shells  # a quick run: one shell, one daemon start
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="nerve-hook-bench-") as tmp:
        for shell in shells:
            results[shell] = bench_shell(shell, args, Path(tmp))
    checks: dict[str, Any] = {"a_shell_was_found": bool(shells)}
    for shell, res in results.items():
        checks[f"{shell}_every_command_spooled"] = res["spool_ok"]
        checks[f"{shell}_nothing_lost_daemon_down"] = res["lost"] == 0
        worst = max(res["added_p99_ms"].values())
        # a quick run's few commands make p99 their slowest one: the goal is reported only
        checks[f"{shell}_added_p99_within_goal"] = worst <= GOAL_MS if not args.quick else None
        say(f"{shell}: {json.dumps(res['figures'])}; added p99 {res['added_p99_ms']} ms")
    failed = [k for k, v in checks.items() if v is False]
    for name in failed:
        say(f"check failed: {name}")
    result = {
        "commands": args.commands,
        "rounds": args.rounds,
        "goal_added_p99_ms": GOAL_MS,
        "shells": results,
        "checks": checks,
        "failed_checks": failed,
    }
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
