"""Workspace-level privacy calls the CLI and notebooks make: pause, resume, test.

Pause and resume go through the daemon when one runs (it stops and restarts its senses
at once); without one they are recorded in the log, and the next daemon honours them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from nerve.errors import UsageError
from nerve.events import parse_source
from nerve.privacy.pause import PauseState, paused_draft, resumed_draft, stored_pause, until_of
from nerve.runtime.client import Daemon, route
from nerve.workspace import WorkspaceDir

if TYPE_CHECKING:
    from nerve.privacy.policy import Verdict

__all__ = ["pause", "resume", "test_text"]

Clock = Callable[[], int]


def pause(ws: WorkspaceDir, for_ms: int | None = None, *, now: Clock = time.time_ns) -> PauseState:
    """Stop the senses (for ``for_ms`` milliseconds, else until :func:`resume`)."""
    if for_ms is not None and for_ms <= 0:
        raise UsageError(f"a pause must last longer than 0ms (got {for_ms}ms)", field="for")

    def through(daemon: Daemon) -> PauseState:
        return PauseState.from_json(daemon.call({"type": "pause", "for_ms": for_ms})["capture"])

    def direct() -> PauseState:
        until = until_of(now(), for_ms)
        with ws.open_log() as log:
            table = log.append_drafts([paused_draft(until, for_ms)])
        return PauseState(True, table.column("physical_ns")[0].as_py(), until)

    return route(ws, daemon=through, log=direct)


def resume(ws: WorkspaceDir, *, now: Clock = time.time_ns) -> PauseState | None:
    """Start the senses again; the pause that ended, or None when capture was not paused."""

    def through(daemon: Daemon) -> PauseState | None:
        ended = daemon.call({"type": "resume"}).get("ended")
        return PauseState.from_json(ended) if ended else None

    def direct() -> PauseState | None:
        state = stored_pause(ws.connect())
        if not state.paused:
            return None
        reason = "timer" if state.expired(now()) else "command"
        with ws.open_log() as log:
            log.append_drafts([resumed_draft(state, reason)])
        return state

    return route(ws, daemon=through, log=direct)


def test_text(
    ws: WorkspaceDir,
    text: str,
    *,
    source: str = "shell",
    kind: str = "observation",
    sense: str = "",
) -> Verdict:
    """What the workspace's privacy rules do to ``text`` captured as such an event."""
    from nerve.privacy.policy import Policy

    code = parse_source(source)
    return Policy(ws.config.privacy).test(text, source=code, kind=kind, subject=sense)
