"""``nerve archive``: move whole old segments into a folder that is a read-only nerve log.

See :mod:`nerve.log.archive` for the folder's layout and the records of a move. With a
daemon running the move goes through its socket (the daemon is the single writer).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve.clock import Hlc
from nerve.privacy.selection import parse_when

if TYPE_CHECKING:
    from nerve.log.store import EventLog


@dataclass(frozen=True)
class ArchiveResult:
    segments: int
    events: int
    to: str
    first: list[int] | None  # the oldest and newest stamps moved
    last: list[int] | None
    vacuumed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "segments": self.segments,
            "events": self.events,
            "to": self.to,
            "first": self.first,
            "last": self.last,
            "vacuumed": self.vacuumed,
        }


def cut_of(before: str, *, now_ns: int | None = None) -> Hlc:
    return parse_when(before, now_ns or time.time_ns(), "--before")


def apply(log: EventLog, before: Hlc, to: Path, *, vacuum: bool) -> ArchiveResult:
    moved = log.archive(before, to, vacuum=vacuum)
    return ArchiveResult(
        len(moved),
        sum(s.rows for s in moved),
        str(Path(to).expanduser().resolve()),
        list(moved[0].min_hlc) if moved else None,
        list(moved[-1].max_hlc) if moved else None,
        vacuum,
    )
