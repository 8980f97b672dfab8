"""The two ways a group's boxes travel, behind one small protocol: NATS JetStream
(:mod:`nerve.sync.natsbus`) and an S3 bucket (:mod:`nerve.sync.s3bus`).

A transport moves opaque boxes only. ``publish`` stores one batch box under the sender's
token with an id that makes a repeat a no-op; ``fetch`` returns boxes this device has not
taken yet (each with a ``done`` to call once it is stored); ``put_status`` / ``statuses``
keep one status box per device (``statuses`` may leave out the asking device's own).
``listen`` asks to be rung when another device publishes (where the transport can push;
``listening`` says whether it can now), so a daemon need not poll often.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nerve.clock import Hlc

__all__ = ["Delivery", "Transport"]


@dataclass
class Delivery:
    """One fetched box and what to call once it was stored (or judged damaged)."""

    blob: bytes
    done: Callable[[], Awaitable[None]]


class Transport(Protocol):
    """What the sync engine needs of a transport."""

    async def publish(self, sender: str, batch_id: str, last: Hlc, blob: bytes) -> None: ...

    async def fetch(self, positions: dict[str, Hlc], limit: int) -> list[Delivery]: ...

    async def put_status(self, sender: str, blob: bytes) -> None: ...

    async def statuses(self) -> list[bytes]: ...

    async def listen(self, bell: Callable[[], None]) -> bool: ...

    @property
    def listening(self) -> bool: ...

    async def close(self) -> None: ...
