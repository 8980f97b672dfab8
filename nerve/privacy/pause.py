"""Pausing capture: the ``capture.paused`` and ``capture.resumed`` records, and the state
they add up to.

A pause is an event, so it outlives the process that asked for it: the daemon rebuilds
:class:`PauseState` from the newest of these records when it starts (a pause recorded while
no daemon ran is honoured by the next one), and ends a timed pause whose ``until_ns`` has
passed with a ``capture.resumed`` whose reason is ``timer``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from nerve.canonical import loads_bounded
from nerve.log.drafts import Draft

__all__ = [
    "PAUSED",
    "RESUMED",
    "SUBJECT",
    "PauseState",
    "paused_draft",
    "resumed_draft",
    "stored_pause",
    "until_of",
]

PAUSED = "capture.paused"
RESUMED = "capture.resumed"
SUBJECT = "capture"
NS = 1_000_000_000


def _iso(ns: int) -> str:
    moment = dt.datetime.fromtimestamp(ns / NS, tz=dt.UTC).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class PauseState:
    """Whether capture is paused (since when, until when), and the last pause's window."""

    paused: bool = False
    since_ns: int | None = None
    until_ns: int | None = None  # None while paused: until `nerve resume`
    ended_ns: int | None = None  # when the last pause ended (not paused)

    def expired(self, now_ns: int) -> bool:
        return self.paused and self.until_ns is not None and now_ns >= self.until_ns

    @property
    def window(self) -> tuple[int, int] | None:
        """``[since, end)`` of the last finished pause: what happened then is not stored."""
        if self.paused or self.since_ns is None or self.ended_ns is None:
            return None
        return self.since_ns, self.ended_ns

    def to_json(self) -> dict[str, Any]:
        return {
            "paused": self.paused,
            "since_ns": self.since_ns,
            "until_ns": self.until_ns if self.paused else None,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> PauseState:
        return cls(bool(obj.get("paused")), obj.get("since_ns"), obj.get("until_ns"))

    def describe(self) -> str:
        """``paused until 2025-06-01T12:30:00Z``, ``paused until resumed``, or ``capturing``."""
        if not self.paused:
            return "capturing"
        if self.until_ns is None:
            return "paused until `nerve resume`"
        return f"paused until {_iso(self.until_ns)}"

    @classmethod
    def from_record(cls, kind: str, physical_ns: int, payload: Any) -> PauseState:
        """The state the newest ``capture.*`` record leaves (``payload`` decoded)."""
        data = payload if isinstance(payload, dict) else {}
        if kind == PAUSED:
            return cls(True, physical_ns, _int_or_none(data.get("until_ns")))
        since = _int_or_none(data.get("paused_since_ns"))
        return cls(False, since, None, physical_ns if since is not None else None)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def until_of(now_ns: int, for_ms: int | None) -> int | None:
    return None if for_ms is None else now_ns + for_ms * 1_000_000


def paused_draft(until: int | None, for_ms: int | None) -> Draft:
    line = "capture paused" + (f" until {_iso(until)}" if until is not None else "")
    payload = {"until_ns": until, "for_ms": for_ms}
    return Draft.control(PAUSED, SUBJECT, line, payload)


def resumed_draft(state: PauseState, reason: str) -> Draft:
    line = "capture resumed" + (" (timer)" if reason == "timer" else "")
    payload = {"reason": reason, "paused_since_ns": state.since_ns}
    return Draft.control(RESUMED, SUBJECT, line, payload)


_NEWEST = (
    "SELECT kind, physical_ns, CAST(data AS VARCHAR) FROM events "
    "WHERE subject = ? AND kind IN (?, ?) ORDER BY physical_ns DESC, logical DESC LIMIT 1"
)


def stored_pause(conn: Any) -> PauseState:
    """The state the log's newest ``capture.*`` record leaves (``conn``: DuckDB over it)."""
    row = conn.execute(_NEWEST, [SUBJECT, PAUSED, RESUMED]).fetchone()
    if row is None:
        return PauseState()
    kind, physical_ns, data = row
    return PauseState.from_record(kind, physical_ns, loads_bounded(data) if data else None)
