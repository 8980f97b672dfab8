"""Sync through the front door: a group of devices that share one history (``nerve sync``;
the work is in :mod:`nerve.sync.ops`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nerve.sync.engine import RoundResult
    from nerve.sync.group import Group, Transport
    from nerve.sync.ops import SyncStatus
    from nerve.workspace import WorkspaceDir

__all__ = ["SyncOps"]


class SyncOps:
    """Sync methods: mixed into :class:`nerve.door.core.Core`."""

    _dir: WorkspaceDir

    if TYPE_CHECKING:

        def _writable(self) -> WorkspaceDir: ...

    def _sync_init(self, name: str, transport: Transport, device: str | None = None) -> Group:
        """Create a sync group on ``transport`` and join it (``nerve sync init``)."""
        from nerve.sync.ops import init

        return init(self._writable(), name, transport, device)

    def _sync_join(self, code: str, device: str | None = None) -> Group:
        """Join the group a join code names (``nerve sync join``)."""
        from nerve.sync.ops import join

        return join(self._writable(), code, device)

    def _sync_now(self) -> RoundResult:
        """One round now: send, receive, announce (``nerve sync now``)."""
        from nerve.sync.ops import now

        return now(self._writable())

    def _sync_status(self) -> SyncStatus:
        """Each device's shared digest and lag (``nerve sync status``)."""
        from nerve.sync.ops import status

        return status(self._dir)

    def _sync_leave(self) -> str:
        """Leave the group; its name (``nerve sync leave``)."""
        from nerve.sync.ops import leave

        return leave(self._writable())

    def _devices(self) -> dict[str, str]:
        """node → device name, for this device and every peer heard from."""
        from nerve.sync.ops import device_names

        return device_names(self._dir)
