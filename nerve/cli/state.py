"""What every command shares: the global options, set once by the ``nerve`` callback."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nerve.workspace import Workspace


class State:
    workspace_arg: Path | None = None

    def workspace(self) -> Workspace:
        from nerve.workspace import Workspace

        return Workspace.at(self.workspace_arg)


STATE = State()


def workspace() -> Workspace:
    """The workspace the global options (or the current folder) name."""
    return STATE.workspace()
