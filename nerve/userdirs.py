"""The user's own folders: where a personal workspace lives and how commands find it.

``nerve setup`` makes the **user workspace** in the data folder (``$XDG_DATA_HOME/nerve``,
else ``~/.local/share/nerve``; on macOS ``~/Library/Application Support/nerve``) and records
its path in the **workspace pointer**, ``$XDG_CONFIG_HOME/nerve/workspace`` (else
``~/.config/nerve/workspace``; on macOS ``~/Library/Application Support/nerve/workspace``):
one line, the absolute path. A command run outside any folder holding ``nerve.yaml`` uses the
workspace the pointer names. Every function takes the environment and platform as
parameters, so tests pass a temporary HOME.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["config_home", "data_home", "home", "is_mac", "pointed_workspace", "pointer_file"]


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def is_mac(platform: str | None = None) -> bool:
    """Whether ``platform`` (default: this one's ``sys.platform``) is macOS."""
    return (platform or sys.platform) == "darwin"


def home(environ: Mapping[str, str] | None = None) -> Path:
    """``$HOME``, else the account's home folder."""
    named = _env(environ).get("HOME")
    return Path(named) if named else Path.home()


def _xdg(name: str, default: str, environ: Mapping[str, str] | None) -> Path:
    value = _env(environ).get(name, "")
    return Path(value) if os.path.isabs(value) else home(environ) / default


def _mac_support(environ: Mapping[str, str] | None) -> Path:
    return home(environ) / "Library" / "Application Support"


def data_home(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The folder the user workspace goes in: ``<data folder>/nerve``."""
    if is_mac(platform):
        return _mac_support(environ) / "nerve"
    return _xdg("XDG_DATA_HOME", ".local/share", environ) / "nerve"


def config_home(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """nerve's folder of per-user settings (it holds the workspace pointer)."""
    if is_mac(platform):
        return _mac_support(environ) / "nerve"
    return _xdg("XDG_CONFIG_HOME", ".config", environ) / "nerve"


def pointer_file(environ: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The file naming the user workspace (written by ``nerve setup``)."""
    return config_home(environ, platform) / "workspace"


def pointed_workspace(
    environ: Mapping[str, str] | None = None, platform: str | None = None
) -> Path | None:
    """The user workspace the pointer names, or None (no pointer, or an empty one)."""
    try:
        text = pointer_file(environ, platform).read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return None
    return Path(text) if text else None
