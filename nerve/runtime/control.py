"""What the daemon answers on its socket: the commands of ``nerve.commands``.

:data:`HANDLERS` is built from the command set: a command that can run on the log is
parsed and applied in the single writer (:class:`DaemonSide`), the same ``apply`` a process
without a daemon runs; one that needs the running daemon (status, senses, a run's trigger)
is answered by the kernel here, or, for a run's answer, recheck or override, by the
workflow engine's ``handlers()`` (``nerve.flow.control``), which the kernel adds to the
table it passes to :func:`handle`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nerve.commands import Command, Done, Reply, items, key_of, text, version_of
from nerve.commands.daemon import (
    GetStatus,
    Health,
    ListSenses,
    Reload,
    Senses,
    Stop,
    TriggerRun,
    TriggerSense,
)
from nerve.commands.log import Emit, Import, parse_drafts, parse_events
from nerve.commands.table import COMMANDS
from nerve.contract import WorkflowTrigger
from nerve.errors import ConfigError, DaemonError, NerveError, WorkflowError
from nerve.privacy.pause import PAUSED, RESUMED
from nerve.runtime.ipc import IpcServer, error_reply, refusal
from nerve.runtime.senses import sense_rows

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
    from nerve.events import ErasedEvent, Event
    from nerve.log.drafts import Draft
    from nerve.log.store import EventLog
    from nerve.privacy.pause import PauseState
    from nerve.privacy.policy import Policy
    from nerve.runtime.capture import CaptureGate
    from nerve.runtime.staging import Stages
    from nerve.runtime.writer import Writer


class Controlled(Protocol):
    """What the socket's requests need of the kernel."""

    @property
    def config(self) -> NerveConfig: ...

    @property
    def capture(self) -> CaptureGate: ...

    @property
    def stages(self) -> Stages: ...

    @property
    def stats(self) -> Mapping[str, Any]: ...

    @property
    def stopping(self) -> asyncio.Event: ...

    def health(self) -> dict[str, Any]: ...

    def known_workflow(self, name: str) -> bool: ...

    def trigger_sense(self, sense: str) -> None: ...

    @property
    def writer(self) -> Writer: ...

    async def reload(self, reason: str = "edit") -> bool: ...

    async def request_workflow(
        self, trigger: WorkflowTrigger, *, source: str
    ) -> dict[str, Any]: ...


Handler = Callable[[Controlled, dict[str, Any]], Awaitable[dict[str, Any]]]
Served = Callable[[Controlled, Any], Awaitable[Any]]
T = TypeVar("T")

# The kernel's half of the commands that need the running daemon, by type.
SERVED: dict[str, Served] = {}


def serves(command: type[Command]) -> Callable[[Served], Served]:
    def register(fn: Served) -> Served:
        SERVED[command.TYPE] = fn
        return fn

    return register


async def handle(
    kernel: Controlled, request: dict[str, Any], table: Mapping[str, Handler] | None = None
) -> dict[str, Any]:
    """Answer one request with its handler in ``table`` (the built-in ones and those the
    kernel's extensions registered)."""
    table = HANDLERS if table is None else table
    fn = table.get(request["type"])
    if fn is None:
        known = ", ".join(sorted(table))
        message = f"unknown request type {request['type']!r} (known: {known})"
        return refusal("UsageError", message, field="type")
    try:
        return await fn(kernel, request)
    except (NerveError, OSError) as exc:
        return error_reply(exc, request_type=request["type"])


# The kinds the daemon's warm-up reads back from the log (sense states, how the last run
# ended, a pause): an emit of one waits for the warm-up, which reads the log as it was.
WARM_UP_KINDS = frozenset({"sense.state", "daemon.started", "daemon.stopped", PAUSED, RESUMED})


def answers_warming(request: dict[str, Any]) -> bool:
    """Whether a request is answered while the daemon still warms up (its log is open and
    its writer runs, but senses, extensions and the query process may not be up): ``status``,
    and an emit in one request of no kind in :data:`WARM_UP_KINDS`. Any other waits."""
    if request.get("type") == "status":
        return True
    events = request.get("events")
    if request.get("type") != "emit" or "stage" in request or not isinstance(events, list):
        return False
    return all(isinstance(e, dict) and _plain_kind(e.get("kind", "observation")) for e in events)


def _plain_kind(kind: Any) -> bool:
    return isinstance(kind, str) and kind not in WARM_UP_KINDS


@serves(GetStatus)
async def _status(kernel: Controlled, command: GetStatus) -> Health:
    return Health(True, kernel.health())


@serves(ListSenses)
async def _list_senses(kernel: Controlled, command: ListSenses) -> Senses:
    senses = []
    for row in sense_rows(kernel.config):
        stats = kernel.stats.get(row["name"])
        live = stats.to_json() if stats else {}
        senses.append({**row, **live, **_seed_sense(kernel, row["name"], live)})
    return Senses(senses)


def _seed_sense(kernel: Controlled, name: str, live: dict[str, Any]) -> dict[str, Any]:
    """Seed 001's ``SenseInfo`` fields: configured throttle and timeout in ms (null when not
    set) and the last signal's time in epoch ms (null before the first)."""
    cfg = kernel.config.senses[name]
    signalled = live.get("last_signal_ns")
    return {
        "throttle": cfg.throttle,
        "timeout": cfg.timeout,
        "lastSignalTs": None if signalled is None else signalled // 1_000_000,
    }


SEED_SOCKET = "nerve.sock"


async def listen(
    config: NerveConfig,
    root: Path,
    socket_path: Path,
    answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    streams: dict[str, Any],
) -> list[IpcServer]:
    """The daemon's socket answering with ``answer``, and the seed-era one beside it when
    that path is free."""
    limit = config.daemon.max_request_bytes
    ipc = IpcServer(socket_path, answer, max_bytes=limit, streams=streams)
    await ipc.start()
    seed = await seed_listener(root, socket_path, config, answer)
    return [ipc] if seed is None else [ipc, seed]


async def seed_listener(
    root: Path,
    socket_path: Path,
    config: NerveConfig,
    answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
) -> IpcServer | None:
    """A second listener at the workspace root's ``nerve.sock``, where seed-era clients
    connect (replies shaped by :func:`seed_reply`); skipped, with a warning, when something
    else holds that path."""
    from nerve.runtime import journal

    path = root / SEED_SOCKET
    if path.resolve() == socket_path.resolve():
        return None
    server = IpcServer(path, answer, max_bytes=config.daemon.max_request_bytes, reshape=seed_reply)
    try:
        await server.start()
    except (NerveError, OSError) as exc:
        journal.warn(f"no seed-compatible socket at {path}: {exc}")
        return None
    return server


def seed_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A reply as seed 001's clients read it at the workspace root's ``nerve.sock``: the
    same, except that a refusal's ``error`` is one string (``"ErrorName: message"``) rather
    than nerve's object."""
    error = reply.get("error")
    if reply.get("ok") is False and isinstance(error, dict):
        name, message = error.get("type"), error.get("message", "")
        return {**reply, "error": f"{name}: {message}" if name else str(message)}
    return reply


@serves(TriggerSense)
async def _trigger_sense(kernel: Controlled, command: TriggerSense) -> Done:
    kernel.trigger_sense(command.sense)
    return Done()


@serves(TriggerRun)
async def _trigger_run(kernel: Controlled, command: TriggerRun) -> Reply:
    trigger = WorkflowTrigger(
        name=command.workflow,
        max_rounds=command.max_rounds,
        prompt=command.prompt,
        dry_run=command.dry_run,
        key=command.key,
    )
    if not kernel.known_workflow(trigger.name):
        raise WorkflowError(f"unknown workflow {trigger.name!r}", field="workflow")
    return Reply(await kernel.request_workflow(trigger, source="ipc"))


@serves(Reload)
async def _reload(kernel: Controlled, command: Reload) -> Done:
    if not await kernel.reload("request"):
        raise ConfigError("configuration rejected; see the config.rejected event")
    return Done()


@serves(Stop)
async def _stop(kernel: Controlled, command: Stop) -> Done:
    kernel.stopping.set()
    return Done()


def _handler(kind: type[Command]) -> Handler:
    """The socket's answer to one command: parsed, then served by the kernel (a command
    that needs the running daemon) or applied in the single writer."""

    async def answer(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
        staged = "stage" in request
        command = _staged(kernel, request, kind) if staged else _parsed(kind, request)
        if command is None:
            return {"ok": True, "staged": kernel.stages.count(request["stage"])}
        serve = SERVED.get(kind.TYPE)
        result = await (serve(kernel, command) if serve else _applied(kernel, command))
        return {"ok": True, **result.to_json()}

    return answer


def _parsed(kind: type[Command], request: dict[str, Any]) -> Command:
    made: Command = kind.from_json(request)  # type: ignore[attr-defined]
    return made


# Commands are applied in threads of their own: each waits on the loop for the writer's
# steps, which use the loop's default threads; sharing those could leave none to run them.
_APPLYING = ThreadPoolExecutor(max_workers=4, thread_name_prefix="command")


async def _applied(kernel: Controlled, command: Command) -> Any:
    """``command.apply`` run in a thread beside the loop, over the daemon's writer."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_APPLYING, command.apply, DaemonSide(kernel, loop))


def _staged(kernel: Controlled, request: dict[str, Any], kind: type[Command]) -> Command | None:
    """An emit or import sent in parts (see ``nerve.runtime.staging``): held until the last
    part, then the whole batch as one command (``None`` for a part before the last)."""
    request = version_of(request)
    parse = parse_drafts if kind is Emit else parse_events
    objects = items(request, "events")
    stage = text(request, "stage")
    more = request.get("more") is True
    try:
        parsed = parse(objects, kernel.stages.count(stage))
        batch = kernel.stages.add(stage, kind.TYPE, parsed, more=more)
    except NerveError:
        kernel.stages.drop(stage)
        raise
    if more:
        return None
    key = key_of(request)
    return Emit(tuple(batch), key) if kind is Emit else Import(tuple(batch), key)


class DaemonSide:
    """The daemon as the log's writer (``nerve.commands.Side``), for a command applied in a
    thread: each step runs on the daemon's loop, over its committer and pause switch."""

    def __init__(self, kernel: Controlled, loop: asyncio.AbstractEventLoop) -> None:
        self._kernel = kernel
        self._loop = loop

    def _on_loop(self, work: Coroutine[Any, Any, T]) -> T:
        """Run one step on the daemon's loop and wait for it (refused if the loop closes
        first: the daemon is stopping, and this thread must not outlive it)."""
        done = asyncio.run_coroutine_threadsafe(work, self._loop)
        while True:
            try:
                return done.result(timeout=1.0)
            except TimeoutError:
                if self._loop.is_closed() or not self._loop.is_running():
                    done.cancel()
                    raise DaemonError("the daemon stopped before the command was done") from None

    @property
    def config(self) -> NerveConfig:
        return self._kernel.config

    @property
    def policy(self) -> Policy:
        return self._kernel.writer.policy

    def append(self, drafts: list[Draft], key: str | None) -> tuple[list[dict[str, Any]], bool]:
        return self._on_loop(self._kernel.writer.append_batch(drafts, key))

    def import_events(self, events: list[Event | ErasedEvent], key: str | None) -> tuple[int, bool]:
        return self._on_loop(self._kernel.writer.import_batch(events, key))

    def with_log(self, work: Callable[[EventLog], T]) -> T:
        done: T = self._on_loop(self._kernel.writer.with_log(work))
        return done

    def pause(self, for_ms: int | None) -> PauseState:
        return self._on_loop(self._kernel.capture.pause(for_ms))

    def resume(self) -> PauseState | None:
        return self._on_loop(self._kernel.capture.resume("command"))


# Every command but those the workflow engine answers (its ``handlers()``).
HANDLERS: dict[str, Handler] = {
    c.TYPE: _handler(c) for c in COMMANDS if c.TYPE in SERVED or c.WHERE != "daemon"
}
