"""A ``nerve.yaml`` (``nerve.config.parse_config``): the bytes as UTF-8 text (with
replacement: a file that is not UTF-8 is refused before parsing), every problem an issue
naming the file."""

from __future__ import annotations

from pathlib import Path

from nerve.config import parse_config
from nerve.errors import NerveError

from . import Unplaced, placed

FILENAME = "fuzz/nerve.yaml"
_BUNDLED = Path(__file__).resolve().parents[2] / "nerve.yaml"

# The modules whose branches guide the fuzzer (only they are instrumented).
COVERED = (
    "nerve.config",
    "nerve.config.yamlmap",
    "nerve.config.models",
    "nerve.config.recall",
    "nerve.durations",
)


def seeds() -> list[bytes]:
    """The bundled workspace's file, an empty one, and a small one with a reflex."""
    small = (
        b"senses:\n  cpu:\n    interval: 10s\n    throttle: 2s\n"
        b"reflexes:\n  - sense: cpu\n    on: [cpu]\n    interval: 5s\n"
    )
    return [_BUNDLED.read_bytes(), b"", small]


def TestOneInput(data: bytes) -> None:
    """A config, or a refusal whose every line names the file."""
    text = data.decode("utf-8", "replace")
    try:
        parse_config(text, FILENAME)
    except NerveError as exc:
        lines = str(exc).splitlines()
        unplaced = [line for line in lines if not line.startswith(FILENAME)]
        if unplaced:
            message = f"{type(exc).__name__} line without the file: {unplaced[0]!r}"
            raise Unplaced(message) from exc
        placed(exc, FILENAME, lines=max(1, len(lines)))
