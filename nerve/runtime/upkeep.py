"""The kernel's upkeep loops: sealing the WAL, finishing an erasure a crash left pending,
and writing folded skip counts (retention, a policy, is an extension: ``runtime.retention``).
Each runs as its own task and never stops the daemon: a failure is reported and tried
again, and loses nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pyarrow as pa

from nerve.errors import NerveError
from nerve.log.store import EventLog, manifest_state
from nerve.runtime import journal
from nerve.runtime.skips import Skips

NS = 1_000_000_000
SEAL_CHECK_S = 1.0
SEAL_BACKOFF_MAX_S = 30.0
UPKEEP_DELAY_S = 1.0  # the first erasure upkeep, once the daemon is up
SKIP_FLUSH_S = 5.0  # how often folded skip counts whose minute has ended are written

WithLog = Callable[[Callable[[EventLog], object]], Awaitable[object]]


class Upkeep:
    def __init__(
        self,
        log: EventLog,
        log_root: Path,
        skips: Skips,
    ) -> None:
        self.log = log
        self._root = log_root
        self._skips = skips
        self.segments = 0  # live segments, as of the last seal check
        self.seal_failure: str | None = None
        self._wake = asyncio.Event()

    def tasks(self, with_log: WithLog) -> list[asyncio.Task[None]]:
        """Start the loops (``with_log`` runs erasures in the writer's thread)."""
        return [
            asyncio.create_task(self._seal_loop(), name="seal"),
            asyncio.create_task(self._erasure_loop(with_log), name="erasure"),
            asyncio.create_task(self._skip_loop(), name="skips"),
        ]

    def nudge(self, table: pa.Table | None = None) -> None:
        """A commit (or a maintenance call): the seal loop looks again (a first row starts
        the age clock)."""
        self._wake.set()

    async def after_maintenance(self) -> None:
        """Segments retired by an erasure or merged by a compaction: look again, recount."""
        self._wake.set()
        await self.count_segments()

    async def count_segments(self) -> None:
        """Refresh the segment count ``status`` shows, reading the manifest off the loop."""
        root = self._root
        self.segments = await asyncio.to_thread(lambda: len(manifest_state(root).segments()))

    async def _seal_loop(self) -> None:
        """Seal by size or age; a failed seal is reported and retried with backoff, and
        loses nothing (the unsealed generations stay on disk and pending).

        The loop sleeps until the tail's age is due, or until a commit wakes it (the first
        rows of a tail, or the size limit): an idle daemon does not poll."""
        failures = 0
        await self.count_segments()
        while True:
            if failures:
                await asyncio.sleep(min(SEAL_CHECK_S * 2**failures, SEAL_BACKOFF_MAX_S))
            else:
                await self._seal_due()
            try:
                sealed = await asyncio.to_thread(self.log.maybe_seal)
            except (NerveError, OSError) as exc:
                failures += 1
                wait = min(SEAL_CHECK_S * 2**failures, SEAL_BACKOFF_MAX_S)
                journal.warn(f"seal failed (attempt {failures}), retry in {wait:.0f} s: {exc}")
                self.seal_failure = str(exc)
                continue
            if failures:
                journal.say(f"seal succeeded after {failures} failed attempts")
            self.seal_failure, failures = None, 0
            if sealed is not None:
                await self.count_segments()

    async def _seal_due(self) -> None:
        """Return once the log is due a seal (see ``EventLog.seal_due_in_ns``)."""
        while (due := self.log.seal_due_in_ns()) != 0:
            self._wake.clear()
            timeout = None if due is None else due / NS
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _erasure_loop(self, with_log: WithLog) -> None:
        """Finish an erasure a crash left pending; a failure is reported and erases nothing
        (the next start tries again)."""
        await asyncio.sleep(UPKEEP_DELAY_S)
        try:
            await with_log(lambda log: log.finish_erasures())
        except (NerveError, OSError) as exc:
            journal.warn(f"a pending erasure could not be finished: {exc}")

    async def _skip_loop(self) -> None:
        while True:
            await asyncio.sleep(SKIP_FLUSH_S)
            self._skips.flush()
