"""Fuzz targets for nerve's parsers, one module each, run by ``bench/fuzz_bench.py``.

Each module has ``TestOneInput(data: bytes) -> None`` (what atheris calls with every input),
``seeds() -> list[bytes]`` (valid inputs the fuzzer starts from) and ``COVERED`` (the modules
whose branches guide the fuzzer: only they are instrumented, so a run starts in seconds).

The property every target checks: an input gets a result, or a
:class:`~nerve.errors.NerveError` whose message is one line naming the place (the file, the
field); anything else (another exception, a message without its place) escapes
``TestOneInput`` and is a crash. A hang is caught by the fuzzer's per-input timeout.

    spool     the shell hook's spool line (nerve.shellhook.parse_spool_line)
    wire      one event as JSON (nerve.log.wire: emit --jsonl, import)
    wal       a write-ahead log file (nerve.log.wal: scan, frames_after)
    segment   a sealed Parquet segment (nerve.log.segments: read_segment, read_since)
    request   one line on the daemon's socket (nerve.runtime.ipc, nerve.runtime.control)
    config    a nerve.yaml (nerve.config.parse_config)

No module imports atheris: the tests replay saved inputs through the same functions without it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from nerve.errors import NerveError

TARGETS = ("spool", "wire", "wal", "segment", "request", "config")


class Unplaced(AssertionError):
    """A target refused an input with a :class:`NerveError` that does not name its place."""


def load(name: str) -> ModuleType:
    """The target module called ``name`` (one of :data:`TARGETS`)."""
    if name not in TARGETS:
        raise ValueError(f"unknown fuzz target {name!r} (known: {', '.join(TARGETS)})")
    return importlib.import_module(f"{__name__}.{name}")


def placed(exc: NerveError, *places: str, lines: int = 1) -> None:
    """Check a refusal: a message of at most ``lines`` lines holding one of ``places`` (when
    any are given); raise :class:`Unplaced` otherwise."""
    text = str(exc)
    if not text.strip() or len(text.splitlines()) > lines:
        raise Unplaced(f"{type(exc).__name__} message is not {lines} line(s): {text[:300]!r}")
    if places and not any(place in text for place in places):
        raise Unplaced(f"{type(exc).__name__} names none of {places}: {text[:300]!r}")
