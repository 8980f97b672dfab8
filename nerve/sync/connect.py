"""Connect to a group's transport (kept apart from :mod:`nerve.sync.transport`, which both
transports import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nerve.sync.group import Group
    from nerve.sync.transport import Transport

__all__ = ["open_transport"]


async def open_transport(group: Group, me: str) -> Transport:
    """The group's transport, connected, for the device whose token is ``me``."""
    if group.transport.kind == "nats":
        from nerve.sync.natsbus import NatsBus

        return await NatsBus.connect(group, me)
    from nerve.sync.s3bus import S3Bus

    return await S3Bus.connect(group, me)
