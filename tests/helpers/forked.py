"""Writer processes forked from one warm process, for the tests that SIGKILL a writer many
times: each writer is a real, separate process writing the real log, but it starts in
milliseconds instead of paying a fresh interpreter and nerve's imports every time.

A writer is a function ``main(*args)`` that prints to stdout (what it acknowledged, the step
it is in), as it would as a script; here its stdout and stderr are pipes the test reads.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection

# The forking process imports the writers (and so nerve's log and pyarrow) once, and pandas,
# which pyarrow imports the first time it builds an array (to see whether it was given a
# DataFrame): ~0.5 s of CPU each writer would pay again.
PRELOAD = ["tests.helpers.crash_writer", "tests.helpers.forget_writer", "pandas"]
CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload(PRELOAD)


def _child(main: Callable[..., object], out: Connection, err: Connection, *args: object) -> None:
    """In the forked writer: stdout and stderr go to the test's pipes, then ``main`` runs."""
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    out.close()
    err.close()
    main(*args)
    sys.stdout.flush()


@dataclass
class Writer:
    """A running writer: its process and the read ends of its stdout and stderr."""

    process: multiprocessing.process.BaseProcess
    out: Connection
    err: Connection

    def read(self, timeout: float) -> bytes:
        """What the writer printed next, waiting up to ``timeout`` s (b"" if nothing yet, or
        at its end)."""
        ready, _, _ = select.select([self.out.fileno()], [], [], timeout)
        return os.read(self.out.fileno(), 65536) if ready else b""

    def read_until(self, marker: bytes, timeout: float) -> bytes:
        """Everything printed until ``marker`` appears, the writer ends, or ``timeout`` s."""
        out = b""
        deadline = time.monotonic() + timeout
        while marker not in out and time.monotonic() < deadline:
            chunk = self.read(min(1.0, max(0.0, deadline - time.monotonic())))
            if not chunk and not self.process.is_alive():
                break
            out += chunk
        return out

    def kill(self) -> tuple[int | None, bytes, bytes]:
        """SIGKILL the writer: (its exit code, the rest of its stdout, its stderr)."""
        assert self.process.pid is not None
        with contextlib.suppress(ProcessLookupError):  # it may have ended on its own
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(30)
        rest, err = _drain(self.out), _drain(self.err)
        self.out.close()
        self.err.close()
        return self.process.exitcode, rest, err


def _drain(end: Connection) -> bytes:
    """Everything left in a pipe whose writer has ended."""
    data = b""
    while chunk := os.read(end.fileno(), 65536):
        data += chunk
    return data


def start(main: Callable[..., object], *args: object) -> Writer:
    """Fork a writer running ``main(*args)``."""
    out_r, out_w = CONTEXT.Pipe(duplex=False)
    err_r, err_w = CONTEXT.Pipe(duplex=False)
    process = CONTEXT.Process(target=_child, args=(main, out_w, err_w, *args), daemon=True)
    process.start()
    out_w.close()
    err_w.close()
    return Writer(process, out_r, err_r)
