"""What a sense's ``latest`` column says: its last reading and how old it is, or why it
cannot observe at all.

A sense that cannot observe (no X display, a module missing) says so in its state as
``{"status": "unavailable", "note": WHY}`` (see senses/README.md); ``status``, ``dev`` and
``sense list`` then show ``unavailable: WHY`` rather than ``nothing new``. A compute that
observes nothing keeps the last reading shown, with its age, instead of replacing it.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["ago", "fit_latest", "latest_text", "unavailable_note"]

NOTHING = "nothing new"  # no reading since the daemon started
_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_MARK = b'"unavailable"'
_AGE = re.compile(r" · \d+[smhd] ago$")
_LEAST = 8  # fewer cells than this for the reading: the age goes too


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


def fit_latest(text: str, width: int) -> str:
    """A :func:`latest_text` in ``width`` cells: its age kept whole, the reading cut at a
    word boundary (``port 127.0.0.1:51059 closed (was held by… · 3s ago``), never in the
    middle of a number or name unless one word is all there is room for. Text that is not
    ASCII (but for the age's "·") is returned whole, for a cell-aware cut."""
    if len(text) <= width or not text.replace("·", "").isascii() or width < 2:
        return text
    found = _AGE.search(text)
    age = found[0] if found and width - len(found[0]) - 1 >= _LEAST else ""
    head = text[: len(text) - len(age)] if age else text
    room = width - len(age) - 1  # one for the "…"
    space = head.rfind(" ", 0, room + 1)
    cut = head[:space] if space >= room // 2 else head[:room]
    return f"{cut.rstrip()}…{age}"


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
