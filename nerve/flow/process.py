"""The kernel's handle on one workflow worker process (see :mod:`nerve.flow.worker`).

Calls are matched to replies by id, so many runs share one process. When the process exits,
every call in flight fails with :class:`WorkerDied` and ``on_exit`` is told once; whoever
killed it on purpose says why in ``kill_reason`` (``drain``, ``timeout``, ``stop``, ``idle``), so a
planned exit is not mistaken for a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from nerve.errors import WorkflowError
from nerve.runtime.children import spawning

READY_TIMEOUT_S = 60.0
STREAM_LIMIT = 64 * 1024 * 1024

ExitHook = Callable[["WorkerHandle"], Awaitable[None]]


class WorkerDied(Exception):
    """The worker process exited before it answered."""


class WorkerHandle:
    def __init__(
        self,
        name: str,
        path: Path,
        workspace: Path,
        on_exit: ExitHook,
        clean: Callable[[str], str] | None = None,
    ) -> None:
        self.name = name
        self._clean = clean  # redacts what a role prints before the daemon log has it
        self.path = path
        self.workspace = workspace
        self.on_exit = on_exit
        self.pid: int | None = None
        self.definition: dict[str, Any] = {}
        self.kill_reason: str | None = None
        self.dead = False
        self._proc: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._relay: asyncio.Task[None] | None = None

    async def start(self) -> dict[str, Any]:
        """Spawn and load the workflow; its summary, or ``WorkflowError`` if it did not load."""
        with spawning():
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "nerve.flow.worker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE if self._clean else None,
                limit=STREAM_LIMIT,
                cwd=self.workspace,
                env={**os.environ, "NERVE_WORKFLOW": self.name},
                process_group=0,  # see nerve.runtime.children
            )
        self.pid = self._proc.pid
        if self._proc.stderr is not None and self._clean is not None:
            self._relay = asyncio.create_task(self._relayed(self._proc.stderr, self._clean))
        load = {"workflow": self.name, "path": str(self.path), "workspace": str(self.workspace)}
        await self._send({"op": "load", **load})
        reply = await self._ready()
        if not reply.get("ok"):
            await self.kill("load")
            raise WorkflowError(str(reply.get("error") or f"workflow {self.name!r} did not load"))
        self.definition = dict(reply["definition"])
        self._reader = asyncio.create_task(self._read(), name=f"workflow:{self.name}")
        return self.definition

    async def _relayed(self, stream: asyncio.StreamReader, clean: Callable[[str], str]) -> None:
        from nerve.runtime.journal import relay  # here: only a daemon relays

        await relay(stream, f"workflow {self.name} (pid {self.pid})", clean)

    async def _ready(self) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), READY_TIMEOUT_S)
        except TimeoutError:
            line = b""
        if not line:
            await self.kill("load")
            code = self._proc.returncode
            raise WorkflowError(f"workflow {self.name!r}: worker exited ({code}) while loading")
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def call(self, msg: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait for its reply; ``WorkerDied`` or ``TimeoutError``."""
        if self.dead or self._proc is None:
            raise WorkerDied(f"workflow {self.name!r} worker is not running")
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self._send({**msg, "id": request_id})
            return await asyncio.wait_for(future, timeout_s)
        except (ConnectionError, BrokenPipeError):
            raise WorkerDied(f"workflow {self.name!r} worker is gone") from None
        finally:
            self._pending.pop(request_id, None)

    @property
    def busy(self) -> int:
        return len(self._pending)

    async def _send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        await self._proc.stdin.drain()

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stream = self._proc.stdout
        while line := await stream.readline():
            reply = json.loads(line)
            future = self._pending.get(reply.get("id"))
            if future is not None and not future.done():
                future.set_result(reply)
        await self._exited()

    async def _exited(self) -> None:
        self.dead = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(WorkerDied(f"workflow {self.name!r} worker exited"))
        if self._proc is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._proc.wait(), 5)
        await self.on_exit(self)

    @property
    def exit_code(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    async def kill(self, reason: str) -> None:
        """Kill the process (the reader then reports the exit with ``kill_reason`` set)."""
        self.kill_reason = self.kill_reason or reason
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()

    async def close(self) -> None:
        """Stop for good (daemon stop): kill, and wait for the reader to finish."""
        await self.kill("stop")
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._reader, 5)
