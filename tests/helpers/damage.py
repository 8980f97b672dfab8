"""One way to damage a byte string, as the hypothesis tests of link parsing draw it."""

from __future__ import annotations

HOW = ("flip", "drop", "insert", "append", "cut")


def damaged(data: bytes, how: str, at: int, byte: int) -> bytes:
    """``data`` with a bit flipped, a byte dropped or inserted at ``at``, a byte appended,
    or the rest cut from ``at``."""
    raw = bytearray(data)
    spot = at % len(raw)
    if how == "flip":
        raw[spot] ^= 1 << (byte % 8)
    elif how == "drop":
        del raw[spot]
    elif how == "insert":
        raw.insert(spot, byte)
    elif how == "append":
        raw.append(byte)
    else:
        del raw[spot:]
    return bytes(raw)
