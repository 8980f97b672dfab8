"""Hot reload: watch nerve.yaml, senses/ and workflows/, and ask the kernel to reload.

The workspace root is watched without recursion (it may hold a virtualenv or data/);
senses/ and workflows/ are watched recursively.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import watchfiles

if TYPE_CHECKING:
    from nerve.workspace import WorkspaceDir


class Reloads(Protocol):
    """What the watcher needs of the kernel: the workspace it watches, and a reload."""

    @property
    def ws(self) -> WorkspaceDir: ...

    async def reload(self, reason: str = "edit") -> bool: ...


DEBOUNCE_MS = 300
# How often watchfiles' loop wakes to look for changes and for the stop request: its default
# (50 ms) wakes each watching thread 20 times a second on an idle machine; an edit is still
# picked up within about two seconds.
STEP_MS = 1000
_RELEVANT = (".py", ".yaml", ".yml", ".md")


def _relevant(ws_root: Path, changes: set[tuple[watchfiles.Change, str]]) -> bool:
    for _, raw in changes:
        path = Path(raw)
        if path.parent == ws_root and path.name != "nerve.yaml":
            continue
        if path.suffix in _RELEVANT and "__pycache__" not in path.parts:
            return True
    return False


async def _merged(
    ws_root: Path, stop: asyncio.Event
) -> AsyncIterator[set[tuple[watchfiles.Change, str]]]:
    queue: asyncio.Queue[set[tuple[watchfiles.Change, str]]] = asyncio.Queue()

    async def pump(paths: list[Path], recursive: bool) -> None:
        async for changes in watchfiles.awatch(
            *paths, recursive=recursive, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=stop
        ):
            await queue.put(changes)

    deep = [p for p in (ws_root / "senses", ws_root / "workflows") if p.is_dir()]
    tasks = [asyncio.create_task(pump([ws_root], False))]
    if deep:
        tasks.append(asyncio.create_task(pump(deep, True)))
    try:
        while True:
            yield await queue.get()
    finally:
        for task in tasks:
            task.cancel()


async def watch_workspace(kernel: Reloads) -> None:
    stop = asyncio.Event()
    try:
        async for changes in _merged(kernel.ws.root, stop):
            if _relevant(kernel.ws.root, changes):
                await kernel.reload("edit")
    finally:
        stop.set()
