"""Canonical encodings: JSON for payloads and wire output.

Canonical JSON is UTF-8, keys sorted, no insignificant whitespace, no NaN or infinity.
"""

from __future__ import annotations

import json
from typing import Any

from nerve.errors import EventError


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes; raise ``EventError`` if it cannot be."""
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise EventError(f"value is not JSON-serialisable: {exc}") from None
    return text.encode("utf-8")


def canonical_json_text(value: Any) -> str:
    """Like :func:`canonical_json` but returns ``str``."""
    return canonical_json(value).decode("utf-8")
