"""Run a command safely (seed 001's ``spawnSafe``): :func:`run_argv` and what it returns.

    WorkflowError (nerve.errors)
    ├── ArgvError       run_argv got a str, bytes, empty argv or a non-str item (a TypeError too)
    └── CommandFailed   a command could not start (kind "spawn_failed"), exited non-zero ("exit")
                        or ran past its timeout ("timeout")

`run_argv` never goes through a shell: the program gets exactly the arguments it is given. The
child runs in a new session, so a timeout kills everything it started, not just the child.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from nerve.errors import WorkflowError

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_S",
    "ArgvError",
    "CommandFailed",
    "CommandFailureKind",
    "CommandResult",
    "checked_argv",
    "run_argv",
]

MIB = 1024 * 1024
DEFAULT_MAX_OUTPUT_BYTES = 10 * MIB
"""Per stream: stdout and stderr are each kept up to this many bytes."""

CommandFailureKind = Literal["spawn_failed", "exit", "timeout"]
DEFAULT_TIMEOUT_S = 300.0
"""run_argv's and run_agent's default time limit (seed 001's 300,000 ms)."""

_READ_CHUNK = 64 * 1024
_DRAIN_GRACE_S = 2.0
_STDERR_TAIL_CHARS = 500


class ArgvError(WorkflowError, TypeError):
    """Raised when run_argv gets a str or bytes, an empty argv, or an item that is not a str."""


class CommandFailed(WorkflowError):
    """Raised when a command cannot start, or by `CommandResult.check` when it did not succeed.

    `kind` is "spawn_failed" (not found, not executable, bad cwd), "exit" (non-zero exit or
    killed by a signal) or "timeout". `result` is None only for "spawn_failed".
    """

    def __init__(
        self,
        message: str,
        *,
        kind: CommandFailureKind,
        argv: tuple[str, ...],
        result: CommandResult | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.kind: CommandFailureKind = kind
        self.argv = argv
        self.result = result


@dataclass(frozen=True)
class CommandResult:
    """What a finished (or timed-out) command did.

    `exit_code` is None when the command was still running at its deadline, negative N when a
    signal N ended it. `truncated` is True when stdout or stderr went past the output cap.
    """

    argv: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: int
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its timeout."""
        return self.exit_code == 0 and not self.timed_out

    def check(self) -> CommandResult:
        """Return self when ok, else raise CommandFailed naming the program, code and stderr."""
        if self.ok:
            return self
        kind: CommandFailureKind = "timeout" if self.timed_out else "exit"
        message = f"{_outcome(self)}; {_stderr_tail(self.stderr)}"
        raise CommandFailed(message, kind=kind, argv=self.argv, result=self)


def run_argv(
    argv: Sequence[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    inherit_env: bool = True,
    cwd: Path | None = None,
    input: bytes | None = None,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
) -> CommandResult:
    """Run argv (never through a shell) and return what it did; a non-zero exit is not raised.

    `timeout_s` defaults to 300 s, as seed 001's spawnSafe. The child starts in a new
    session; at the deadline its whole process group is killed. `env` is laid over
    os.environ when `inherit_env`, else it is the child's entire environment. Raises
    ArgvError for a bad argv and CommandFailed("spawn_failed") when the program cannot be
    started.
    """
    args = checked_argv(argv)
    _check_limits(timeout_s, max_output_bytes)
    started = time.monotonic()
    proc = _spawn(args, _child_env(env, inherit_env), cwd, with_input=input is not None)
    try:
        deadline = started + timeout_s
        return _supervise(proc, args, started, deadline, input=input, limit=max_output_bytes)
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise


def checked_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if isinstance(argv, str | bytes | bytearray):
        raise ArgvError(
            f"argv must be a sequence of arguments, not a {type(argv).__name__}: {argv!r}",
            hint="nerve never runs a shell; split it yourself, e.g. ['git', 'status']",
        )
    args = tuple(argv)
    if not args:
        raise ArgvError("argv is empty; argv[0] must name the program to run")
    for arg in args:
        if not isinstance(arg, str) or "\0" in arg:
            raise ArgvError(f"every argv item must be a str without NUL bytes, got {arg!r}")
    return args


def _check_limits(timeout_s: float, max_output_bytes: int) -> None:
    if not timeout_s > 0:
        raise WorkflowError(f"timeout_s must be greater than 0, got {timeout_s!r}")
    if max_output_bytes < 0:
        raise WorkflowError(f"max_output_bytes must be 0 or more, got {max_output_bytes!r}")


def _child_env(env: Mapping[str, str] | None, inherit_env: bool) -> dict[str, str]:
    base = dict(os.environ) if inherit_env else {}
    return base | dict(env or {})


def _spawn(
    argv: tuple[str, ...], env: dict[str, str], cwd: Path | None, *, with_input: bool
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if with_input else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            bufsize=0,
            start_new_session=True,
        )
    except OSError as exc:
        message = f"could not start {argv[0]!r}: {exc}"
        raise CommandFailed(message, kind="spawn_failed", argv=argv) from exc


def _supervise(
    proc: subprocess.Popen[bytes],
    argv: tuple[str, ...],
    started: float,
    deadline: float,
    *,
    input: bytes | None,
    limit: int,
) -> CommandResult:
    assert proc.stdout is not None and proc.stderr is not None
    captures = (_Capture(proc.stdout, limit), _Capture(proc.stderr, limit))
    if input is not None and proc.stdin is not None:
        threading.Thread(target=_feed, args=(proc.stdin, input), daemon=True).start()
    exit_code = _wait_until(proc, deadline)
    timed_out = exit_code is None or not _join(captures, deadline)
    if timed_out:
        _kill_group(proc)
        proc.wait()
        _join(captures, time.monotonic() + _DRAIN_GRACE_S)
    out, err = captures
    return CommandResult(
        argv=argv,
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_ms=int((time.monotonic() - started) * 1000),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
    )


class _Capture:
    """Drains one pipe on a daemon thread, keeping at most `limit` bytes, then closes it."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._data = bytearray()
        self.truncated = False
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        with self._stream:
            while chunk := self._stream.read(_READ_CHUNK):
                room = max(self._limit - len(self._data), 0)
                self._data += chunk[:room]
                self.truncated = self.truncated or len(chunk) > room

    def text(self) -> str:
        return bytes(self._data).decode("utf-8", errors="replace")


def _feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError), stream:
        while data:
            data = data[stream.write(data) :]


def _wait_until(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    try:
        return proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        return None


def _join(captures: Sequence[_Capture], deadline: float) -> bool:
    for capture in captures:
        capture.thread.join(max(deadline - time.monotonic(), 0.0))
    return not any(capture.thread.is_alive() for capture in captures)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The child leads its own session, so its pid is the group id of everything it started.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _outcome(result: CommandResult) -> str:
    program = result.argv[0]
    if result.timed_out:
        return f"{program!r} timed out after {result.duration_ms} ms"
    code = result.exit_code
    if code is not None and code < 0:
        return f"{program!r} was killed by {signal.Signals(-code).name}"
    return f"{program!r} exited with code {code}"


def _stderr_tail(stderr: str) -> str:
    tail = stderr.strip()[-_STDERR_TAIL_CHARS:]
    return f"stderr: {tail}" if tail else "no stderr"
