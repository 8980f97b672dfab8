"""Mutation testing (mutmut) of the security-critical modules: the share of mutants killed.

    .venv/bin/python bench/mutation_bench.py [--modules nerve/tokens.py,nerve/ui/auth.py]
        [--max-mutants 40] [--time-limit 1800] [--max-children 2]

mutmut 3 copies the project into ``mutants/``, compiles every mutant in behind a trampoline,
runs the tests once to learn which test reaches which function, then runs for each mutant
only the tests that reach it. The bench copies the repository into a temporary folder and
writes a ``[tool.mutmut]`` there for the modules asked for (``only_mutate``) and the tests
that cover them (:data:`MODULES`), so the repository's own ``pyproject.toml`` and work tree
are never touched; ``mutants/`` is in ``.gitignore`` for a run by hand.

``--max-mutants`` keeps that many mutants per module (spread evenly over it; a second mutmut
run after the one that learns the tests); ``--time-limit`` stops mutmut after that many
seconds, and the mutants it did not reach count as not checked. A killed mutant is one a test
failed on (or timed out on); a survivor is one every test passed, or no test reached. Each
survivor is printed with its file, line and diff. Checks: mutmut ran, and every module got a
verdict for at least one mutant. Ends with ``RESULT {"modules": {"nerve/privacy":
{"killed_share": …, "killed": …, "survived": …}, …}}``; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, say, workdir

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = Path(sys.executable).with_name("mutmut")

# module (a file, or a folder meaning every file in it) -> the tests that cover it
MODULES: dict[str, tuple[str, ...]] = {
    "nerve/privacy": ("tests/privacy", "tests/log/test_forget.py", "tests/log/test_archive.py"),
    "nerve/tokens.py": ("tests/test_tokens.py", "tests/ui/test_ui_hostile.py"),
    "nerve/ui/auth.py": ("tests/ui/test_ui_hostile.py", "tests/ui/test_ui_login.py"),
    "nerve/ui/guard.py": (
        "tests/ui/test_ui_guard.py",
        "tests/ui/test_ui_login.py",
        "tests/ui/test_ui_hostile.py",
    ),
    "nerve/mcp/budgets.py": (
        "tests/mcp/test_mcp_budgets.py",
        "tests/mcp/test_mcp_tools.py",
        "tests/mcp/test_mcp_privacy.py",
    ),
    "nerve/mcp/sandbox.py": (
        "tests/mcp/test_mcp_sandbox.py",
        "tests/mcp/test_mcp_tools.py",
        "tests/mcp/test_mcp_privacy.py",
    ),
    "nerve/log/crypt.py": (
        "tests/log/test_crypt.py",
        "tests/log/test_crypt_chunks.py",
        "tests/log/test_crypt_keys.py",
    ),
    "nerve/shellhook.py": (
        "tests/runtime/test_shellhook_units.py",
        "tests/runtime/test_senses_context.py",
        "tests/runtime/test_shell_spool.py",
        "tests/test_fuzz.py",
    ),
    "senses/shell": (
        "tests/runtime/test_shell_spool.py",
        "tests/runtime/test_senses_builtin.py",
        "tests/runtime/test_senses_context.py",
        "tests/privacy/test_privacy_cut.py",
    ),
    "senses/focus": (
        "tests/runtime/test_focus_sense.py",
        "tests/runtime/test_senses_context.py",
        "tests/runtime/test_senses_builtin.py",
        "tests/privacy/test_privacy_cut.py",
    ),
    "nerve/fleet/head.py": (
        "tests/fleet/test_fleet_head.py",
        "tests/fleet/test_fleet.py",
        "tests/fleet/test_fleet_integrity.py",
        "tests/fleet/test_fleet_keys.py",
    ),
}
# A process a test starts (a daemon, its sense workers, the query process) runs the mutated
# copy too, with the mutant named in MUTANT_UNDER_TEST, but in its own working folder. In
# mutmut's first, stats-gathering run its trampolines load mutmut's configuration from the
# working folder's pyproject.toml, find none, and exit ("Could not figure out where the code
# to mutate is"), failing that run as a whole. The bench puts a sitecustomize on PYTHONPATH
# that loads the configuration from the copy first, in every process started under mutmut.
_SITE = """\
\"\"\"Written by bench/mutation_bench.py: mutmut's configuration, loaded from {project}
in every process started under mutmut, whatever its working folder.\"\"\"
import os

if "MUTANT_UNDER_TEST" in os.environ:
    from mutmut.configuration import config

    _here = os.getcwd()
    os.chdir({project!r})
    try:
        config()
    finally:
        os.chdir(_here)
"""
# a mutant's tests are stopped after this many times their time in the first run (plus 1 s),
# counted as a timeout (killed); mutmut's default of 15 lets one hung mutant hold a worker for
# ten minutes when its tests took 40 s (a server a mutant keeps from answering waits on wall
# time, not CPU)
TIMEOUT_MULTIPLIER = 4.0
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
SURVIVED = {"survived", "no tests"}
_COPY_IGNORE = shutil.ignore_patterns(
    ".git", "mutants", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".venv"
)
_ALSO_COPY = ["conformance", "projections", "workflows", "nerve.yaml", "bench", "README.md"]
_ALSO_COPY += ["docs", "notebooks"]
_RESULT_LINE = re.compile(r"^\s+(\S+__mutmut_\d+): (.+)$")


@dataclass
class Figures:
    """One module's verdicts, and its survivors (mutant name, file, line, diff)."""

    killed: int = 0
    survived: int = 0
    unchecked: int = 0
    survivors: list[dict[str, object]] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        judged = self.killed + self.survived
        return {
            "killed_share": round(self.killed / judged, 3) if judged else None,
            "killed": self.killed,
            "survived": self.survived,
            "not_checked": self.unchecked,
        }


def module_files(module: str) -> list[str]:
    """The ``.py`` files a module names (itself, or every one in its folder)."""
    path = ROOT / module
    if path.is_file():
        return [module]
    return sorted(str(p.relative_to(ROOT)) for p in path.rglob("*.py"))


def owner(path: str, modules: Sequence[str]) -> str | None:
    """The module of ``modules`` a mutated file belongs to."""
    return next((m for m in modules if path == m or path.startswith(m.rstrip("/") + "/")), None)


def mutmut_config(modules: Sequence[str]) -> str:
    """The ``[tool.mutmut]`` table for ``modules`` and the tests mapped to them."""
    tests = sorted({test for module in modules for test in MODULES[module]})
    table = {
        "source_paths": ["nerve", "senses"],
        "only_mutate": [f for module in modules for f in module_files(module)],
        "also_copy": _ALSO_COPY,
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-p", "no:xdist", "-m", "not fuzz"],
        "pytest_add_cli_args_test_selection": tests,
        "timeout_multiplier": TIMEOUT_MULTIPLIER,
    }
    lines = ["[tool.mutmut]"] + [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


def prepare(project: Path, modules: Sequence[str]) -> None:
    """A copy of the repository at ``project`` whose pyproject holds the mutmut table;
    ``mutants/`` made first so the import system sees it from the start (a folder on
    PYTHONPATH that is missing at start-up is never looked in again)."""
    shutil.copytree(ROOT, project, ignore=_COPY_IGNORE)
    text = (project / "pyproject.toml").read_text(encoding="utf-8")
    text = re.sub(r"\n\[tool\.mutmut\][^\[]*", "\n", text)
    (project / "pyproject.toml").write_text(text + "\n" + mutmut_config(modules), "utf-8")
    (project / "mutants").mkdir()
    (project / "mutmut-site").mkdir()
    site = _SITE.format(project=str(project))
    (project / "mutmut-site" / "sitecustomize.py").write_text(site, "utf-8")


def run_mutmut(project: Path, argv: Sequence[str], deadline: float | None) -> int | None:
    """``mutmut ARGV`` in ``project`` (its own process group, stopped at ``deadline``);
    its exit status, or None when it was stopped."""
    path = os.pathsep.join([str(project / "mutants"), str(project / "mutmut-site")])
    env = {**os.environ, "PYTHONPATH": path, "NO_COLOR": "1"}
    log = (project / "mutmut.log").open("a")
    proc = subprocess.Popen(
        [str(MUTMUT), *argv],
        cwd=project,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        left = None if deadline is None else max(1.0, deadline - time.monotonic())
        return proc.wait(timeout=left)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return None
    finally:
        log.close()


def verdicts(project: Path) -> dict[str, str]:
    """Every mutant's status as ``mutmut results --all`` reports it."""
    proc = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"], cwd=project, capture_output=True, text=True
    )
    return {
        m[1]: m[2].strip() for line in proc.stdout.splitlines() if (m := _RESULT_LINE.match(line))
    }


def chosen(names: Sequence[str], modules: Sequence[str], limit: int) -> list[str]:
    """At most ``limit`` mutants per module, spread evenly over its mutants."""
    out: list[str] = []
    for module in modules:
        own = [n for n in names if owner(_file_of(n), [module])]
        step = max(1, len(own) / limit) if own else 1
        out += [own[int(i * step)] for i in range(min(limit, len(own)))]
    return out


def _file_of(name: str) -> str:
    """``nerve/tokens.py`` for ``nerve.tokens.x_read__mutmut_3`` (a module's file, or its
    package's ``__init__.py``)."""
    dotted = name.partition("__mutmut_")[0].rsplit(".", 1)[0]
    path = dotted.replace(".", "/")
    return f"{path}.py" if (ROOT / f"{path}.py").exists() else f"{path}/__init__.py"


def survivor(project: Path, name: str) -> dict[str, object]:
    """A surviving mutant's file, line and diff (``mutmut show``)."""
    proc = subprocess.run([str(MUTMUT), "show", name], cwd=project, capture_output=True, text=True)
    diff = "\n".join(line for line in proc.stdout.splitlines() if not line.startswith("# "))
    path = _file_of(name)
    return {"mutant": name, "file": path, "line": _line(path, name, diff), "diff": diff}


def _line(path: str, name: str, diff: str) -> int | None:
    """The file line the diff changes: the function's first line plus the hunk's offset."""
    func = name.partition("__mutmut_")[0].rsplit(".", 1)[1].removeprefix("x_").split("ǁ")[-1]
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    start = next((n.lineno for n in defs if n.name == func), None)
    if start is None:
        return None
    offset = 0
    for line in diff.splitlines():
        if line.startswith(("---", "+++", "@@")):
            continue
        if line.startswith("-"):
            return start + offset
        offset += 0 if line.startswith("+") else 1
    return start


def tally(project: Path, modules: Sequence[str], results: dict[str, str]) -> dict[str, Figures]:
    figures = {module: Figures() for module in modules}
    for name, status in sorted(results.items()):
        module = owner(_file_of(name), modules)
        if module is None:
            continue
        fig = figures[module]
        if status in KILLED:
            fig.killed += 1
        elif status in SURVIVED:
            fig.survived += 1
            fig.survivors.append({**survivor(project, name), "status": status})
        else:
            fig.unchecked += 1
    return figures


def render(figures: dict[str, Figures]) -> None:
    print(f"{'module':<22} {'killed':>7} {'survived':>9} {'unchecked':>10} {'share':>6}")
    for module, fig in figures.items():
        share = fig.as_json()["killed_share"]
        text = f"{share:.2f}" if isinstance(share, float) else "-"
        print(f"{module:<22} {fig.killed:>7} {fig.survived:>9} {fig.unchecked:>10} {text:>6}")
    for fig in figures.values():
        for s in fig.survivors:
            print(f"\nsurvived ({s['status']}): {s['file']}:{s['line']}  {s['mutant']}")
            print(s["diff"])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--modules", default=",".join(MODULES), help="comma-separated")
    parser.add_argument("--max-mutants", type=int, help="per module (default: all)")
    parser.add_argument("--time-limit", type=float, help="seconds for the whole run")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.modules.split(",")) - set(MODULES))
    if unknown:
        parser.error(f"unknown module(s): {', '.join(unknown)} (known: {', '.join(MODULES)})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    modules = args.modules.split(",")
    deadline = None if args.time_limit is None else time.monotonic() + args.time_limit
    children = ["--max-children", str(args.max_children)]
    with workdir("nerve-mutation-", keep=args.keep) as tmp:
        project = tmp / "project"
        prepare(project, modules)
        say(f"mutmut over {', '.join(modules)} in {project}")
        if args.max_mutants is None:
            status = run_mutmut(project, ["run", *children], deadline)
        else:  # learn the mutants and their tests, then run the chosen ones
            run_mutmut(project, ["run", *children, "none-such__mutmut_0"], deadline)
            picked = chosen(sorted(verdicts(project)), modules, args.max_mutants)
            say(f"running {len(picked)} of the mutants")
            status = run_mutmut(project, ["run", *children, *picked], deadline) if picked else 1
        results = verdicts(project)
        figures = tally(project, modules, results)
        log_tail = (project / "mutmut.log").read_text(errors="replace")[-1500:]
    render(figures)
    if status not in (0, None):
        say(f"mutmut exited {status}: {log_tail}")
    checks = {
        "mutmut_ran": status in (0, None) and bool(results),
        "every_module_judged": all(f.killed + f.survived for f in figures.values()),
    }
    return finish(
        {
            "modules": {m: f.as_json() for m, f in figures.items()},
            "survivors": [s for f in figures.values() for s in f.survivors],
            "stopped_at_time_limit": status is None,
            "checks": checks,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
