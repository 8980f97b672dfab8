"""``log.retention`` as a kernel extension: erase what the policy no longer keeps, every
``retention.every``, with the log's writer in hand.

The policy is read afresh each time, so a reload takes effect at the next pass. A failed pass
is reported and tried again at the next one, and erases nothing. Finishing an erasure a crash
left pending is the log's own upkeep (``nerve.runtime.upkeep``), not this policy's.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Protocol

from nerve.errors import NerveError
from nerve.runtime import journal
from nerve.runtime.extensions import Loop
from nerve.runtime.upkeep import UPKEEP_DELAY_S

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
    from nerve.runtime.writer import Writer


class Retaining(Protocol):
    """What retention uses of the kernel: the config in force and the writer."""

    @property
    def config(self) -> NerveConfig: ...

    @property
    def writer(self) -> Writer: ...


class Retention(Loop):
    async def start(self, kernel: Retaining) -> None:
        self.spawn(retention_loop(kernel), "retention")


async def retention_loop(kernel: Retaining, delay_s: float = UPKEEP_DELAY_S) -> None:
    from nerve.privacy.forget import RETENTION, Request, apply

    await asyncio.sleep(delay_s)  # after the log's own upkeep has finished a pending erasure
    while True:
        retention = kernel.config.log.retention
        if retention.active:
            work = functools.partial(apply, request=Request(None, RETENTION), retention=retention)
            try:
                await kernel.writer.with_log(work)
            except (NerveError, OSError) as exc:
                journal.warn(f"retention failed, will retry: {exc}")
        await asyncio.sleep(retention.every / 1000)
