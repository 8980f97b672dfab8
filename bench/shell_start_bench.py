"""What the shell hook adds to starting a new interactive shell, next to the same shell without it.

    .venv/bin/python bench/shell_start_bench.py [--starts 200] [--quick]

For each shell found (bash, zsh, fish; bash alone with ``--quick``), a new interactive shell
is started, shows its first prompt (its prompt hooks run, as before a person's first command)
and reads ``exit`` (``bash --rcfile RC -i``, ``zsh -i`` with ``ZDOTDIR``, ``fish -i`` with
``XDG_CONFIG_HOME``, ``exit`` on stdin), ``--starts`` times in each of two
setups that take turns start by start: **plain** (an empty start-up file) and **hooked** (the
one line ``nerve setup`` adds to it, sourcing the static hook file it writes, made here by the
same functions). This is what a person pays when they open a terminal: the hook file is read
and its functions defined, and no Python runs.

The cost is the hooked setup's median start time minus the plain one's, and the same at p90.
Goal: ≤ 5 ms at the median. Checks: the hooked shell really has the hook (it defines the
hook's function), the plain one does not, and the median cost is within the goal (reported,
not checked, with ``--quick``, whose few starts are noise on a loaded machine). The load
average is printed with the figures. Ends with ``RESULT {json}``; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
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

from nerve import __version__
from nerve.setup.plan import nerve_program, rc_line
from nerve.shellhook import hook_file

GOAL_MS = 5.0
# the function each hook defines (checked in the hooked shell, absent from the plain one)
PROBE = {
    "bash": "declare -F __nerve_precmd >/dev/null && echo hooked",
    "zsh": "(( $+functions[__nerve_precmd] )) && echo hooked",
    "fish": "functions -q __nerve_postexec; and echo hooked",
}


def _argv(shell: str, home: Path, command: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start ``shell`` interactively with ``home``'s
    start-up file and run ``command``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NERVE_", "BASH_ENV"))}
    env.update(HOME=str(home), TERM="dumb")
    if shell == "bash":
        return ["bash", "--rcfile", str(home / ".bashrc"), "-i", "-c", command], env
    if shell == "zsh":
        env["ZDOTDIR"] = str(home)
        return ["zsh", "-i", "-c", command], env
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    return ["fish", "-i", "-c", command], env


def _rc(home: Path, shell: str) -> Path:
    if shell == "fish":
        return home / ".config" / "fish" / "config.fish"
    return home / (".bashrc" if shell == "bash" else ".zshrc")


def _homes(base: Path, shell: str) -> dict[str, Path]:
    """Two homes for ``shell``: an empty start-up file, and the same with setup's line and
    the hook file it sources."""
    homes = {}
    for setup in ("plain", "hooked"):
        home = base / shell / setup
        rc = _rc(home, shell)
        rc.parent.mkdir(parents=True, exist_ok=True)
        rc.write_text("")
        homes[setup] = home
    hook = base / shell / "hook" / f"hook.{shell}"
    hook.parent.mkdir(parents=True)
    spool = base / shell / "spool"
    hook.write_text(hook_file(shell, spool=spool, nerve=nerve_program(), version=__version__))
    _rc(homes["hooked"], shell).write_text(rc_line(shell, hook) + "\n")
    return homes


def _start_ms(shell: str, home: Path) -> float:
    """One start to its first prompt (the prompt hooks run once, as before a person's first
    command) and out: the shell reads ``exit`` from stdin after that prompt."""
    argv, env = _argv(shell, home, "")
    argv = argv[: argv.index("-c")]
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, input=b"exit\n", capture_output=True, check=True)
    return (time.perf_counter() - t0) * 1000


def _hooked(shell: str, home: Path) -> bool:
    argv, env = _argv(shell, home, PROBE[shell])
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    return "hooked" in done.stdout


def _p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def measure(shell: str, base: Path, starts: int) -> dict[str, object]:
    """Start ``shell`` ``starts`` times in each setup, taking turns; the figures."""
    homes = _homes(base, shell)
    for home in homes.values():  # warm the page cache for both
        _start_ms(shell, home)
    times: dict[str, list[float]] = {"plain": [], "hooked": []}
    for k in range(starts):
        order = ("plain", "hooked") if k % 2 == 0 else ("hooked", "plain")
        for setup in order:
            times[setup].append(_start_ms(shell, homes[setup]))
    med = {s: statistics.median(v) for s, v in times.items()}
    p90 = {s: _p90(v) for s, v in times.items()}
    return {
        "shell": shell,
        "starts": starts,
        "plain_median_ms": round(med["plain"], 2),
        "hooked_median_ms": round(med["hooked"], 2),
        "added_median_ms": round(med["hooked"] - med["plain"], 2),
        "added_p90_ms": round(p90["hooked"] - p90["plain"], 2),
        "hook_seen": _hooked(shell, homes["hooked"]),
        "hook_absent_when_plain": not _hooked(shell, homes["plain"]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=None, help="starts per setup (200)")
    parser.add_argument("--quick", action="store_true", help="bash only, 20 starts")
    args = parser.parse_args(argv)
    starts = args.starts or (20 if args.quick else 200)
    shells = [s for s in ("bash", "zsh", "fish") if shutil.which(s)]
    shells = shells[:1] if args.quick else shells
    rows = []
    with tempfile.TemporaryDirectory(prefix="nerve-shell-start-") as tmp:
        for shell in shells:
            row = measure(shell, Path(tmp), starts)
            rows.append(row)
            print(
                f"{shell:5} plain {row['plain_median_ms']:7.2f} ms  hooked "
                f"{row['hooked_median_ms']:7.2f} ms  added median {row['added_median_ms']:+.2f}"
                f" ms, p90 {row['added_p90_ms']:+.2f} ms  ({starts} starts each)"
            )
    print(f"load average {os.getloadavg()[0]:.2f} (goal: added median <= {GOAL_MS} ms)")
    checks: dict[str, bool | None] = {}
    for r in rows:
        checks[f"{r['shell']}_hook_seen"] = bool(r["hook_seen"])
        checks[f"{r['shell']}_no_hook_when_plain"] = bool(r["hook_absent_when_plain"])
        within = float(str(r["added_median_ms"])) <= GOAL_MS
        checks[f"{r['shell']}_within_goal"] = None if args.quick else within
    failed = [name for name, ok in checks.items() if ok is False]
    for name in failed:
        print(f"check failed: {name}")
    result = {"starts": starts, "shells": rows, "checks": checks, "failed_checks": failed}
    print("RESULT " + json.dumps(result))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
