"""Workspace-level privacy calls the CLI and notebooks make: pause, resume, test.

Pause and resume are commands (``nerve.commands``): through the daemon when one runs (it
stops and restarts its senses at once); without one they are recorded in the log, and the
next daemon honours them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nerve.commands.log import Pause, Resume
from nerve.errors import UsageError
from nerve.events import parse_source
from nerve.transport import connect
from nerve.workspace import WorkspaceDir

if TYPE_CHECKING:
    from nerve.privacy.pause import PauseState
    from nerve.privacy.policy import Verdict

__all__ = ["pause", "resume", "test_text"]


def pause(ws: WorkspaceDir, for_ms: int | None = None) -> PauseState:
    """Stop the senses (for ``for_ms`` milliseconds, else until :func:`resume`)."""
    if for_ms is not None and for_ms <= 0:
        raise UsageError(f"a pause must last longer than 0ms (got {for_ms}ms)", field="for")
    return connect(ws).do(Pause(for_ms)).capture  # type: ignore[no-any-return]


def resume(ws: WorkspaceDir) -> PauseState | None:
    """Start the senses again; the pause that ended, or None when capture was not paused."""
    return connect(ws).do(Resume()).ended  # type: ignore[no-any-return]


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
