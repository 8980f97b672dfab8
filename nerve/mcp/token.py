"""The bearer token ``nerve mcp --http`` requires, kept outside the workspace.

One token per workspace, in ``$XDG_STATE_HOME/nerve/mcp/<digest of the workspace path>.token``
(else ``~/.local/state/…``), owner-only (0600, folder 0700), never in ``data/`` where a copy
of the log would carry it. ``nerve mcp token`` prints it, creating it on first use;
``--rotate`` replaces it, and a running server takes the new one at its next request.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import blake3

from nerve import fsio
from nerve.workspace import WorkspaceDir

__all__ = ["check", "read", "token", "token_path"]


def token_path(ws: WorkspaceDir, environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    name = blake3.blake3(str(ws.root).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(base) / "nerve" / "mcp" / f"{name}.token"


def read(path: Path) -> str | None:
    """The stored token, or None when there is none yet."""
    try:
        text = fsio.read_bytes(path).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    return text or None


def token(
    ws: WorkspaceDir, *, rotate: bool = False, environ: Mapping[str, str] | None = None
) -> str:
    """The workspace's token: made on first use, replaced with ``rotate``."""
    path = token_path(ws, environ)
    current = None if rotate else read(path)
    if current is not None:
        return current
    fsio.private_dir(path.parent)
    new = secrets.token_urlsafe(32)
    fsio.write_private(path, f"{new}\n".encode(), site="mcp.token", exclusive=False)
    return new


def check(path: Path, offered: str) -> bool:
    """Whether ``offered`` is the token stored at ``path`` now (compared in constant time)."""
    stored = read(path)
    return stored is not None and hmac.compare_digest(stored.encode(), offered.encode())
