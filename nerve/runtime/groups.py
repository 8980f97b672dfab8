"""The kernel's side of a sense group: one worker process, a queue, timeouts and restarts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

READY_TIMEOUT_S = 60.0
RESTART_WINDOW_S = 60.0
RESTARTS_BEFORE_BACKOFF = 5
BACKOFF_S = 5.0
STREAM_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True)
class SenseSpec:
    name: str
    path: str
    options: dict[str, Any]
    timeout_ms: int


@dataclass(frozen=True)
class Job:
    sense: str
    reason: str
    due_ns: int


class Host(Protocol):
    """What a group needs from the kernel."""

    def state_of(self, sense: str) -> Any: ...

    async def on_result(self, job: Job, started_ns: int, reply: dict[str, Any]) -> None: ...

    async def on_failure(self, job: Job, kind: str, message: str) -> None: ...

    async def on_restart(self, group: str, reason: str, pid: int | None) -> None: ...

    async def on_loaded(self, group: str, loaded: dict[str, Any]) -> None: ...


class GroupWorker:
    def __init__(
        self,
        group: str,
        senses: dict[str, SenseSpec],
        workspace: Path,
        host: Host,
        now_ns: Any = time.monotonic_ns,
    ) -> None:
        self.group = group
        self.senses = senses
        self.workspace = workspace
        self.host = host
        self._now = now_ns
        self._queue: deque[Job] = deque()
        self._queued: set[str] = set()
        self._wake = asyncio.Event()
        self._proc: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._restarts: deque[float] = deque()
        self.pid: int | None = None
        self.restarts = 0
        self.busy: str | None = None
        self.seq = 0

    async def start(self) -> None:
        await self._spawn()
        self._task = asyncio.create_task(self._run(), name=f"group:{self.group}")

    def enqueue(self, job: Job) -> None:
        """Queue a compute; a sense already waiting in the queue is not queued twice."""
        if job.sense in self._queued:
            return
        self._queued.add(job.sense)
        self._queue.append(job)
        self._wake.set()

    @property
    def queued(self) -> int:
        return len(self._queue)

    async def _spawn(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "nerve.runtime.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=STREAM_LIMIT,
            cwd=self.workspace,
        )
        self.pid = self._proc.pid
        specs = {n: {"path": s.path, "options": s.options} for n, s in self.senses.items()}
        await self._send({"op": "load", "workspace": str(self.workspace), "senses": specs})
        reply = await self._receive(READY_TIMEOUT_S)
        if reply is None or reply.get("op") != "ready":
            raise RuntimeError(f"sense group {self.group!r}: worker did not start")
        await self.host.on_loaded(self.group, reply["loaded"])

    async def _send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        await self._proc.stdin.drain()

    async def _receive(self, timeout_s: float) -> dict[str, Any] | None:
        """One reply line, or None if the worker died. Raises TimeoutError."""
        assert self._proc is not None and self._proc.stdout is not None
        line = await asyncio.wait_for(self._proc.stdout.readline(), timeout_s)
        return json.loads(line) if line else None

    async def _run(self) -> None:
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            job = self._queue.popleft()
            self._queued.discard(job.sense)
            await self._compute(job)

    async def _compute(self, job: Job) -> None:
        spec = self.senses.get(job.sense)
        if spec is None:
            return
        self.seq += 1
        self.busy = job.sense
        started = self._now()
        try:
            await self._send(
                {
                    "op": "compute",
                    "seq": self.seq,
                    "sense": job.sense,
                    "state": self.host.state_of(job.sense),
                }
            )
            reply = await self._receive(spec.timeout_ms / 1000)
        except TimeoutError:
            await self.host.on_failure(
                job, "timeout", f"compute exceeded its {spec.timeout_ms} ms timeout"
            )
            await self._restart(f"sense {job.sense!r} hung past its timeout")
            return
        except (ConnectionError, BrokenPipeError):
            reply = None
        finally:
            self.busy = None
        if reply is None:
            code = await self._exit_code()
            await self.host.on_failure(
                job, "crash", f"worker exited with code {code} during compute"
            )
            await self._restart(f"worker exited with code {code}")
            return
        await self.host.on_result(job, started, reply)

    async def _exit_code(self) -> int | None:
        assert self._proc is not None
        try:
            return await asyncio.wait_for(self._proc.wait(), 5)
        except TimeoutError:
            return None

    async def _restart(self, reason: str) -> None:
        old_pid = self.pid
        await self._kill()
        now = time.monotonic()
        self._restarts.append(now)
        while self._restarts and now - self._restarts[0] > RESTART_WINDOW_S:
            self._restarts.popleft()
        if len(self._restarts) > RESTARTS_BEFORE_BACKOFF:
            reason += (
                f"; {len(self._restarts)} restarts in {RESTART_WINDOW_S:.0f} s, "
                f"backing off {BACKOFF_S:.0f} s"
            )
            await asyncio.sleep(BACKOFF_S)
        self.restarts += 1
        await self._spawn()
        await self.host.on_restart(self.group, reason, old_pid)

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.kill()
        await proc.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await self._kill()
