"""Fuzzing nerve's parsers with atheris: executions and crashes per target.

    .venv/bin/python bench/fuzz_bench.py [--seconds 60] [--targets spool,wal] [--quick]

Each target of ``bench/fuzz/`` (the spool line, an event as JSON, a WAL file, a Parquet
segment, a socket request, a nerve.yaml) runs in its own process under libFuzzer for
``--seconds`` (60; 2 with ``--quick``), its code instrumented for coverage, starting from the
target's seed corpus of valid inputs. The property each target checks is in
``bench/fuzz/__init__.py``: every input gets a result or a ``NerveError`` naming its place,
never another exception; an input that takes longer than ``--timeout`` (5 s) is a hang. A
process that stops at a crash starts again for the rest of the target's time (at most
``--restarts`` times), so one crash does not hide the executions after it.

Crash inputs are copied to ``--crashes`` (a kept temporary folder by default, its path
printed); a fixed one goes under ``tests/data/fuzz/<target>/``, which
``tests/test_fuzz.py`` replays. Checks: every target ran inputs, and none crashed. Ends with
``RESULT {"targets": {"spool": {"execs": …, "crashes": 0}, …}}``; exits 1 when a check fails.

``--run TARGET`` is the child process itself (atheris loaded), for one target.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType, ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, say, sized, workdir

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
TARGETS = ("spool", "wire", "wal", "segment", "request", "config")  # bench/fuzz's TARGETS
QUICK = {"seconds": 2.0}
FULL = {"seconds": 60.0}
_ARTIFACT = re.compile(r"^(crash|timeout|oom|leak|slow-unit)-")
_EXECS = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
_PROGRESS = re.compile(r"^#(\d+)\s", re.M)


@dataclass
class Tally:
    """What one target's runs did: inputs executed, crash inputs, processes started."""

    execs: int = 0
    crashes: list[Path] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {
            "execs": self.execs,
            "crashes": len(self.crashes),
            "runs": self.runs,
            "seconds": round(self.seconds, 1),
            "inputs": [path.name for path in self.crashes],
        }


def fuzz_target(
    name: str,
    seconds: float,
    folder: Path,
    *,
    timeout: float = 5.0,
    restarts: int = 3,
    rss_mb: int = 1536,
) -> Tally:
    """Run target ``name`` for ``seconds`` in child processes, its corpus and crash inputs
    under ``folder``; start again after a crash while time is left."""
    corpus, artifacts = folder / name / "corpus", folder / name / "artifacts"
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    tally, started = Tally(), time.monotonic()
    while tally.runs <= restarts:
        left = seconds - (time.monotonic() - started)
        if left < 1 and tally.runs:
            break
        stderr = _child(name, max(1, int(left)), corpus, artifacts, timeout, rss_mb)
        tally.runs += 1
        tally.execs += executions(stderr)
        found = sorted(p for p in artifacts.iterdir() if _ARTIFACT.match(p.name))
        if len(found) == len(tally.crashes):
            break  # ran its time out without a crash
        tally.crashes = found
        say(f"{name}: crash input {found[-1].name}\n{_tail(stderr)}")
    tally.seconds = time.monotonic() - started
    return tally


def _child(
    name: str, seconds: int, corpus: Path, artifacts: Path, timeout: float, rss_mb: int
) -> str:
    """One fuzzing process for ``seconds``; its stderr (libFuzzer's report)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--run", name, "--"]
    argv += [
        f"-max_total_time={seconds}",
        f"-timeout={max(1, round(timeout))}",
        f"-rss_limit_mb={rss_mb}",
        f"-artifact_prefix={artifacts}/",
        "-print_final_stats=1",
        str(corpus),
    ]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        errors="replace",
        cwd=ROOT,
        timeout=seconds + timeout + 120,
    )
    return proc.stderr


def executions(stderr: str) -> int:
    """Inputs a libFuzzer run executed: its final stats, else its last progress line."""
    found = _EXECS.findall(stderr)
    if found:
        return int(found[-1])
    progress = _PROGRESS.findall(stderr)
    return int(progress[-1]) if progress else 0


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.splitlines()[-lines:])


def run_child(name: str, libfuzzer_argv: Sequence[str]) -> None:
    """The child: seed the corpus, instrument the target's covered modules, and fuzz it."""
    import atheris

    sys.path.insert(0, str(ROOT))
    import fuzz

    target = fuzz.load(name)
    for module in target.COVERED:
        for func in _functions(sys.modules[module]):
            atheris.instrument_func(func)
    corpus = Path(libfuzzer_argv[-1])
    for index, seed in enumerate(target.seeds()):
        (corpus / f"seed-{index}").write_bytes(seed)
    atheris.Setup([sys.argv[0], *libfuzzer_argv], target.TestOneInput)
    atheris.Fuzz()


def _functions(module: ModuleType) -> list[FunctionType]:
    """The functions ``module`` defines: its own, and its classes' methods and properties."""
    found: list[FunctionType] = []
    for value in vars(module).values():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        members = vars(value).values() if isinstance(value, type) else [value]
        found += [func for func in map(_unwrapped, members) if isinstance(func, FunctionType)]
    return found


def _unwrapped(member: object) -> object:
    """The function behind a static or class method or a property, else ``member``."""
    if isinstance(member, (staticmethod, classmethod)):
        return member.__func__
    return member.fget if isinstance(member, property) else member


def keep_crashes(tallies: dict[str, Tally], folder: Path) -> None:
    """Copy every crash input to ``folder/<target>/`` and say where."""
    for name, tally in tallies.items():
        for path in tally.crashes:
            (folder / name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, folder / name / path.name)
            say(f"{name}: kept {folder / name / path.name}")


def render(tallies: dict[str, Tally]) -> None:
    print(f"{'target':<10} {'execs':>12} {'execs/s':>9} {'crashes':>8} {'runs':>5}")
    for name, t in tallies.items():
        rate = t.execs / t.seconds if t.seconds else 0.0
        print(f"{name:<10} {t.execs:>12,} {rate:>9,.0f} {len(t.crashes):>8} {t.runs:>5}")
        for path in t.crashes:
            print(f"           crash input: {path.name}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--seconds", type=float, help="per target (60; 2 with --quick)")
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated")
    parser.add_argument("--timeout", type=float, default=5.0, help="per input, seconds")
    parser.add_argument("--restarts", type=int, default=3, help="after a crash, per target")
    parser.add_argument("--crashes", type=Path, help="where crash inputs are copied")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--run", choices=TARGETS, help=argparse.SUPPRESS)
    parser.add_argument("libfuzzer", nargs="*", help=argparse.SUPPRESS)
    args = sized(parser.parse_args(argv), QUICK, FULL)
    unknown = sorted(set(args.targets.split(",")) - set(TARGETS))
    if unknown:
        parser.error(f"unknown target(s): {', '.join(unknown)} (known: {', '.join(TARGETS)})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.run:
        run_child(args.run, args.libfuzzer)
        return 0
    names = args.targets.split(",")
    tallies: dict[str, Tally] = {}
    with workdir("nerve-fuzz-") as tmp:
        for name in names:
            say(f"{name}: fuzzing for {args.seconds:g} s")
            tallies[name] = fuzz_target(
                name, args.seconds, tmp, timeout=args.timeout, restarts=args.restarts
            )
        crashed = any(t.crashes for t in tallies.values())
        if crashed:
            keep_crashes(tallies, args.crashes or Path(tempfile.mkdtemp(prefix="nerve-crashes-")))
    render(tallies)
    checks = {
        "every_target_ran": all(t.execs > 0 for t in tallies.values()),
        "no_crash": not crashed,
    }
    result = {
        "seconds": args.seconds,
        "timeout": args.timeout,
        "targets": {name: t.as_json() for name, t in tallies.items()},
        "checks": checks,
    }
    return finish(result)


if __name__ == "__main__":
    sys.exit(main())
