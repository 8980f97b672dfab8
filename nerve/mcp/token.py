"""The bearer token ``nerve mcp --http`` requires, kept outside the workspace.

One token per workspace, in ``$XDG_STATE_HOME/nerve/mcp/<digest of the workspace path>.token``
(else ``~/.local/state/…``), owner-only (0600, folder 0700), never in ``data/`` where a copy
of the log would carry it. ``nerve mcp token`` prints it, creating it on first use;
``--rotate`` replaces it, and a running server takes the new one at its next request.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nerve import tokens
from nerve.api import Workspace

__all__ = ["check", "read", "token", "token_path"]

read = tokens.read


def token_path(ws: Workspace, environ: Mapping[str, str] | None = None) -> Path:
    return ws.settings.token_path("mcp", environ)


def token(ws: Workspace, *, rotate: bool = False, environ: Mapping[str, str] | None = None) -> str:
    """The workspace's token: made on first use, replaced with ``rotate``."""
    return ws.settings.token("mcp", site="mcp.token", rotate=rotate, environ=environ)


def check(path: Path, offered: str) -> bool:
    """Whether ``offered`` is the token stored at ``path`` now (compared in constant time)."""
    return tokens.matches(tokens.read(path), offered)
