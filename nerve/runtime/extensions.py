"""Parts of the daemon that plug into the kernel: attention, the workflow engine, fleet
shipping, retention and the dev view's feed (the list: ``nerve.runtime.built_in``).

An extension is a plain object that fits :class:`Extension`: ``start``/``stop``, the socket
requests it answers (``handlers()``, added to the kernel's table at start: nothing registers
by being imported), and three hooks: ``on_config`` (a reload applied), ``on_workflow_requested``
(a sense asked for a run) and ``request_run`` (CLI / IPC asked for one; ``None`` when the
extension does not run workflows). It listens to committed events through
``kernel.committer.listeners`` and writes through ``kernel.committer.append`` / ``kernel.record``,
so it never opens the log itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

    from nerve.config.models import NerveConfig
    from nerve.contract import WorkflowTrigger
    from nerve.log.store import EventLog
    from nerve.privacy.policy import Policy
    from nerve.runtime.committer import Committer
    from nerve.runtime.writer import Writer
    from nerve.workspace import WorkspaceDir


class ExtensionNeeds(Protocol):
    """What an extension may use of the kernel."""

    @property
    def ws(self) -> WorkspaceDir: ...

    @property
    def config(self) -> NerveConfig: ...

    @property
    def committer(self) -> Committer: ...

    @property
    def log(self) -> EventLog: ...

    @property
    def writer(self) -> Writer: ...

    @property
    def privacy(self) -> Policy: ...

    def connect(self, *, projections: bool = True) -> Any: ...

    async def record(self, kind: str, subject: str, line: str, payload: Any) -> pa.Table: ...


class Extension(Protocol):
    async def start(self, kernel: ExtensionNeeds) -> None: ...

    def handlers(self) -> dict[str, Any]:
        """Socket requests it answers: type -> ``async (kernel, request) -> reply``."""
        ...

    async def stop(self, kernel: ExtensionNeeds) -> None: ...

    async def on_config(self, kernel: ExtensionNeeds, reason: str) -> None: ...

    async def on_workflow_requested(
        self, kernel: ExtensionNeeds, trigger: WorkflowTrigger, sense: str
    ) -> None: ...

    async def request_run(
        self, kernel: ExtensionNeeds, trigger: WorkflowTrigger, source: str
    ) -> dict[str, Any] | None: ...


class Plain:
    """The hooks of an extension that only runs beside the kernel: no requests of its own,
    nothing to do at a reload (it reads ``kernel.config`` afresh) or for a workflow."""

    def handlers(self) -> dict[str, Any]:
        return {}

    async def on_config(self, kernel: object, reason: str) -> None:
        return None

    async def on_workflow_requested(
        self, kernel: object, trigger: WorkflowTrigger, sense: str
    ) -> None:
        return None

    async def request_run(
        self, kernel: object, trigger: WorkflowTrigger, source: str
    ) -> dict[str, Any] | None:
        return None


class Loop(Plain):
    """An extension that runs one task for the daemon's life, cancelled at stop."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self._task = asyncio.create_task(work, name=name)

    async def stop(self, kernel: object) -> None:
        task = self._task
        if task is None:
            return
        # Python 3.11's wait_for swallows a cancel that lands as the awaited thing finishes
        # (a wake-up at stop): cancel again until the task has ended.
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=0.5)
        with contextlib.suppress(asyncio.CancelledError):
            await task
