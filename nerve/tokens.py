"""Per-workspace secrets kept outside the workspace: the tokens ``nerve mcp --http`` and
``nerve ui`` require.

One token per workspace and use, in ``$XDG_STATE_HOME/nerve/<use>/<digest of the
workspace path>.token`` (else ``~/.local/state/…``), owner-only (0600, folder 0700), never in
``data/`` where a copy of the log would carry it. Made on first use; ``rotate`` replaces it,
and a server reading it again at each request takes the new one at once.
"""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import blake3

from nerve import fsio

__all__ = ["matches", "read", "token", "token_path"]


def token_path(root: Path, use: str, environ: Mapping[str, str] | None = None) -> Path:
    """Where the token for ``use`` of the workspace at ``root`` is kept."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    name = blake3.blake3(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Path(base) / "nerve" / use / f"{name}.token"


def read(path: Path) -> str | None:
    """The stored token, or None when there is none yet."""
    try:
        text = fsio.read_bytes(path).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return None
    return text or None


def token(
    root: Path,
    use: str,
    *,
    site: str,
    rotate: bool = False,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The workspace's token for ``use``: made on first use, replaced with ``rotate``; ``site``
    names the write for fault tests (``fsio.SITES``).
    Written whole or not at all (a failed rotation leaves the old token standing)."""
    path = token_path(root, use, environ)
    current = None if rotate else read(path)
    if current is not None:
        return current
    fsio.private_dir(path.parent)
    new = secrets.token_urlsafe(32)
    fsio.write_private(path, f"{new}\n".encode(), site=site, exclusive=False)
    return new


def matches(stored: str | None, offered: str) -> bool:
    """Whether ``offered`` is the whole of ``stored`` (compared in constant time over its full
    length); no token, or an empty one, matches nothing."""
    if not stored or not offered:
        return False
    return hmac.compare_digest(stored.encode(), offered.encode())
