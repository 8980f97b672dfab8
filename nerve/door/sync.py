"""Sync through the front door: a group of devices that share one history (``nerve sync``;
the work is in :mod:`nerve.sync.ops`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nerve.door.nouns import Noun

if TYPE_CHECKING:
    from nerve.sync.engine import RoundResult
    from nerve.sync.group import Group, Transport
    from nerve.sync.ops import SyncStatus

__all__ = ["Sync"]


class Sync(Noun):
    """The sync group this device belongs to (``ws.sync``; the work is in
    :mod:`nerve.sync.ops`)."""

    def init(self, name: str, transport: Transport, device: str | None = None) -> Group:
        """Create a sync group on ``transport`` and join it (``nerve sync init``)."""
        from nerve.sync.ops import init

        return init(self._writable(), name, transport, device)

    def join(self, code: str, device: str | None = None) -> Group:
        """Join the group a join code names (``nerve sync join``)."""
        from nerve.sync.ops import join

        return join(self._writable(), code, device)

    def now(self) -> RoundResult:
        """One round now: send, receive, announce (``nerve sync now``)."""
        from nerve.sync.ops import now

        return now(self._writable())

    def status(self) -> SyncStatus:
        """Each device's shared digest and lag (``nerve sync status``)."""
        from nerve.sync.ops import status

        return status(self._dir)

    def leave(self) -> str:
        """Leave the group; its name (``nerve sync leave``)."""
        from nerve.sync.ops import leave

        return leave(self._writable())

    def devices(self) -> dict[str, str]:
        """node → device name, for this device and every peer heard from (a dict by design:
        a mapping keyed by node, not a record)."""
        from nerve.sync.ops import device_names

        return device_names(self._dir)
