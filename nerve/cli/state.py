"""What every command shares: the global options, set once by the ``nerve`` callback."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nerve import api


class State:
    workspace_arg: Path | None = None


STATE = State()


def door(*, write: bool = False) -> api.Workspace:
    """The front door (``nerve.open``) on the workspace ``--workspace``, ``NERVE_WORKSPACE``
    or the current folder's nearest ``nerve.yaml`` names; ``write`` for commands that append
    to its log or run its daemon. What a command does to a workspace, it asks of this."""
    from nerve.api import Workspace

    return Workspace.find(STATE.workspace_arg, write=write)


def found() -> tuple[Path, str]:
    """The workspace :func:`door` opens, and why that one (``nerve status`` says both)."""
    from nerve.api import located

    return located(STATE.workspace_arg)
