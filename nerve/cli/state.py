"""What every command shares: the global options, set once by the ``nerve`` callback."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nerve import api
    from nerve.workspace import WorkspaceDir


class State:
    workspace_arg: Path | None = None

    def workspace(self, *, write: bool = False) -> WorkspaceDir:
        from nerve.workspace import WorkspaceDir

        return WorkspaceDir.find(self.workspace_arg, write=write)


STATE = State()


def workspace(*, write: bool = False) -> WorkspaceDir:
    """The workspace ``--workspace``, ``NERVE_WORKSPACE`` or the current folder's nearest
    ``nerve.yaml`` names; ``write`` for commands that append to its log or run its daemon."""
    return STATE.workspace(write=write)


def door(*, write: bool = False) -> api.Workspace:
    """The front door (``nerve.open``) on the workspace :func:`workspace` finds: what a
    command does to a workspace, it asks of this."""
    from nerve.api import Workspace as Door

    return Door(STATE.workspace(write=write))
