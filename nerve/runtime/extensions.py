"""Parts of the daemon that plug into the kernel: attention and the workflow engine.

An extension is a plain object with ``async start(kernel)``, ``async stop(kernel)`` and
``handlers()``, the socket requests it answers (added to the kernel's table at start: nothing
registers by being imported). It may define ``async on_workflow_requested(kernel, trigger,
sense)`` (a sense asked for a run) and ``async request_run(kernel, trigger, source) -> dict``
(CLI / IPC asked for one). It listens to committed events through
``kernel.committer.listeners`` and writes through ``kernel.committer.append`` /
``kernel.record``, so it never opens the log itself.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

BUILT_IN = (
    "nerve.attention.service:AttentionService",
    "nerve.flow.engine:WorkflowEngine",
)


class Extension(Protocol):
    async def start(self, kernel: Any) -> None: ...

    def handlers(self) -> dict[str, Any]:
        """Socket requests it answers: type -> ``async (kernel, request) -> reply``."""
        ...

    async def stop(self, kernel: Any) -> None: ...


def load_extensions(names: tuple[str, ...] = BUILT_IN) -> list[Any]:
    """Instantiate each built-in extension whose module is present."""
    found = []
    for name in names:
        module_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        found.append(getattr(module, attr)())
    return found
