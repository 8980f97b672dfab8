"""What the dev view shows, as plain data: the kernel's figures at one instant.

:func:`nerve.dev.view.render` draws a :class:`Frame` and nothing else, so a test can
build one by hand, with its own clock, and compare the drawing with a golden file.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nerve.events import AGENT_ACCESS
from nerve.log.segments import of_kind
from nerve.runtime.journal import Entry

if TYPE_CHECKING:
    import pyarrow as pa

RATE_WINDOW_S = 10.0


@dataclass(frozen=True)
class Highlight:
    """One attention decision: surfaced, or held (``hold:value``, ``hold:budget``)."""

    wall_s: float
    outcome: str
    probe: str
    line: str

    @property
    def surfaced(self) -> bool:
        return self.outcome == "surface"


HIGHLIGHTS_KEPT = 50


class Highlights(deque[Highlight]):
    """The newest attention decisions, surfaced or held, for the dev view."""

    def __init__(self, kept: int = HIGHLIGHTS_KEPT) -> None:
        super().__init__(maxlen=kept)

    def decided(self, payload: dict[str, Any], now_s: float | None = None) -> Highlight:
        outcome, probe, line = payload["outcome"], payload["probe"], payload["source_line"]
        seen = Highlight(time.time() if now_s is None else now_s, outcome, str(probe), str(line))
        self.append(seen)
        return seen


@dataclass(frozen=True)
class AgentRead:
    """One call an agent made through ``nerve mcp`` (its ``agent.access`` record)."""

    wall_s: float
    client: str
    tool: str
    outcome: str
    rows: int
    bytes: int


class AgentReads:
    """The newest agent calls and how many there were, noted from committed events."""

    def __init__(self, kept: int = 20) -> None:
        self.recent: deque[AgentRead] = deque(maxlen=kept)
        self.calls = 0
        self.refused = 0

    def note(self, table: pa.Table) -> None:
        """A committer listener: picks the ``agent.access`` rows out of a commit."""
        found = of_kind(table, AGENT_ACCESS)
        for raw in found.column("payload").to_pylist() if found is not None else ():
            data = json_object(raw)
            self.calls += 1
            self.refused += data.get("outcome") != "ok"
            found = data.get("client")
            client: dict[str, Any] = found if isinstance(found, dict) else {}
            self.recent.append(
                AgentRead(
                    time.time(),
                    str(client.get("name", "unknown")),
                    str(data.get("tool")),
                    str(data.get("outcome")),
                    int(data.get("rows") or 0),
                    int(data.get("bytes") or 0),
                )
            )

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "refused": self.refused}


def json_object(raw: bytes | None) -> dict[str, Any]:
    """A JSON payload as a dict; anything else (junk, a list, nothing) as an empty one."""
    try:
        value = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class SenseRow:
    name: str
    group: str
    computes: int = 0
    errors: int = 0
    last_wall_s: float | None = None
    last_ms: float | None = None
    latest: str = ""
    skipped: int = 0  # ticks that did not run since start
    skip_reason: str = ""  # why the newest of them did not


@dataclass(frozen=True)
class Frame:
    """The figures the dev view draws at one instant; ``now_s`` is the wall clock it
    measures every "ago" and the uptime from."""

    workspace: str
    pid: int
    now_s: float
    started_s: float
    events: int
    rate: float
    segments: int
    senses: tuple[SenseRow, ...] = ()
    highlights: tuple[Highlight, ...] = ()
    errors: tuple[Entry, ...] = ()
    alerts: tuple[str, ...] = ()  # e.g. a failing seal: shown under the header
    agents: tuple[AgentRead, ...] = ()  # calls through `nerve mcp`, oldest first


class Rate:
    """Events per second over the last ``window_s`` seconds, from (time, count) samples:
    steady where a per-refresh difference would jump with every group commit."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, t: float, count: int) -> None:
        self._samples.append((t, count))
        # keep one sample at or before the window's start, so the window is whole
        while len(self._samples) > 2 and self._samples[1][0] <= t - self.window_s:
            self._samples.popleft()

    def per_second(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, c0), (t1, c1) = self._samples[0], self._samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0
