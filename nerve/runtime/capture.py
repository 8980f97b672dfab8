"""The kernel's pause switch: while paused no sense computes; what happened meanwhile is
not stored when capture resumes.

Senses that read a backlog (shell history, a file watcher's queue, process lists) would
report the pause's events at their next compute, so after a resume each sense's first
result keeps its new state but not its observations, and any later observation whose
``valid_time_ns`` falls inside the pause is withheld too. A result that arrives while
paused (a compute already running when the pause began) is treated the same way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from nerve.errors import report
from nerve.log.drafts import Draft
from nerve.privacy.pause import PauseState, paused_draft, resumed_draft, stored_pause, until_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nerve.runtime.committer import Committer
    from nerve.runtime.scheduler import Scheduler


class Gated(Protocol):
    """What the pause switch needs of the kernel: its committer, the senses it schedules
    (``stats`` names them) and a reader of the log."""

    @property
    def committer(self) -> Committer: ...

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def stats(self) -> Mapping[str, Any]: ...

    def connect(self, *, projections: bool = True) -> Any: ...


NS = 1_000_000_000


class CaptureGate:
    def __init__(self, kernel: Gated, *, clock: Callable[[], int] = time.time_ns) -> None:
        self.kernel = kernel
        self.clock = clock
        self.state = PauseState()
        self.catching_up: set[str] = set()
        self.withheld = 0
        self._timer: asyncio.Task[None] | None = None
        self._pausing = False

    @property
    def paused(self) -> bool:
        return self.state.paused

    def describe(self) -> str:
        return self.state.describe()

    async def restore(self) -> None:
        """Read the newest pause record, before any sense is scheduled."""
        connect = self.kernel.connect
        self.state = await asyncio.to_thread(lambda: stored_pause(connect()))

    async def start(self) -> None:
        """Honour a restored pause: end it now if its time is up, else arm its timer."""
        if self.state.expired(self.clock()):
            await self.resume("timer")
        elif self.paused:
            report(f"capture {self.state.describe()} (recorded before this start)")
            self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    async def pause(self, for_ms: int | None) -> PauseState:
        until = until_of(self.clock(), for_ms)
        self._pausing = True  # results taken while the record is written are withheld too
        try:
            table = await self.kernel.committer.append([paused_draft(until, for_ms)])
            self.state = PauseState(True, table.column("physical_ns")[0].as_py(), until)
        finally:
            self._pausing = False
        self.catching_up.clear()
        report(f"capture {self.state.describe()}")
        self._arm()
        return self.state

    async def resume(self, reason: str) -> PauseState | None:
        """End the pause (``reason``: ``command`` or ``timer``); the one ended, or None."""
        ended = self.state
        if not ended.paused:
            return None
        self.stop()
        self.state = PauseState(False, ended.since_ns)  # a second resume meanwhile is a no-op
        table = await self.kernel.committer.append([resumed_draft(ended, reason)])
        self.state = PauseState(False, ended.since_ns, None, table.column("physical_ns")[0].as_py())
        report(f"capture resumed ({reason})")
        self.catching_up = set(self.kernel.stats)
        for sense in sorted(self.catching_up):
            self.kernel.scheduler.trigger(sense, "resume")
        return ended

    def _arm(self) -> None:
        self.stop()
        if self.state.until_ns is not None:
            self._timer = asyncio.create_task(self._expire(self.state), name="pause-timer")

    async def _expire(self, state: PauseState) -> None:
        assert state.until_ns is not None
        while (left := state.until_ns - self.clock()) > 0:
            await asyncio.sleep(min(left / NS, 60.0))  # wake to re-read the wall clock
        if self.state is state:
            self._timer = None  # resume() must not cancel the task it runs in
            await self.resume("timer")

    def screen(self, sense: str, observations: list[Draft]) -> list[Draft]:
        """The observations of one result that may be stored; counts the rest."""
        if self.paused or self._pausing or sense in self.catching_up:
            self.catching_up.discard(sense)
            kept: list[Draft] = []
        elif (window := self.state.window) is not None:
            start, end = window
            kept = [
                d
                for d in observations
                if d.valid_time_ns is None or not start <= d.valid_time_ns < end
            ]
        else:
            return observations
        self.withheld += len(observations) - len(kept)
        return kept

    def to_json(self) -> dict[str, Any]:
        return {**self.state.to_json(), "withheld": self.withheld}
