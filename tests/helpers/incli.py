"""Run the ``nerve`` entry point in this process, as a user's shell would run the command.

A subprocess costs an interpreter start and nerve's imports (about half a second); most CLI
tests only read what a command prints and its exit code, so they run it here instead, through
the same ``nerve.cli.main.run`` the console script calls, with its own stdin, stdout, stderr,
environment and working folder. A subprocess stays for what only a process shows (start-up,
signals, a server that runs until stopped): see :func:`needs_process`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from click.testing import CliRunner

# Commands that run until stopped, or whose process is what a test looks at; a daemon is
# started from a process of its own, so it is never a child (and, killed, a zombie) of this one.
_LONG_RUNNING = {
    ("dev",),
    ("mcp",),
    ("ui",),
    ("daemon", "run"),
    ("daemon", "start"),
    ("daemon", "restart"),
    ("start",),
    ("restart",),
    ("attend", "watch"),
}
# A process's default warning filters: what a user sees from the command, no more.
_QUIET = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
_FOLLOW_FLAGS = {"-f", "--follow"}
_WORKSPACE_FLAGS = {"-w", "--workspace"}


def _words(args: Sequence[str]) -> list[str]:
    """The command words, with ``--workspace DIR`` taken out wherever it stands."""
    words, skip = [], False
    for word in args:
        if skip:
            skip = False
        elif word in _WORKSPACE_FLAGS:
            skip = True
        elif not word.startswith("--workspace="):
            words.append(word)
    return words


def needs_process(args: Sequence[str], env: Mapping[str, str] | None) -> bool:
    """Whether this command must run in a process of its own."""
    if os.environ.get("NERVE_TEST_SUBPROCESS"):  # every command in a process, as before
        return True
    words = _words(args)
    if any(tuple(words[: len(cmd)]) == cmd for cmd in _LONG_RUNNING):
        return True
    if words[:1] == ["tail"] and _FOLLOW_FLAGS & set(words):
        return True
    # time zones and locale are read once per process
    return bool(env) and any(key in env for key in ("TZ", "LANG", "LC_ALL", "COLUMNS"))


@contextlib.contextmanager
def _folder(cwd: Path | None) -> Iterator[None]:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


def run_in_process(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``nerve ARGS`` through its entry point; returns what a subprocess run would."""
    from nerve.cli.main import run

    code: int = 0
    shown = warnings.showwarning
    runner = CliRunner()
    with runner.isolation(input=input, env={"NO_COLOR": "1", **(env or {})}) as streams:
        out, err, _ = streams
        with _folder(cwd), warnings.catch_warnings():
            warnings.simplefilter("always")
            for category in _QUIET:
                warnings.simplefilter("ignore", category)
            try:
                run(list(args))
            except SystemExit as exc:
                code = _exit_code(exc.code)
            except BaseException:  # what a process would print as a traceback
                traceback.print_exc()
                code = 1
            finally:
                _forget_keys()  # a process's unlocked keys die with it
                warnings.showwarning = shown
                sys.stdout.flush()
                sys.stderr.flush()
    stdout = out.getvalue().decode("utf-8", errors="replace")
    stderr = err.getvalue().decode("utf-8", errors="replace")
    return subprocess.CompletedProcess(["nerve", *args], code, stdout, stderr)


def _forget_keys() -> None:
    from nerve.log.crypt import forget_keys

    forget_keys()


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1
