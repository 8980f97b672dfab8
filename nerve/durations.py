"""Durations as nerve.yaml writes them (``500ms``, ``10s``, ``2m``, ``1h``), read as milliseconds.

Below every settings model (``nerve.config`` and each feature's ``settings``), so none of
them imports another to read a duration.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError

from nerve.errors import ConfigError

__all__ = [
    "Duration",
    "PositiveDuration",
    "format_duration",
    "parse_duration",
    "validate_duration",
]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_HINT = "use e.g. 500ms, 10s, 2m"


def parse_duration(value: Any) -> int:
    """Read ``500ms``, ``10s``, ``1.5s``, ``2m``, ``1h`` or a bare integer (ms) as milliseconds.

    Raises ``ConfigError`` for junk, booleans, negatives and fractions of a millisecond.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"invalid duration {value!r} ({_DURATION_HINT})")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"duration must not be negative (got {value})")
        return value
    return _parse_duration_text(value)


def _parse_duration_text(text: str) -> int:
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ConfigError(f"invalid duration {text!r} ({_DURATION_HINT})")
    ms = Decimal(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]
    if ms != ms.to_integral_value():
        raise ConfigError(f"duration {text!r} is not a whole number of milliseconds")
    return int(ms)


def format_duration(ms: int) -> str:
    """Shortest exact text for ``ms``: ``1h``, ``2m``, ``10s``, else ``1500ms``."""
    if ms < 0:
        raise ConfigError(f"duration must not be negative (got {ms})")
    for unit in ("h", "m", "s"):
        if ms and ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"


def validate_duration(value: Any) -> int:
    """:func:`parse_duration` as a pydantic validator: junk is a located validation error."""
    try:
        return parse_duration(value)
    except ConfigError as exc:
        raise PydanticCustomError("nerve_duration", "{reason}", {"reason": str(exc)}) from None


def _positive(ms: int) -> int:
    if ms == 0:
        raise PydanticCustomError("nerve_duration", "must be longer than 0ms")
    return ms


Duration = Annotated[int, BeforeValidator(validate_duration)]
"""Milliseconds, written in nerve.yaml as ``500ms``, ``10s``, ``2m``, ``1h`` or a bare integer."""
PositiveDuration = Annotated[int, BeforeValidator(validate_duration), AfterValidator(_positive)]
