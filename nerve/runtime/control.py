"""What the daemon answers on its socket. Each request type maps to one kernel call.

The built-in requests are :data:`HANDLERS`; an extension adds its own explicitly, through
its ``handlers()`` (the workflow engine's are in ``nerve.flow.control``), and the kernel
passes the table it built to :func:`handle`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nerve.clock import Hlc
from nerve.contract import WorkflowTrigger
from nerve.errors import NerveError, UsageError, WorkflowError
from nerve.privacy.pause import PAUSED, RESUMED
from nerve.runtime.ipc import IpcServer, error_reply, refusal
from nerve.runtime.senses import sense_rows
from nerve.runtime.writer import parse_drafts, parse_events

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
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
HANDLERS: dict[str, Handler] = {}


def handles(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


async def handle(
    kernel: Controlled, request: dict[str, Any], table: Mapping[str, Handler] = HANDLERS
) -> dict[str, Any]:
    """Answer one request with its handler in ``table`` (the built-in ones and those the
    kernel's extensions registered)."""
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


def _str_field(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise UsageError(f"request field {key!r} must be a non-empty string", field=key)
    return value


def _list_field(request: dict[str, Any], key: str) -> list[Any]:
    value = request.get(key)
    if not isinstance(value, list):
        raise UsageError(f"request field {key!r} must be a list", field=key)
    return value


def _int_field(request: dict[str, Any], key: str, default: int) -> int:
    value = request.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"request field {key!r} must be a positive integer", field=key)
    return value


def _key_field(request: dict[str, Any]) -> str | None:
    """The optional idempotency key of an emit or import (see nerve.log.batchkeys)."""
    key = request.get("key")
    if key is not None and not isinstance(key, str):
        raise NerveError('request field "key" must be a string')
    return key


@handles("status")
async def _status(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "status": kernel.health()}


@handles("list-senses")
async def _list_senses(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    senses = []
    for row in sense_rows(kernel.config):
        stats = kernel.stats.get(row["name"])
        live = stats.to_json() if stats else {}
        senses.append({**row, **live, **_seed_sense(kernel, row["name"], live)})
    return {"ok": True, "senses": senses}


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


@handles("trigger-sense")
async def _trigger_sense(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    kernel.trigger_sense(_str_field(request, "sense"))
    return {"ok": True}


@handles("trigger-workflow")
async def _trigger_workflow(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    raw = {
        "name": _str_field(request, "workflow"),
        "prompt": request.get("prompt", ""),
        "max_rounds": request.get("max_rounds", request.get("maxRounds")),
        "dry_run": request.get("dry_run", False),
        "key": request.get("key"),
    }
    trigger = WorkflowTrigger.parse(raw)
    if not kernel.known_workflow(trigger.name):
        raise WorkflowError(f"unknown workflow {trigger.name!r}", field="workflow")
    run = await kernel.request_workflow(trigger, source="ipc")
    return {"ok": True, **run}


@handles("emit")
async def _emit(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    drafts = _batch(kernel, request, parse_drafts)
    if drafts is None:
        return {"ok": True, "staged": kernel.stages.count(request["stage"])}
    return {"ok": True, "events": await kernel.writer.emit_drafts(drafts, _key_field(request))}


@handles("import")
async def _import(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    events = _batch(kernel, request, parse_events)
    if events is None:
        return {"ok": True, "staged": kernel.stages.count(request["stage"])}
    return {"ok": True, "imported": await kernel.writer.import_parsed(events, _key_field(request))}


def _batch(
    kernel: Controlled, request: dict[str, Any], parse: Callable[[list[Any], int], list[Any]]
) -> list[Any] | None:
    """The request's events, parsed; with ``stage`` (see ``nerve.runtime.staging``), held
    until the last part, then the whole batch (``None`` for a part before the last)."""
    objects = _list_field(request, "events")
    if "stage" not in request:
        return parse(objects, 0)
    stage = _str_field(request, "stage")
    more = request.get("more") is True
    try:
        items = parse(objects, kernel.stages.count(stage))
        batch = kernel.stages.add(stage, request["type"], items, more=more)
    except NerveError:
        kernel.stages.drop(stage)
        raise
    return None if more else batch


@handles("pause")
async def _pause(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    for_ms = request.get("for_ms")
    if for_ms is not None:
        for_ms = _int_field(request, "for_ms", 1)
    return {"ok": True, "capture": (await kernel.capture.pause(for_ms)).to_json()}


@handles("resume")
async def _resume(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    ended = await kernel.capture.resume("command")
    return {"ok": True, "ended": ended.to_json() if ended else None}


@handles("seal")
async def _seal(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    info = await kernel.writer.log_call("seal")
    return {"ok": True, "sealed": info.to_json() if info else None}


@handles("compact")
async def _compact(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    result = await kernel.writer.log_call(
        "compact", target_rows=_int_field(request, "target_rows", 1_000_000)
    )
    return {"ok": True, "merged": result.merged, "written": result.written, "rows": result.rows}


@handles("forget")
async def _forget(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    from nerve.privacy.forget import Request, apply

    wanted = Request.from_json(request)
    retention = kernel.config.log.retention
    result = await kernel.writer.with_log(lambda log: apply(log, wanted, retention))
    return {"ok": True, "result": result.to_json()}


@handles("archive")
async def _archive(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    from nerve.privacy.archive import apply

    before = request.get("before")
    if not (isinstance(before, list) and len(before) == 2 and all(type(v) is int for v in before)):
        raise UsageError("request field 'before' must be [physical_ns, logical]", field="before")
    folder = Path(_str_field(request, "to"))
    vacuum = request.get("vacuum") is True
    result = await kernel.writer.with_log(
        lambda log: apply(log, Hlc(*before), folder, vacuum=vacuum)
    )
    return {"ok": True, "result": result.to_json()}


@handles("reload")
async def _reload(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    applied = await kernel.reload("request")
    if applied:
        return {"ok": True}
    return refusal("ConfigError", "configuration rejected; see the config.rejected event")


@handles("stop")
async def _stop(kernel: Controlled, request: dict[str, Any]) -> dict[str, Any]:
    kernel.stopping.set()
    return {"ok": True}
