"""The kernel's side of a sense group: one worker process, a queue, timeouts and restarts."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nerve.errors import report
from nerve.runtime.children import (
    CANCEL_SIGNAL,
    WORKER_MARK,
    end_adopted,
    end_descendants,
    new_mark,
    spawning,
)

READY_TIMEOUT_S = 60.0
RESTART_WINDOW_S = 60.0
RESTARTS_BEFORE_BACKOFF = 5
BACKOFF_S = 5.0
STREAM_LIMIT = 64 * 1024 * 1024
READ_CHUNK = 1 << 20  # replies are read as they come, many lines at a time
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
_COMPUTE = b'{"op":"compute","seq":%d,"sense":%s,"state":%s}'
MAX_BATCH = 64  # computes sent to a worker in one write
RELAY_GRACE_S = 0.5
# At a stop, computes already sent get this long to answer, so a compute that ran is also
# stored and counted; one still running after it is abandoned (its worker is killed).
STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class SenseSpec:
    name: str
    path: str
    options: dict[str, Any]
    timeout_ms: int
    cancel_grace_ms: int = 1000


@dataclass(frozen=True)
class Job:
    sense: str
    reason: str
    due_ns: int


@dataclass(frozen=True, slots=True)
class Reply:
    """A worker's answer to one compute: the job, when it started (monotonic ns), the reply."""

    job: Job
    started_ns: int
    body: dict[str, Any]


class GroupNeeds(Protocol):
    """What a group needs from the kernel."""

    def state_json(self, sense: str) -> bytes:
        """The sense's state as canonical JSON (what its next compute starts from)."""
        ...

    async def on_results(self, replies: list[Reply]) -> None:
        """Replies of one batch that arrived together, in order: stored as one commit."""
        ...

    async def on_failure(self, job: Job, kind: str, message: str) -> None: ...

    async def on_restart(self, group: str, reason: str, pid: int | None) -> None: ...

    async def on_loaded(self, group: str, loaded: dict[str, Any]) -> None: ...


@functools.lru_cache(maxsize=4096)
def _name(sense: str) -> bytes:
    return _ENCODE(sense).encode()


class ProtocolError(ValueError):
    """A worker wrote a line that is not a protocol reply (say, a sense writing to the
    worker's protocol descriptor): the worker can no longer be trusted, so it is restarted."""


def _reply(line: bytes) -> dict[str, Any]:
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError):
        reply = None
    if not isinstance(reply, dict):
        shown = line[:80].decode("utf-8", "replace").rstrip("\n")
        raise ProtocolError(f"worker wrote a line that is not a reply: {shown!r}")
    return reply


class GroupWorker:
    def __init__(
        self,
        group: str,
        senses: dict[str, SenseSpec],
        workspace: Path,
        needs: GroupNeeds,
        now_ns: Any = time.monotonic_ns,
        clean: Callable[[str], str] | None = None,
    ) -> None:
        self.group = group
        self._clean = clean  # redacts what the worker writes on stderr before it is logged
        self.senses = senses
        self.workspace = workspace
        self.needs = needs
        self._now = now_ns
        self._queue: deque[Job] = deque()
        self._queued: dict[str, int] = {}  # sense -> its jobs in the queue
        self._wake = asyncio.Event()
        self._proc: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._relay: asyncio.Task[None] | None = None
        self._restarts: deque[float] = deque()
        self.pid: int | None = None
        self.restarts = 0
        self.busy: str | None = None
        self.restarting: str | None = None  # "restarting" or "backoff" while it is down
        self.seq = 0
        self.coalesced = 0
        # A result is committed while the next compute already runs; only the same sense's
        # next compute waits for it (it needs the durable state).
        self._committing: dict[str, asyncio.Task[None]] = {}
        self._stopping = False
        self._lines: deque[bytes] = deque()  # reply lines read, not handled yet
        self._partial: list[bytes] = []  # the start of a line not wholly read
        self._partial_bytes = 0
        self._eof = False
        self._ready: list[Reply] = []  # replies handled, not yet handed to its owner
        self._mark = ""

    async def start(self) -> None:
        await self._spawn()
        self._task = asyncio.create_task(self._run(), name=f"group:{self.group}")

    def enqueue(self, job: Job, *, coalesce: bool = True) -> bool:
        """Queue a compute; a sense already waiting in the queue is not queued twice (False:
        the previous compute has not started yet, so this one overlaps it) unless
        ``coalesce`` is false (catching up on missed ticks, one compute each)."""
        if coalesce and job.sense in self._queued:
            self.coalesced += 1
            return False
        self._queued[job.sense] = self._queued.get(job.sense, 0) + 1
        self._queue.append(job)
        self._wake.set()
        return True

    @property
    def queued(self) -> int:
        return len(self._queue)

    async def _spawn(self) -> None:
        from nerve.runtime.journal import relay  # here: `nerve sense ...` imports this module

        self._mark = new_mark()
        with spawning():
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "nerve.runtime.worker",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=STREAM_LIMIT,
                cwd=self.workspace,
                process_group=0,  # see nerve.runtime.children
                env={**os.environ, WORKER_MARK: self._mark},
            )
        self.pid = self._proc.pid
        self._lines.clear()
        self._partial, self._partial_bytes, self._eof = [], 0, False
        assert self._proc.stderr is not None
        cleans = [self._clean] if self._clean is not None else []
        self._relay = asyncio.create_task(
            relay(self._proc.stderr, f"group {self.group} (pid {self.pid})", *cleans),
            name=f"stderr:{self.group}",
        )
        specs = {n: {"path": s.path, "options": s.options} for n, s in self.senses.items()}
        await self._send({"op": "load", "workspace": str(self.workspace), "senses": specs})
        reply = await self._receive(READY_TIMEOUT_S)
        if reply is None or reply.get("op") != "ready":
            raise RuntimeError(f"sense group {self.group!r}: worker did not start")
        await self.needs.on_loaded(self.group, reply["loaded"])

    async def _send(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        await self._proc.stdin.drain()

    async def _receive(self, timeout_s: float) -> dict[str, Any] | None:
        """One reply line, or None if the worker died. Raises TimeoutError.

        A line already read returns at once; otherwise whatever the worker has written is
        read in one go, so a batch's replies cost one wake-up, not one each."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not self._lines:
            if self._eof:
                return None
            self._deliver()  # replies already handled are stored while we wait
            await self._read_more(deadline)
        return _reply(self._lines.popleft())

    async def _read_more(self, deadline: float) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation.
        async with asyncio.timeout_at(deadline):
            chunk = await self._proc.stdout.read(READ_CHUNK)
        if not chunk:
            self._eof = True
            if self._partial:  # a last line without its newline
                self._lines.append(b"".join(self._partial))
                self._partial, self._partial_bytes = [], 0
            return
        if b"\n" not in chunk:
            self._partial.append(chunk)
            self._partial_bytes += len(chunk)
            if self._partial_bytes > STREAM_LIMIT:
                raise ProtocolError(f"worker wrote a line longer than {STREAM_LIMIT} bytes")
            return
        *whole, rest = b"".join([*self._partial, chunk]).split(b"\n")
        self._lines.extend(whole)
        self._partial, self._partial_bytes = ([rest] if rest else []), len(rest)

    async def _run(self) -> None:
        while not self._stopping:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
                if self._stopping:
                    return
            batch = [j for j in self._next_batch() if j.sense in self.senses]
            try:
                await self._run_batch(batch)
            except Exception as exc:  # the group must not end silently: restart it
                await self._recover(batch, exc)
            finally:
                self._deliver()

    async def _recover(self, batch: list[Job], exc: Exception) -> None:
        report(f"sense group {self.group!r}: {type(exc).__name__}: {exc}")
        if batch:
            await self.needs.on_failure(batch[0], "internal", f"{type(exc).__name__}: {exc}")
        while not self._stopping:
            try:
                await self._restart(f"{type(exc).__name__}: {exc}")
                return
            except Exception as again:  # e.g. the new worker did not start: wait, retry
                report(f"sense group {self.group!r}: restart failed: {again}")
                exc = again
                await asyncio.sleep(BACKOFF_S)

    def _next_batch(self) -> list[Job]:
        """Queued jobs to send at once: a sense at most once (its next compute needs the
        state this one stores), at most ``MAX_BATCH``."""
        batch: list[Job] = []
        senses: set[str] = set()
        while self._queue and len(batch) < MAX_BATCH and self._queue[0].sense not in senses:
            job = self._queue.popleft()
            batch.append(job)
            senses.add(job.sense)
        for job in batch:
            left = self._queued.pop(job.sense, 1) - 1
            if left > 0:
                self._queued[job.sense] = left
        return batch

    async def _run_batch(self, batch: list[Job]) -> None:
        """Send every queued compute in one write; the worker answers them in order.

        Each reply is awaited with its own sense's timeout, counted from the previous reply.
        On a timeout or a crash the jobs not yet answered go back to the queue.
        """
        for job in batch:
            pending = self._committing.get(job.sense)
            if pending is not None:  # its next compute needs the durable state
                with contextlib.suppress(Exception):  # a failed commit left the state as it was
                    await pending
        try:
            await self._write(self._requests(batch))
        except (ConnectionError, BrokenPipeError):
            await self._crashed(batch)
            return
        first = self.seq - len(batch) + 1
        for index, job in enumerate(batch):
            if not await self._await_reply(job, first + index):
                self._requeue(batch[index + 1 :])
                return

    def _requests(self, batch: list[Job]) -> bytes:
        """Every compute of the batch, one JSON line each, for one write; a state goes as
        the canonical bytes the kernel already holds, not encoded again."""
        lines = []
        for job in batch:
            self.seq += 1
            state = self.needs.state_json(job.sense)
            lines.append(_COMPUTE % (self.seq, _name(job.sense), state))
        lines.append(b"")
        return b"\n".join(lines)

    async def _await_reply(self, job: Job, seq: int) -> bool:
        """Handle one job's reply; False if the worker had to be restarted."""
        spec = self.senses[job.sense]
        self.busy = job.sense
        try:
            reply = await self._receive(spec.timeout_ms / 1000)
            if reply is not None and (reply.get("op"), reply.get("seq")) != ("result", seq):
                raise ProtocolError(f"worker answered {str(reply)[:80]!r} to compute {seq}")
        except ProtocolError as exc:
            self._deliver()  # the replies before it are stored
            await self.needs.on_failure(job, "protocol", str(exc))
            await self._restart(f"sense {job.sense!r}: {exc}")
            return False
        except TimeoutError:
            how = await self._cancel(spec.cancel_grace_ms / 1000)
            await self.needs.on_failure(
                job, "timeout", f"compute exceeded its {spec.timeout_ms} ms timeout; {how}"
            )
            await self._restart(f"sense {job.sense!r} hung past its timeout")
            return False
        except (ConnectionError, BrokenPipeError):
            reply = None
        finally:
            self.busy = None
        if reply is None:
            await self._crashed([job])
            return False
        self._ready.append(Reply(job, int(reply.get("started_ns") or self._now()), reply))
        return True

    def _deliver(self) -> None:
        """Hand the replies handled so far to its owner as one batch (one commit), while the
        worker goes on; a sense's next compute waits for its batch to be stored."""
        if not self._ready:
            return
        ready, self._ready = self._ready, []
        task = asyncio.create_task(self.needs.on_results(ready))
        senses = [r.job.sense for r in ready]
        for sense in senses:
            self._committing[sense] = task
        task.add_done_callback(functools.partial(self._done, senses))

    async def _cancel(self, grace_s: float) -> str:
        """Ask the worker's compute to stop (it sees ``ctx.cancelled``, or an async compute
        is cancelled) and give it ``grace_s`` to answer; what it did. Its late answer is
        not used: a timed-out compute leaves the state as it was."""
        if self._proc is None or self._proc.returncode is not None:
            return "its worker had exited"
        with contextlib.suppress(ProcessLookupError):
            self._proc.send_signal(CANCEL_SIGNAL)
        try:
            reply = await self._receive(grace_s)
        except (TimeoutError, ConnectionError, ValueError):
            reply = None
        if reply is None:
            return f"not stopped within the {grace_s:g} s grace period, killed"
        return "stopped when cancelled, within the grace period"

    async def _crashed(self, batch: list[Job]) -> None:
        self._deliver()  # the replies before the crash are stored before its error
        code = await self._exit_code()
        await self.needs.on_failure(
            batch[0], "crash", f"worker exited with code {code} during compute"
        )
        self._requeue(batch[1:])
        await self._restart(f"worker exited with code {code}")

    def _requeue(self, jobs: list[Job]) -> None:
        for job in reversed(jobs):
            if job.sense not in self._queued:
                self._queued[job.sense] = 1
                self._queue.appendleft(job)
        self._wake.set()

    async def _write(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    def _done(self, senses: list[str], task: asyncio.Task[None]) -> None:
        for sense in senses:
            if self._committing.get(sense) is task:
                del self._committing[sense]
        if not task.cancelled() and task.exception() is not None:
            # e.g. a full disk: the results were not stored, so the senses' states did not move
            report(f"{', '.join(senses)}: result not stored: {task.exception()}")

    async def _exit_code(self) -> int | None:
        assert self._proc is not None
        try:
            async with asyncio.timeout(5):
                return await self._proc.wait()
        except TimeoutError:
            return None

    async def _restart(self, reason: str) -> None:
        if self._stopping:  # no new worker for a group that is going away
            await self._kill()
            return
        self.restarting = "restarting"
        try:
            await self._respawn(reason)
        finally:
            self.restarting = None

    async def _respawn(self, reason: str) -> None:
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
            self.restarting = "backoff"
            await asyncio.sleep(BACKOFF_S)
            self.restarting = "restarting"
        self.restarts += 1
        await self._spawn()
        await self.needs.on_restart(self.group, reason, old_pid)

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        stderr, self._relay = self._relay, None
        ended: set[int] = set()
        if proc is not None and proc.returncode is None:
            ended = end_descendants(proc.pid)  # first: with the worker gone they pass to us
            proc.kill()
        if proc is not None:
            await proc.wait()
            # what passed to the daemon (all of it, for a worker killed from outside): end
            # and reap it
            await asyncio.to_thread(end_adopted, self._mark, proc.pid, ended)
        if stderr is not None:  # its last lines, unless a child of the sense holds the pipe
            with contextlib.suppress(Exception):  # TimeoutError included
                async with asyncio.timeout(RELAY_GRACE_S):
                    await asyncio.shield(stderr)
            stderr.cancel()

    async def stop(self) -> None:
        """Send nothing more; let the computes already sent answer (``STOP_GRACE_S``) and
        their results be stored; then kill the worker."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            # a timeout, or the loop's own failure (reported where it fell): stop regardless
            with contextlib.suppress(Exception):
                async with asyncio.timeout(STOP_GRACE_S):
                    await asyncio.shield(self._task)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._committing:
            await asyncio.gather(*self._committing.values(), return_exceptions=True)
        await self._kill()
