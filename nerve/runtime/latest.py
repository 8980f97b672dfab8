"""What a sense's ``latest`` column says: its last reading and how old it is, or why it
cannot observe at all.

A sense that cannot observe (no X display, a module missing) says so in its state as
``{"status": "unavailable", "note": WHY}`` (see senses/README.md); ``status``, ``dev`` and
``sense list`` then show ``unavailable: WHY`` rather than ``nothing new``. A compute that
observes nothing keeps the last reading shown, with its age, instead of replacing it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ago", "latest_text", "unavailable_note"]

NOTHING = "nothing new"  # no reading since the daemon started
_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_MARK = b'"unavailable"'


def ago(seconds: float) -> str:
    """``12s``, ``3m``, ``2h``, ``4d``: the largest whole unit."""
    seconds = max(0.0, seconds)
    for unit, size in _UNITS:
        if seconds >= size or unit == "s":
            return f"{int(seconds // size)}{unit}"
    raise AssertionError("unreachable")


def latest_text(line: str, line_ns: int | None, unavailable: str, now_ns: int) -> str:
    """``unavailable: WHY``; else the last reading and its age (``cpu 12% · 3m ago``); else
    ``nothing new``."""
    if unavailable:
        return f"unavailable: {unavailable}"
    if not line:
        return NOTHING
    if line_ns is None:
        return line
    return f"{line} · {ago((now_ns - line_ns) / 1e9)} ago"


def unavailable_note(canonical: bytes, state: Any = None) -> str:
    """Why a sense whose state is ``canonical`` cannot observe (its ``note``), or ``""``.
    ``state`` is the decoded state when the caller has it; the bytes are decoded only when
    they hold the word (most states never do)."""
    if _MARK not in canonical:
        return ""
    if state is None:
        state = json.loads(canonical)
    if not isinstance(state, dict) or state.get("status") != "unavailable":
        return ""
    return str(state.get("note") or "no reason given")
