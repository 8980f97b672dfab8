"""How a command reaches a workspace's log: :class:`Direct` (this process is the log's single
writer) or :class:`ThroughDaemon` (the daemon is, over its socket), chosen in one place,
:func:`connect`. Nothing else asks whether a daemon runs.

Also the client half of the daemon: where it says it runs (pid file, ``nerve.run.json``),
whether it answers, one request. The server half, ``nerve.runtime.daemon``, starts and
stops it.
"""

from __future__ import annotations

import json
import os
import uuid
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from nerve.commands import Command, Json, no_daemon
from nerve.commands.log import Emit, Import
from nerve.errors import ConfigError, NerveError, SealDeferred, UsageError
from nerve.workspace import WorkspaceDir

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
    from nerve.events import ErasedEvent, Event
    from nerve.log.drafts import Draft
    from nerve.log.store import EventLog
    from nerve.privacy.pause import PauseState
    from nerve.privacy.policy import Policy

T = TypeVar("T")

__all__ = ["Direct", "ThroughDaemon", "Transport", "connect", "running"]


# -- where the daemon says it runs -------------------------------------------------------


def pid_path(ws: WorkspaceDir) -> Path:
    return ws.data / "nerve.pid"


def run_path(ws: WorkspaceDir) -> Path:
    return ws.data / "nerve.run.json"


def run_info(ws: WorkspaceDir) -> dict[str, Any] | None:
    """What the running daemon wrote at start (pid, socket, request limit), or None.

    Clients read this rather than nerve.yaml: it names the socket the daemon really listens
    on (nerve.yaml may have been edited since), and it spares a command that only talks to
    the daemon from loading the configuration parser at all.
    """
    try:
        info = json.loads(run_path(ws).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("pid") != read_pid(ws):
        return None  # a stale record: its daemon is gone
    return info


def socket_path(ws: WorkspaceDir) -> Path:
    """The daemon's socket; the default place if nerve.yaml is missing or broken (a daemon
    started from a good configuration keeps running after a bad edit, and must stay reachable)."""
    info = run_info(ws)
    if info is not None and isinstance(info.get("socket"), str):
        return Path(info["socket"])
    try:
        return (
            ws.root / ws.config.daemon.socket if ws.config_path.exists() else ws.data / "nerve.sock"
        )
    except ConfigError:
        return ws.data / "nerve.sock"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_pid(ws: WorkspaceDir) -> int | None:
    """The pid in the pid file if that process is alive, else None."""
    try:
        pid = int(pid_path(ws).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if alive(pid) else None


def running(ws: WorkspaceDir) -> bool:
    """True when a daemon answers on this workspace's socket.

    A daemon writes its pid file before it listens and removes it only as it exits, so
    with no live pid there is none to ask, and nerve.yaml (for the socket's place) is not
    even read: a command that finds no daemon stays free of the configuration parser."""
    from nerve.runtime import ipc

    if read_pid(ws) is None:
        return False
    path = socket_path(ws)
    return path.exists() and ipc.ping(path)


def call(ws: WorkspaceDir, request: Json, *, timeout: float = 60) -> Json:
    """One request to the running daemon; a refusal becomes the error the daemon raised
    (``EventError``, ``LogError``, ...), an absent daemon a ``DaemonError``."""
    from nerve.runtime import ipc

    reply = ipc.request(socket_path(ws), request, timeout=timeout)
    if not reply.get("ok"):
        raise ipc.reply_error(reply)
    return reply


def holds_log() -> UsageError:
    return UsageError("a daemon holds this log", hint="`nerve stop` first")


# -- the two transports ------------------------------------------------------------------


class Transport(ABC):
    """Runs commands on one workspace's log, one way; :func:`connect` picks the way."""

    daemon: bool = False

    def __init__(self, ws: WorkspaceDir) -> None:
        self.ws = ws

    @abstractmethod
    def do(self, command: Command, *, timeout: float = 60) -> Any:
        """Run ``command``; its typed result."""

    def either(
        self,
        daemon: Command | None = None,
        *,
        log: Callable[[], T] | None = None,
        read: Callable[[Any], T] = lambda result: result,
        busy: Callable[[], NerveError] = holds_log,
        timeout: float = 120,
    ) -> T:
        """An operation the daemon answers as a command (``daemon``, its typed result) and
        this process by other means (``log``, which needs the log to itself): the half for
        this transport (``read`` turns the daemon's result into what ``log`` returns);
        without it, the daemon is said not to run, or to hold the log (``busy()``)."""
        if not self.daemon:
            if log is None:
                raise no_daemon() if daemon is None else daemon.absent()
            return log()
        if daemon is None:
            raise busy()
        return read(self.do(daemon, timeout=timeout))


class Direct(Transport):
    """This process is the log's single writer: it opens the log for each command."""

    def do(self, command: Command, *, timeout: float = 60) -> Any:
        if command.WHERE == "daemon":
            raise command.absent()
        with ExitStack() as stack:
            return command.apply(DirectSide(self.ws, stack))


class ThroughDaemon(Transport):
    """The daemon is the log's single writer: commands go over its socket."""

    daemon = True

    def do(self, command: Command, *, timeout: float = 60) -> Any:
        if isinstance(command, Emit | Import):
            return command.result_of(self._in_parts(command.to_json()))
        return command.result_of(call(self.ws, command.to_json(), timeout=timeout))

    def _in_parts(self, request: Json) -> Json:
        """Send a batch in requests of at most ``REQUEST_CHUNK_BYTES``, in order, as the
        parts of one stage (``nerve.runtime.staging``): the daemon appends nothing until the
        last, which carries the idempotency key, if any."""
        parts = list(_chunks(request["events"], _request_budget(self.ws)))
        last = {**request, "events": parts[-1] if parts else []}
        if len(parts) <= 1:
            return call(self.ws, last)
        stage = uuid.uuid4().hex
        head = {k: v for k, v in request.items() if k != "key"}
        for part in parts[:-1]:
            call(self.ws, {**head, "events": part, "stage": stage, "more": True})
        return call(self.ws, {**last, "stage": stage})


def connect(ws: WorkspaceDir) -> Transport:
    """The way to this workspace's log now: through its daemon when one answers, else
    directly. The one place nerve asks whether a daemon runs."""
    return ThroughDaemon(ws) if running(ws) else Direct(ws)


# -- the direct writer -------------------------------------------------------------------


class DirectSide:
    """This process as the log's writer (``nerve.commands.Side``): the log is opened at the
    first command that needs it and closed with ``stack``."""

    def __init__(self, ws: WorkspaceDir, stack: ExitStack) -> None:
        self.ws = ws
        self._stack = stack
        self._log: EventLog | None = None

    @property
    def config(self) -> NerveConfig:
        return self.ws.config

    @property
    def policy(self) -> Policy:
        from nerve.privacy.policy import Policy

        return Policy(self.ws.config.privacy)

    @property
    def log(self) -> EventLog:
        if self._log is None:
            self._log = self._stack.enter_context(self.ws.open_log())
        return self._log

    def append(self, drafts: list[Draft], key: str | None) -> tuple[list[Json], bool]:
        from nerve.log.wire import row_to_json

        before = self.log.newest
        table = self.log.append_drafts(drafts, key=key)
        _warn_seal(self.log)
        replayed = key is not None and self.log.newest == before and table.num_rows > 0
        return [row_to_json(r) for r in table.to_pylist()], replayed

    def import_events(self, events: list[Event | ErasedEvent], key: str | None) -> tuple[int, bool]:
        before = self.log.newest
        imported = int(self.log.import_events(events, key=key))
        _warn_seal(self.log)
        return imported, key is not None and bool(events) and self.log.newest == before

    def with_log(self, work: Callable[[EventLog], T]) -> T:
        return work(self.log)

    def pause(self, for_ms: int | None) -> PauseState:
        import time

        from nerve.privacy.pause import PauseState, paused_draft, until_of

        until = until_of(time.time_ns(), for_ms)
        table = self.log.append_drafts([paused_draft(until, for_ms)])
        return PauseState(True, table.column("physical_ns")[0].as_py(), until)

    def resume(self) -> PauseState | None:
        import time

        from nerve.privacy.pause import resumed_draft, stored_pause

        state = stored_pause(self.ws.connect())
        if not state.paused:
            return None
        reason = "timer" if state.expired(time.time_ns()) else "command"
        self.log.append_drafts([resumed_draft(state, reason)])
        return state


def _warn_seal(log: EventLog) -> None:
    if log.seal_error is not None:
        warnings.warn(
            f"the events are stored, but sealing them into a segment failed ({log.seal_error}); "
            "the next seal retries",
            SealDeferred,
            stacklevel=5,
        )


# -- batches in parts --------------------------------------------------------------------

REQUEST_CHUNK_BYTES = 512 * 1024


def _request_budget(ws: WorkspaceDir) -> int:
    """Bytes of events per request: ``REQUEST_CHUNK_BYTES``, less if the daemon takes less."""
    info = run_info(ws) or {}
    limit = info.get("max_request_bytes")
    if not isinstance(limit, int):
        try:
            limit = ws.config.daemon.max_request_bytes
        except NerveError:
            limit = REQUEST_CHUNK_BYTES * 2
    return max(1, min(REQUEST_CHUNK_BYTES, limit - 1024))  # room for the request around them


def _chunks(wire: list[Json], budget: int) -> Iterator[list[Json]]:
    """Consecutive runs of ``wire`` of at most ``budget`` bytes of JSON each (checked for
    every event before anything is sent)."""
    chunks: list[list[Json]] = []
    size = budget
    for index, obj in enumerate(wire):
        cost = len(json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")) + 1
        if cost > budget:
            raise UsageError(
                f"event {index + 1} is {cost} bytes of JSON, more than one request to the daemon "
                f"may carry ({budget}); nothing was sent",
                hint="raise daemon.max_request_bytes in nerve.yaml, or stop the daemon",
            )
        if size + cost > budget:
            chunks.append([])
            size = 0
        chunks[-1].append(obj)
        size += cost
    yield from chunks
