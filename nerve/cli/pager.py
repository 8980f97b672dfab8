"""A pager for long output on a terminal, as git and journalctl page.

Output is held until it is taller than the screen, then goes through ``NERVE_PAGER``,
``PAGER`` or ``less``; a short output is written as it came. Only a person gets one: stdin
and stdout on a terminal, ``--no-pager`` not given.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import IO, TextIO

PAGER_ENV = {"LESS": "FRSX"}  # quit if one screen, keep colours, cut long lines, no init


def pager_command(environ: Mapping[str, str]) -> list[str] | None:
    """The pager to run (``NERVE_PAGER`` first, then ``PAGER``, else ``less``), or None
    when it is set empty or to ``cat``."""
    text = environ.get("NERVE_PAGER", environ.get("PAGER"))
    if text is None:
        return ["less"] if shutil.which("less") else None
    words = shlex.split(text)
    return None if not words or words == ["cat"] else words


def may_page(environ: Mapping[str, str] | None = None) -> bool:
    """Paging needs a person: stdin and stdout on a terminal (not a pipe, not a test's
    stand-in), a terminal that can page, and no ``--no-pager``."""
    env = os.environ if environ is None else environ
    if PAGING.off or env.get("TERM") == "dumb":
        return False
    try:
        return os.isatty(sys.stdin.fileno()) and os.isatty(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False


class _Paging:
    """The process-wide pager switch: ``off`` from ``--no-pager``; ``stream`` while paged."""

    off = False
    stream: PagedOutput | None = None


PAGING = _Paging()


class PagedOutput(io.TextIOBase):
    """stdout held back until it is taller than the screen, then piped to the pager; a
    short output is written to the terminal as it was."""

    def __init__(self, real: TextIO, command: list[str], height: int) -> None:
        self.real, self.command, self.height = real, command, height
        self.held: list[str] = []
        self.lines = 0
        self.pipe: IO[str] | None = None
        self.proc: subprocess.Popen[str] | None = None

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:  # the terminal's, so its size is the terminal's
        return self.real.fileno()

    def write(self, text: str) -> int:
        if self.pipe is not None:
            return self.pipe.write(text)
        self.held.append(text)
        self.lines += text.count("\n")
        if self.lines >= self.height - 1:
            self._start()
        return len(text)

    def flush(self) -> None:
        if self.pipe is not None:
            self.pipe.flush()

    def _start(self) -> None:
        env = {**PAGER_ENV, **os.environ}
        self.proc = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=self.real, text=True, env=env
        )
        self.pipe = self.proc.stdin
        assert self.pipe is not None
        self.pipe.write("".join(self.held))
        self.held = []

    def finish(self) -> None:
        """Write what was held (a short output), or close the pipe and wait for the pager."""
        if self.proc is None:
            self.real.write("".join(self.held))
            self.real.flush()
            return
        with contextlib.suppress(BrokenPipeError):  # the person quit the pager early
            assert self.pipe is not None
            self.pipe.close()
        self.proc.wait()


def page() -> None:
    """Route stdout through the pager from here on, when a person is reading; the rows
    are written the same way, styled as on a terminal."""
    if PAGING.stream is not None or not may_page():
        return
    command = pager_command(os.environ)
    if command is None:
        return
    height = shutil.get_terminal_size().lines
    PAGING.stream = PagedOutput(sys.stdout, command, height)
    sys.stdout = PAGING.stream


def end_paging() -> None:
    stream, PAGING.stream = PAGING.stream, None
    if stream is not None:
        sys.stdout = stream.real
        stream.finish()
