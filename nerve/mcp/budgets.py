"""How much may leave through ``nerve mcp``: the budgets of each call and each session.

``mcp.max_rows`` and ``mcp.max_bytes`` bound each call and each session (:class:`Budgets`);
a tool fits its items into what is left (:func:`fit`), and a session that has spent either
budget is refused. What may leave at all is the privacy screen's to say
(:class:`nerve.privacy.screen.Screen`, which ``nerve ui`` reads through too): the recorder
(:mod:`nerve.mcp.recorder`) hands each tool both.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nerve.errors import AccessRefused
from nerve.mcp.settings import McpConfig

__all__ = ["Allowance", "Budgets", "fit", "json_size"]

_MAX_SESSIONS = 1024


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON: what a budget counts."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class Allowance:
    """Rows and bytes one call may still return."""

    rows: int
    bytes: int


def fit(items: Sequence[Any], allowance: Allowance, overhead: int = 256) -> tuple[list[Any], bool]:
    """The leading ``items`` that fit the allowance (``overhead`` bytes kept for the rest of
    the result), and whether any were left out."""
    kept: list[Any] = []
    room = allowance.bytes - overhead
    for item in items[: allowance.rows]:
        room -= json_size(item) + 1
        if room < 0:
            break
        kept.append(item)
    return kept, len(kept) < len(items)


@dataclass
class _Spent:
    rows: int = 0
    bytes: int = 0


class Budgets:
    """Per-call and per-session budgets, shared by every session of one server."""

    def __init__(self, config: McpConfig) -> None:
        self.config = config
        self._spent: OrderedDict[str, _Spent] = OrderedDict()
        self._lock = threading.Lock()

    def allowance(self, session: str) -> Allowance:
        """What the next call of ``session`` may return; :class:`AccessRefused` when the
        session has spent its rows or bytes."""
        rows, size = self.config.max_rows, self.config.max_bytes
        with self._lock:
            spent = self._spent.get(session, _Spent())
        left_rows, left_bytes = rows.session - spent.rows, size.session - spent.bytes
        if left_rows <= 0 or left_bytes <= 0:
            raise AccessRefused(
                f"this session has had its {rows.session:,} rows / {size.session:,} bytes "
                f"(mcp.max_rows.session / mcp.max_bytes.session): {spent.rows:,} rows and "
                f"{spent.bytes:,} bytes so far",
                hint="start a new session, or raise the budgets under mcp: in nerve.yaml",
            )
        return Allowance(min(rows.call, left_rows), min(size.call, left_bytes))

    def charge(self, session: str, rows: int, size: int) -> None:
        with self._lock:
            spent = self._spent.pop(session, None) or _Spent()
            spent.rows += rows
            spent.bytes += size
            self._spent[session] = spent  # newest last: the oldest is forgotten first
            while len(self._spent) > _MAX_SESSIONS:
                self._spent.popitem(last=False)

    def spent(self, session: str) -> tuple[int, int]:
        with self._lock:
            spent = self._spent.get(session, _Spent())
        return spent.rows, spent.bytes
