"""A workflow worker process: runs one workflow's moderator and roles for the kernel.

The kernel drives every run (it records each step before asking for the next); this process
only calls the author's code. Requests may overlap (one per running run): synchronous roles
run in a thread pool, coroutines on this process's event loop. Protocol: JSON lines; the
kernel writes to our stdin, we answer on the original stdout, which we keep for ourselves
(a role's ``print`` goes to stderr, the daemon log).

    kernel → {"op": "load", "workflow": N, "path": P, "workspace": W}
    worker → {"op": "ready", "pid": N, "ok": true, "definition": {roles, checks, outputs, ...}}
           | {"op": "ready", "pid": N, "ok": false, "error": "..."}      (and the worker exits)
    kernel → {"op": "moderate", "id": K, "context": {"kind": "start", "start": {...}}
                                              | {"kind": "step", "message": {...}},
              "round": R, "max_rounds": M}
    worker → {"op": "reply", "id": K, "ok": true, "next": "<role>" | "__end__"}
    kernel → {"op": "role", "id": K, "role": NAME, "start": {...}, "messages": [...],
              "ctx": {"run", "workflow", "round", "output_dir", "answer"}}
    worker → {"op": "reply", "id": K, "ok": true, "content": "...", "meta": {...}}
           | {"op": "reply", "id": K, "ok": true, "ask": {"question": "...", "options": [...]}}
           | {"op": "reply", "id": K, "ok": false, "error": "...", "traceback": "..."}

The worker exits when its stdin closes. Its environment carries ``NERVE_WORKFLOW=<name>``, so
a command a role starts can tell it runs inside a workflow (``nerve workflow override``
refuses to run there).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import threading
import traceback
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from nerve.errors import NerveError, WorkflowError
from nerve.flow.contract import (
    Answer,
    Message,
    ModeratorContext,
    Question,
    RoleContext,
    RoleResult,
    Start,
    StartFrame,
    Step,
)
from nerve.flow.definition import Definition, load_definition
from nerve.runtime.children import detach

_THREADS = 64
_TRACE_CHARS = 4000


class _Refused(Exception):
    """The author's code returned something outside the contract."""


def _context(raw: Mapping[str, Any]) -> ModeratorContext:
    if raw["kind"] == "start":
        return Start(StartFrame.from_json(raw["start"]))
    return Step(Message.from_json(raw["message"]))


def _answer(raw: Any) -> Answer | None:
    if not raw:
        return None
    return Answer(str(raw["question"]), tuple(raw.get("options") or ()), str(raw["choice"]))


def _role_ctx(raw: Mapping[str, Any], role: str, workspace: Path) -> RoleContext:
    return RoleContext(
        run=str(raw["run"]),
        workflow=str(raw["workflow"]),
        role=role,
        round=int(raw["round"]),
        output_dir=Path(raw["output_dir"]),
        workspace=workspace,
        answer=_answer(raw.get("answer")),
    )


def _json_ready(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False, sort_keys=True))
    except (TypeError, ValueError) as exc:
        raise _Refused(f"{what} is not JSON-serialisable: {exc}") from None


def normalise_role_result(value: Any, role: str) -> dict[str, Any]:
    """A role's return value as a reply: ``content`` + ``meta``, or ``ask``."""
    if isinstance(value, Question) or (isinstance(value, Mapping) and "ask" in value):
        return {"ask": _question(value, role)}
    if isinstance(value, str):
        return {"content": value, "meta": {}}
    if isinstance(value, RoleResult):
        content, meta = value.content, value.meta
    elif isinstance(value, Mapping) and set(value) <= {"content", "meta"} and "content" in value:
        content, meta = value["content"], value.get("meta") or {}
    else:
        raise _Refused(
            f"role {role!r} returned {type(value).__name__}; return RoleResult, "
            "{'content': str, 'meta': dict}, a str, or a Question"
        )
    if not isinstance(content, str):
        raise _Refused(f"role {role!r} returned content of type {type(content).__name__}")
    if not isinstance(meta, Mapping):
        raise _Refused(f"role {role!r} returned meta of type {type(meta).__name__}")
    outputs = meta.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
        raise _Refused(f"role {role!r}: meta['outputs'] must be a list of paths")
    return {"content": content, "meta": _json_ready(dict(meta), f"role {role!r} meta")}


def _question(value: Any, role: str) -> dict[str, Any]:
    raw = value if isinstance(value, Question) else value["ask"]
    if isinstance(raw, Mapping):
        raw = Question(raw.get("question", ""), tuple(raw.get("options") or ()))
    if not isinstance(raw, Question) or not isinstance(raw.question, str) or not raw.question:
        raise _Refused(f"role {role!r} asked without a question text")
    options = list(raw.options)
    if not all(isinstance(o, str) and o for o in options):
        raise _Refused(f"role {role!r}: question options must be non-empty strings")
    return {"question": raw.question, "options": options}


class Worker:
    def __init__(self, out: TextIO, loop: asyncio.AbstractEventLoop) -> None:
        self.out = out
        self.loop = loop
        self.pool = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="role")
        self.definition: Definition | None = None
        self.workspace = Path.cwd()

    def send(self, msg: dict[str, Any]) -> None:
        self.out.write(json.dumps(msg, separators=(",", ":")) + "\n")
        self.out.flush()

    def load(self, msg: Mapping[str, Any]) -> bool:
        self.workspace = Path(msg["workspace"])
        try:
            self.definition = load_definition(str(msg["workflow"]), Path(msg["path"]))
        except NerveError as exc:
            self.send({"op": "ready", "pid": os.getpid(), "ok": False, "error": str(exc)})
            return False
        info = self.definition.summary()
        self.send({"op": "ready", "pid": os.getpid(), "ok": True, "definition": info})
        return True

    async def handle(self, msg: Mapping[str, Any]) -> None:
        try:
            if msg["op"] == "moderate":
                reply = await self.moderate(msg)
            else:
                reply = await self.role(msg)
            self.send({"op": "reply", "id": msg["id"], "ok": True, **reply})
        except _Refused as exc:
            self.send({"op": "reply", "id": msg["id"], "ok": False, "error": str(exc)})
        except Exception as exc:  # the author's code threw: the run fails, the worker lives
            self.send(_failure(msg["id"], exc))

    async def call(self, fn: Any, *args: Any) -> Any:
        if inspect.iscoroutinefunction(fn):
            return await fn(*args)
        out = await self.loop.run_in_executor(self.pool, lambda: fn(*args))
        return await out if inspect.isawaitable(out) else out

    async def moderate(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        assert self.definition is not None
        context = _context(msg["context"])
        nxt = await self.call(
            self.definition.moderator, context, int(msg["round"]), int(msg["max_rounds"])
        )
        if not isinstance(nxt, str):
            raise _Refused(f"moderator returned {type(nxt).__name__}; return a role name or END")
        return {"next": nxt}

    async def role(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        definition = self.definition
        assert definition is not None
        name = str(msg["role"])
        fn = definition.roles.get(name)
        if fn is None:
            raise _Refused(f"unknown role {name!r}")
        args: list[Any] = [
            StartFrame.from_json(msg["start"]),
            [Message.from_json(m) for m in msg["messages"]],
        ]
        if name in definition.takes_ctx:
            args.append(_role_ctx(msg["ctx"], name, self.workspace))
        return normalise_role_result(await self.call(fn, *args), name)


def _failure(request_id: Any, exc: BaseException) -> dict[str, Any]:
    trace = "".join(traceback.format_exception(exc))[-_TRACE_CHARS:]
    return {
        "op": "reply",
        "id": request_id,
        "ok": False,
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": trace,
    }


def _read_requests(inp: TextIO, worker: Worker, done: asyncio.Event) -> None:
    """Runs in a thread: hands each request line to the event loop; sets ``done`` at EOF, and
    when a request fails here (the kernel gone before the load's answer: a broken pipe), so
    the worker never waits on with nobody to stop it."""
    try:
        for line in inp:
            msg = json.loads(line)
            if msg.get("op") == "load":
                loaded = asyncio.run_coroutine_threadsafe(_load(worker, msg), worker.loop).result()
                if not loaded:
                    break
            else:
                worker.loop.call_soon_threadsafe(_spawn, worker, msg)
    finally:
        worker.loop.call_soon_threadsafe(done.set)


async def _load(worker: Worker, msg: Mapping[str, Any]) -> bool:
    return worker.load(msg)


_TASKS: set[asyncio.Task[None]] = set()


def _spawn(worker: Worker, msg: Mapping[str, Any]) -> None:
    task = worker.loop.create_task(worker.handle(msg))
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


async def serve(inp: TextIO, out: TextIO) -> None:
    worker = Worker(out, asyncio.get_running_loop())
    done = asyncio.Event()
    threading.Thread(target=_read_requests, args=(inp, worker, done), daemon=True).start()
    await done.wait()


def main() -> None:
    detach()  # the kernel stops its workers, not Ctrl+C
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a role's print() goes to the daemon log, not into the protocol
    sys.stdout = sys.stderr
    try:
        asyncio.run(serve(sys.stdin, protocol))
    except WorkflowError as exc:
        sys.stderr.write(f"workflow worker: {exc}\n")
    os._exit(0)  # role threads may still run; the kernel has stopped listening


if __name__ == "__main__":
    main()
