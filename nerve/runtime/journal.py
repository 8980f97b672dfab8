"""The daemon's own log: one line per event of its life, stamped with local time.

This is not the event log (that is ``nerve tail``). It says when the daemon started and
stopped, reloads, worker restarts, seal trouble, errors and surfaced highlights, for a
person reading ``nerve daemon logs``. Lines go through the standard ``nerve`` logger, so
:func:`nerve.errors.report` lands here too; whoever runs the kernel chooses where they go
(``data/daemon.log``, stderr, stdout, the dev view) with :func:`journal`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from nerve import fsio

if TYPE_CHECKING:
    import asyncio

LOGGER = logging.getLogger("nerve")
# asyncio's own: a task that failed unexpectedly is reported there, with its traceback
_LOGGERS = (LOGGER, logging.getLogger("asyncio"))
STAMP = "%Y-%m-%d %H:%M:%S"
RECENT = 200
MAX_RELAYED = 2000  # characters of one relayed line


def say(text: str) -> None:
    LOGGER.info(text)


def warn(text: str) -> None:
    LOGGER.warning(text)


class Repeats:
    """Warn about the same thing again at most once per ``every_s``, unless its text changes
    (a sense failing the same way every compute would fill the log)."""

    def __init__(self, every_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s, self._clock = every_s, clock
        self._last: dict[str, tuple[str, float]] = {}

    def warn(self, key: str, text: str) -> None:
        now = self._clock()
        last = self._last.get(key)
        if last is None or last[0] != text or now - last[1] >= self.every_s:
            self._last[key] = (text, now)
            warn(text)


def stamp(wall_s: float) -> str:
    return time.strftime(STAMP, time.localtime(wall_s))


def format_line(wall_s: float, level: int, text: str) -> str:
    """``2025-06-01 14:03:05 warning: text``; later lines of ``text`` are indented."""
    tag = "" if level < logging.WARNING else f"{logging.getLevelName(level).lower()}: "
    first, *rest = text.splitlines() or [""]
    return "\n".join([f"{stamp(wall_s)} {tag}{first}", *(f"    {line}" for line in rest)])


def senses_text(names: list[str]) -> str:
    return f"{len(names)} senses" + (f" ({', '.join(names)})" if names else "")


def banner(
    workspace: Path, socket: Path | None, senses: list[str], events: int, segments: int
) -> str:
    """The start-up line: version, workspace, pid, socket, senses and log position."""
    from nerve.version import __version__

    parts = [f"workspace {workspace}", f"pid {os.getpid()}"]
    if socket is not None:
        parts.append(f"socket {socket}")
    parts += [senses_text(senses), f"log at {events:,} events in {segments:,} segments"]
    return f"nerve {__version__} started: " + ", ".join(parts)


def _same(text: str) -> str:
    return text


async def relay(
    stream: asyncio.StreamReader, source: str, clean: Callable[[str], str] = _same
) -> None:
    """Log each line a child process writes on ``stream`` (a sense's print(), a crash's
    traceback) as ``source: line``, until it closes; ``clean`` redacts each line first
    (the workspace's privacy rules: a sense may print a secret)."""
    buffer = b""
    while chunk := await stream.read(1 << 16):
        *lines, buffer = (buffer + chunk).split(b"\n")
        if len(buffer) > MAX_RELAYED:  # no newline in sight: log what there is
            lines, buffer = [*lines, buffer], b""
        for line in lines:
            _relayed(source, line, clean)
    if buffer:
        _relayed(source, buffer, clean)


def _relayed(source: str, line: bytes, clean: Callable[[str], str]) -> None:
    text = clean(line.decode(errors="replace").rstrip("\r"))
    say(f"{source}: {text[:MAX_RELAYED]}")


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return format_line(record.created, record.levelno, text)


class _Stream(logging.Handler):
    """Each line written and flushed at once; a full disk or a closed pipe is ignored
    (the daemon must not stop because its own log cannot be written)."""

    def __init__(self, stream: TextIO, encrypt: Callable[[str], str] | None = None) -> None:
        super().__init__()
        self.stream = stream
        self.encrypt = encrypt
        self.setFormatter(_Format())

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(OSError, ValueError):
            text = self.format(record)
            self.stream.write((self.encrypt(text) if self.encrypt else text) + "\n")
            self.stream.flush()

    def handleError(self, record: logging.LogRecord) -> None:
        pass


@dataclass(frozen=True)
class Entry:
    wall_s: float
    level: int
    text: str


class Recent(logging.Handler):
    """The latest entries in memory, for the dev view."""

    def __init__(self, size: int = RECENT) -> None:
        super().__init__()
        self.entries: deque[Entry] = deque(maxlen=size)
        self.total = 0  # entries ever logged: a position for since()

    def emit(self, record: logging.LogRecord) -> None:
        self.entries.append(Entry(record.created, record.levelno, record.getMessage()))
        self.total += 1

    def since(self, total: int) -> list[Entry]:
        """The entries logged after ``total`` was read (as many as are kept)."""
        count = min(self.total - total, len(self.entries))
        return list(self.entries)[len(self.entries) - count :] if count > 0 else []


def same_file(stream: TextIO, path: Path) -> bool:
    """True when ``stream`` already writes to ``path`` (a background daemon's stderr)."""
    try:
        return os.path.samestat(os.fstat(stream.fileno()), os.stat(path))
    except (OSError, ValueError):  # no file descriptor (a StringIO), or no file yet
        return False


@contextlib.contextmanager
def journal(
    path: Path | None, *echo: TextIO, encrypt: Callable[[str], str] | None = None
) -> Iterator[Recent]:
    """Send the ``nerve`` logger's lines to the file at ``path`` and to each ``echo``
    stream (skipping a stream that is that same file) for the length of the block.
    ``encrypt``: how a line is written to the file (an encrypted workspace's envelope)."""
    recent = Recent()
    handlers: list[logging.Handler] = [recent]
    with contextlib.ExitStack() as stack:
        if path is not None:
            file = stack.enter_context(
                os.fdopen(fsio.open_append(path), "a", encoding="utf-8", errors="replace")
            )
            handlers.append(_Stream(file, encrypt))
        handlers += [_Stream(s) for s in echo if path is None or not same_file(s, path)]
        stack.enter_context(_attached(handlers))
        yield recent


@contextlib.contextmanager
def echo(stream: TextIO) -> Iterator[None]:
    """Also write the lines to ``stream`` for the length of the block."""
    handler = _Stream(stream)
    for logger in _LOGGERS:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger in _LOGGERS:
            logger.removeHandler(handler)


@contextlib.contextmanager
def _attached(handlers: list[logging.Handler]) -> Iterator[None]:
    saved = [(logger.propagate, logger.level) for logger in _LOGGERS]
    LOGGER.setLevel(logging.INFO)
    for logger in _LOGGERS:
        logger.propagate = False  # an application's root handlers would print lines twice
        for handler in handlers:
            logger.addHandler(handler)
    try:
        yield
    finally:
        for logger, (propagate, level) in zip(_LOGGERS, saved, strict=True):
            for handler in handlers:
                logger.removeHandler(handler)
            logger.propagate = propagate
            logger.setLevel(level)
