"""Ctrl+C, anywhere in a command: one line on stderr and exit 130, within a second.

Python turns SIGINT into ``KeyboardInterrupt`` only when the main thread next runs Python
code: a DuckDB query busy in C++ noticed it late or turned it into ``RuntimeError: Query
interrupted`` (a traceback, exit 1), and one streaming Arrow batches ran on for ~40 s. So the
signal is also written to a pipe (``signal.set_wakeup_fd``) that a watcher thread reads the
moment it lands: the command gets :data:`GRACE_S` to unwind through its ``finally`` blocks
(the entry point, ``run``, prints the line), then the watcher prints it and ends the process.

A command that takes Ctrl+C over (``dev``, ``daemon run``, ``ui``: its own SIGINT handler, an
asyncio loop's), and a pager still on the screen, are left alone. Only the ``nerve``
process's own run arms this; a test calling ``run(argv)`` in process does not.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from types import FrameType

__all__ = ["GRACE_S", "LINE", "arm", "leave", "own_process", "report", "seen", "start"]

LINE = "interrupted (Ctrl+C)\n"
GRACE_S = 0.8  # the command's own unwinding; then the watcher ends the process


class _Watch:
    """What the watcher and the main thread share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.interrupted = threading.Event()
        self.armed = False  # the watcher runs (the nerve process's own run)
        self.started = False  # run() began: the default handler is back in place
        self.reported = False


_WATCH = _Watch()


def _ignore_while_loading(signum: int, frame: FrameType | None) -> None:
    """Before the command starts, Ctrl+C is the watcher's alone (no import traceback)."""


def own_process(argv: list[str] | None = None) -> bool:
    """Whether this process is the ``nerve`` command (its script, or ``python -m nerve``)."""
    words = sys.argv if argv is None else argv
    script = words[0] if words else ""  # no pathlib: it costs the first ~0.1 s unguarded
    folder, name = os.path.split(script)
    return name == "nerve" or (name == "__main__.py" and os.path.basename(folder) == "nerve")


def arm() -> None:
    """Start the watcher and hold Ctrl+C off while nerve's modules load."""
    if threading.current_thread() is not threading.main_thread():
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.signal(signal.SIGINT, _ignore_while_loading)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    _WATCH.armed = True
    threading.Thread(target=_watch, args=(read_end,), name="nerve-ctrl-c", daemon=True).start()


def start() -> None:
    """The command begins: Ctrl+C raises ``KeyboardInterrupt`` again, as Python's does."""
    if signal.getsignal(signal.SIGINT) is _ignore_while_loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _WATCH.started = True


def seen(wait_s: float = 0.05) -> bool:
    """Whether Ctrl+C was pressed (an error out of a command may be how it landed)."""
    return _WATCH.armed and _WATCH.interrupted.wait(wait_s)


def report(*, raw: bool = False) -> None:
    """Print the line, once, whoever gets here first (``raw``: straight to fd 2, as the
    watcher must, since the main thread may hold the stream's lock)."""
    with _WATCH.lock:
        if _WATCH.reported:
            return
        _WATCH.reported = True
        if raw:
            with contextlib.suppress(OSError):
                os.write(2, LINE.encode())
            return
        sys.stderr.write(LINE)
        sys.stderr.flush()


def leave(code: int) -> None:
    """End the process now, what was written flushed."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _watch(read_end: int) -> None:
    """Wait for SIGINT; give the command its grace, then end the process if it is still
    here and nothing else took Ctrl+C over."""
    while True:
        try:
            got = os.read(read_end, 64)
        except OSError:
            return
        if not got:
            return
        if signal.SIGINT in got:
            _WATCH.interrupted.set()
            if _WATCH.started:
                threading.Event().wait(GRACE_S)
            if _handled_elsewhere():
                continue
            report(raw=True)
            os._exit(130)


def _handled_elsewhere() -> bool:
    """A command that put its own SIGINT handler in place, or a pager still showing."""
    handler = signal.getsignal(signal.SIGINT)
    if handler not in (signal.default_int_handler, _ignore_while_loading):
        return True
    pager = sys.modules.get("nerve.cli.pager")
    stream = getattr(getattr(pager, "PAGING", None), "stream", None)
    proc = getattr(stream, "proc", None)
    return proc is not None and proc.poll() is None
