"""What the kernel opens at start (the log, the writer's front over its committer, upkeep,
followers) and what it reads of the log there: the last run's sense states, and the log's
position (events and segments)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from nerve.log.store import EventLog
from nerve.runtime.committer import Committer
from nerve.runtime.followers import Followers
from nerve.runtime.scheduler import Scheduler
from nerve.runtime.skips import Skips
from nerve.runtime.upkeep import Upkeep
from nerve.runtime.writer import Current, Writer
from nerve.workspace import WorkspaceDir

__all__ = ["Parts", "open_parts", "position"]


@dataclass
class Parts:
    """What the kernel opens at start: the log, the writer's front, upkeep, followers."""

    log: EventLog
    writer: Writer
    upkeep: Upkeep
    followers: Followers
    scheduler: Scheduler = field(init=False)


def open_parts(
    ws: WorkspaceDir,
    current: Current,
    skips: Skips,
    listeners: list[Callable[[pa.Table], None]],
) -> Parts:
    """The log (sealing in the background never stalls commits) and the writer's parts;
    ``listeners`` see each committed table (before upkeep's nudge)."""
    log = ws.open_log(background_seal=True)
    followers = Followers(log.newest)  # `follow` subscribers (nerve tail -f)
    log.on_commit.append(followers.hook(asyncio.get_running_loop()))
    committer = Committer(log)
    upkeep = Upkeep(log, ws.log_root, skips)
    writer = Writer(log, committer, current, upkeep.after_maintenance)
    committer.listeners.extend([*listeners, upkeep.nudge])
    committer.start()
    return Parts(log, writer, upkeep, followers)


async def position(log: EventLog) -> tuple[int, int]:
    """(events, segments) the log holds: the sealed rows plus the unsealed tail."""
    sealed = await asyncio.to_thread(lambda: [s.rows for s in log.manifest.segments()])
    return sum(sealed) + log.tail_rows, len(sealed)
