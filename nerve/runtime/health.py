"""What ``status`` shows of a running daemon, from counters in memory.

It never reads the log, so it costs the event loop nothing however large the WAL (the
segment count is refreshed with every seal check, off the loop).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nerve.attention.notify import Notices
    from nerve.log.store import EventLog
    from nerve.privacy.policy import Policy
    from nerve.runtime.capture import CaptureGate
    from nerve.runtime.committer import Committer
    from nerve.runtime.feed import ViewFeed
    from nerve.runtime.followers import Followers
    from nerve.runtime.groups import GroupWorker
    from nerve.runtime.results import SenseStats
    from nerve.workspace import WorkspaceDir

NS = 1_000_000_000


class HealthNeeds(Protocol):
    """The parts of a running kernel that status reads."""

    @property
    def ws(self) -> WorkspaceDir: ...

    @property
    def started_wall_ns(self) -> int: ...

    @property
    def stats(self) -> Mapping[str, SenseStats]: ...

    @property
    def groups(self) -> Mapping[str, GroupWorker]: ...

    @property
    def committer(self) -> Committer: ...

    @property
    def log(self) -> EventLog: ...

    @property
    def seal_failure(self) -> str | None: ...

    @property
    def segments(self) -> int: ...

    @property
    def seal_status(self) -> dict[str, Any] | None: ...

    @property
    def followers(self) -> Followers: ...

    @property
    def capture(self) -> CaptureGate: ...

    @property
    def privacy(self) -> Policy: ...

    @property
    def feed(self) -> ViewFeed: ...

    @property
    def notices(self) -> Notices: ...


def sense_results(stats: Mapping[str, SenseStats]) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "group": st.group,
            "computes": st.computes,
            "errors": st.errors,
            "last_ns": st.last_wall_ns,
            "last_result": st.last_line,
            "last_result_ns": st.last_line_ns,
            "unavailable": st.unavailable,
            "last_error": st.last_error,
        }
        for name, st in sorted(stats.items())
    ]


def health(kernel: HealthNeeds) -> dict[str, Any]:
    newest = kernel.log.newest
    return {
        "pid": os.getpid(),
        "workspace": str(kernel.ws.root),
        "uptime_s": round((time.time_ns() - kernel.started_wall_ns) / NS, 1),
        "senses": len(kernel.stats),
        "sense_results": sense_results(kernel.stats),
        "events": kernel.committer.events,
        "commits": kernel.committer.commits,
        "groups": {
            n: {"pid": g.pid, "restarts": g.restarts, "queued": g.queued, "busy": g.busy}
            for n, g in kernel.groups.items()
        },
        "newest": str(newest) if newest else None,
        "tail_rows": kernel.log.tail_rows,
        "seal_failure": kernel.seal_failure,
        "segments": kernel.segments,
        "sealing": kernel.seal_status,
        "followers": len(kernel.followers),
        "followers_dropped": kernel.followers.dropped,
        "capture": kernel.capture.to_json(),
        "privacy": {"dropped": kernel.privacy.dropped, "redacted": kernel.privacy.redacted},
        "agents": kernel.feed.agents.to_json(),
        "notifications": kernel.notices.describe(),
    }
