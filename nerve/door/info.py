"""What the front door says about its workspace: the configuration, where the projections
and tokens live, the log's size, whether it is encrypted, and the attention decisions it
holds. Servers over a workspace (``nerve mcp``, ``nerve ui``) ask these of it instead of
reading the folder themselves."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
    from nerve.workspace import WorkspaceDir

__all__ = ["InfoOps"]


class InfoOps:
    """The workspace's settings and facts: mixed into :class:`nerve.door.core.Core`."""

    _dir: WorkspaceDir

    @property
    def _config_path(self) -> Path:
        """``nerve.yaml`` (it may not exist: a copied log is read with the defaults)."""
        return self._dir.config_path

    @property
    def _config(self) -> NerveConfig:
        """nerve.yaml as read the first time this is asked (defaults without one)."""
        return self._dir.config

    def _read_config(self) -> NerveConfig:
        """nerve.yaml read again now, for a server that follows its edits; a bad file
        raises its ``ConfigError`` (the caller keeps what it had)."""
        from nerve.workspace import WorkspaceDir

        return WorkspaceDir(self._dir.root).config

    def _projection_dirs(self) -> list[Path]:
        """Where projections are loaded from: the bundled ones, then the workspace's."""
        return self._dir.projection_dirs()

    def _view_settings(self) -> dict[str, Any]:
        """What the projections read from ``nerve_settings`` and ``nerve_categories``, as
        nerve.yaml sets it now (read again when the file changes, so a category edited in
        the UI reaches every later query; a bad edit keeps the settings read last)."""
        from nerve.errors import NerveError
        from nerve.workspace import WorkspaceDir

        try:
            stat = self._dir.config_path.stat()
            stamp: tuple[int, ...] = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except FileNotFoundError:
            stamp = ()
        kept = getattr(self, "_settings_read", None)
        if kept is not None and kept[0] == stamp:
            return dict(kept[1])
        try:
            settings = WorkspaceDir(self._dir.root).settings()
        except NerveError:
            return dict(kept[1]) if kept is not None else self._dir.settings()
        self._settings_read = (stamp, settings)
        return dict(settings)

    def _log_bytes(self) -> int:
        """Bytes the log's files take on disk now (segments, WAL, manifest, blobs)."""
        import os

        total = 0
        for folder, _dirs, files in os.walk(self._dir.log_root):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except FileNotFoundError:  # sealed or compacted away meanwhile
                    continue
        return total

    def _is_encrypted(self) -> bool:
        """Whether the log is encrypted at rest (it holds a keyring)."""
        from nerve.log.crypt import is_encrypted

        return is_encrypted(self._dir.log_root)

    def _decisions(self) -> list[dict[str, Any]]:
        """Every attention decision stored, oldest first, with its figures and chain seq."""
        from nerve.attention import audit

        return audit.decisions(self._dir.log_root)

    def _daemon_log_path(self) -> Path:
        """The daemon's own log file (warnings and errors, as it writes them)."""
        from nerve.runtime.daemon import log_path

        return log_path(self._dir)

    def _token_path(self, use: str, environ: Mapping[str, str] | None = None) -> Path:
        """Where the workspace's token for ``use`` (``mcp``, ``ui``) is kept, outside it."""
        from nerve import tokens

        return tokens.token_path(self._dir.root, use, environ)

    def _token(
        self,
        use: str,
        *,
        site: str,
        rotate: bool = False,
        environ: Mapping[str, str] | None = None,
    ) -> str:
        """The workspace's token for ``use``: made on first use, replaced with ``rotate``."""
        from nerve import tokens

        return tokens.token(self._dir.root, use, site=site, rotate=rotate, environ=environ)
