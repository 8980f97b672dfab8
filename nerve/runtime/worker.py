"""A sense worker process: runs one group's computes, one at a time.

Protocol: JSON lines. The kernel writes requests to our stdin; we answer on the original
stdout, which we keep for ourselves: a sense that prints writes to stderr instead.

    kernel → {"op": "load", "workspace": W, "senses": {name: {"path": P, "options": {...}}}}
    worker → {"op": "ready", "pid": N, "loaded": {name: {"ok": true, "initial_state": ...,
                                                              "state_records": "changes"}
                                                       | {"ok": false, "error": "..."}}}
    kernel → {"op": "compute", "seq": N, "sense": name, "state": ...}
    worker → {"op": "result", "seq": N, "ok": true, "state_jcs": "<the new state as canonical
              JSON text>", "observations": [...],
              "workflow": ..., "signal": bool, "duration_ms": ...}
           | {"op": "result", "seq": N, "ok": true, "skip": "reason", "duration_ms": ...}
           | {"op": "result", "seq": N, "ok": false, "error_kind": K, "error": "..."}
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import inspect
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from nerve.canonical import MAX_NESTING, canonical_json
from nerve.contract import Observation, SenseContext, Skip, WorkflowTrigger, normalise_result
from nerve.errors import NerveError
from nerve.events import check_text, check_valid_time
from nerve.runtime.children import CANCEL_SIGNAL, adopt_orphans, detach

_LOOP = asyncio.new_event_loop()
# A state is stored inside its sense.state payload ({"state": ...}): one level less than it.
STATE_NESTING = MAX_NESTING - 1
STATE_RECORDS = ("changes", "checkpoints")  # see nerve.contract


class LoadedSense:
    def __init__(self, name: str, module: ModuleType, ctx: SenseContext) -> None:
        self.name = name
        self.module = module
        self.ctx = ctx
        compute = getattr(module, "compute", None)
        if not callable(compute):
            raise NerveError(f"{module.__file__}: sense {name!r} has no compute(state) function")
        self.compute: Callable[..., Any] = compute
        self.takes_ctx = len(inspect.signature(compute).parameters) >= 2
        if not hasattr(module, "initial_state"):
            raise NerveError(f"{module.__file__}: sense {name!r} does not export initial_state")
        self.initial_state = json.loads(
            canonical_json(module.initial_state, field="initial_state", limit=STATE_NESTING)
        )
        self.state_records = getattr(module, "state_records", "changes")
        if self.state_records not in STATE_RECORDS:
            raise NerveError(
                f"{module.__file__}: sense {name!r}: state_records must be 'changes' or "
                f"'checkpoints', got {self.state_records!r}"
            )

    def run(self, state: Any) -> Any:
        self.ctx.cancel_event.clear()
        _CURRENT.ctx = self.ctx
        try:
            out = self.compute(state, self.ctx) if self.takes_ctx else self.compute(state)
            if inspect.isawaitable(out):
                _CURRENT.task = _LOOP.create_task(_await(out))
                out = _LOOP.run_until_complete(_CURRENT.task)
            return out
        finally:
            _CURRENT.ctx = _CURRENT.task = None


async def _await(value: Any) -> Any:
    return await value


class _Current:
    """The compute running now, for the cancel signal's handler."""

    ctx: SenseContext | None = None
    task: asyncio.Task[Any] | None = None


_CURRENT = _Current()


def _on_cancel(signum: int, frame: Any) -> None:
    ctx, task = _CURRENT.ctx, _CURRENT.task
    if ctx is not None:
        ctx.cancel_event.set()
    if task is not None:
        _LOOP.call_soon_threadsafe(task.cancel)


def load_sense(name: str, path: str, workspace: Path, options: dict[str, Any]) -> LoadedSense:
    spec = importlib.util.spec_from_file_location(f"nerve_sense_{name.replace('-', '_')}", path)
    if spec is None or spec.loader is None:
        raise NerveError(f"{path}: cannot be imported as a sense module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return LoadedSense(name, module, SenseContext(name, workspace, options))


def _observation_json(obs: Observation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "source": obs.source,
        "trust": int(obs.trust),
        "line": check_text("line", obs.line),
        "valid_time_ns": check_valid_time(obs.valid_time_ns),
        "subject": obs.subject if obs.subject is None else check_text("subject", obs.subject),
    }
    if isinstance(obs.payload, bytes | bytearray):
        out["payload_b64"] = base64.b64encode(bytes(obs.payload)).decode()
    else:
        out["payload"] = (
            json.loads(canonical_json(obs.payload, field="payload"))
            if obs.payload is not None
            else None
        )
    return out


def _workflow_json(raw: Any) -> Any:
    if raw is None or raw == "":
        return None
    try:
        return WorkflowTrigger.parse(raw).to_json()
    except NerveError as exc:
        return {"invalid": str(exc), "raw": repr(raw)[:200]}


def _value_json(value: Any) -> Any:
    # It is stored inside the signal's payload, so one level less than a payload may nest.
    return json.loads(canonical_json(value, field="value", limit=MAX_NESTING - 1))


def compute(sense: LoadedSense, seq: int, state: Any) -> dict[str, Any]:
    started_ns = time.monotonic_ns()  # CLOCK_MONOTONIC: comparable with the kernel's loop time
    started = time.perf_counter()
    try:
        returned = sense.run(state)
        if isinstance(returned, Skip):
            return _skipped(seq, returned.reason, started, started_ns)
        result = normalise_result(returned, state)
    except asyncio.CancelledError:
        return _failure(seq, "cancelled", "compute cancelled past its timeout")
    except Exception as exc:
        return _failure(seq, "exception", f"{type(exc).__name__}: {exc}", traceback.format_exc())
    try:
        new_state = canonical_json(result.state, field="state", limit=STATE_NESTING).decode()
    except NerveError as exc:
        return _failure(seq, "unserialisable", f"state cannot be stored: {exc}")
    try:
        observations = [_observation_json(o) for o in result.observations]
    except NerveError as exc:
        return _failure(seq, "unserialisable", f"observation cannot be stored: {exc}")
    try:
        value = None if result.value is None else _value_json(result.value)
    except NerveError as exc:
        return _failure(seq, "unserialisable", f"returned value cannot be stored: {exc}")
    workflow = _workflow_json(result.workflow)
    launches = workflow is not None and "invalid" not in workflow
    return {
        "op": "result",
        "seq": seq,
        "ok": True,
        "state_jcs": new_state,  # canonical JSON text: the kernel stores it as it is
        "observations": observations,
        "workflow": workflow,
        "signal": (not launches) if result.signal is None else result.signal,
        "value": value,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        "started_ns": started_ns,
    }


def _skipped(seq: int, reason: str, started: float, started_ns: int) -> dict[str, Any]:
    return {
        "op": "result",
        "seq": seq,
        "ok": True,
        "skip": reason,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        "started_ns": started_ns,
    }


def _failure(seq: int, kind: str, message: str, trace: str = "") -> dict[str, Any]:
    return {
        "op": "result",
        "seq": seq,
        "ok": False,
        "error_kind": kind,
        "error": message,
        "traceback": trace[-4000:],
    }


def _load_all(msg: dict[str, Any], senses: dict[str, LoadedSense]) -> dict[str, Any]:
    workspace = Path(msg["workspace"])
    loaded: dict[str, Any] = {}
    for name, spec in msg["senses"].items():
        try:
            senses[name] = load_sense(name, spec["path"], workspace, spec.get("options") or {})
            sense = senses[name]
            loaded[name] = {
                "ok": True,
                "initial_state": sense.initial_state,
                "state_records": sense.state_records,
            }
        except BaseException as exc:  # a broken module must not take the worker down
            loaded[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"op": "ready", "pid": os.getpid(), "loaded": loaded}


class LineReader:
    """Lines from a file descriptor, knowing whether another one is already waiting."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = b""

    def readline(self) -> bytes:
        while b"\n" not in self._buf:
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                line, self._buf = self._buf, b""
                return line
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line + b"\n"

    def more(self) -> bool:
        if b"\n" in self._buf:
            return True
        ready, _, _ = select.select([self.fd], [], [], 0)
        return bool(ready)


def _handle(msg: dict[str, Any], senses: dict[str, LoadedSense]) -> dict[str, Any] | None:
    if msg["op"] == "load":
        return _load_all(msg, senses)
    if msg["op"] == "compute":
        sense = senses.get(msg["sense"])
        if sense is None:
            return _failure(msg["seq"], "load", f"sense {msg['sense']!r} is not loaded")
        return compute(sense, msg["seq"], msg["state"])
    return None


def serve(inp: LineReader, out: TextIO) -> None:
    senses: dict[str, LoadedSense] = {}
    while line := inp.readline():
        reply = _handle(json.loads(line), senses)
        if reply is not None:
            out.write(json.dumps(reply, separators=(",", ":")) + "\n")
        if not inp.more():
            out.flush()  # once per batch of requests, not after every reply


def main() -> None:
    detach()  # the kernel stops its workers: a Ctrl+C must not interrupt a compute
    adopt_orphans()
    signal.signal(CANCEL_SIGNAL, _on_cancel)
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a sense's print() goes to the daemon log, not into the protocol
    sys.stdout = sys.stderr
    serve(LineReader(sys.stdin.fileno()), protocol)


if __name__ == "__main__":
    main()
