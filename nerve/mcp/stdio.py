"""``nerve mcp`` on stdin/stdout, strict about JSON-RPC 2.0 before the SDK sees a line.

The SDK drops a line it cannot read without a word, so a client waits forever. Here every
line is checked first (:class:`StrictLines`) and answered when it is not a message:

- not JSON (junk, too deeply nested, not UTF-8 text): ``-32700`` Parse error, ``id: null``;
- JSON but not a request, notification or response (a batch array, no ``"jsonrpc": "2.0"``,
  no ``method``): ``-32600`` Invalid Request, with the request's id when it has one;
- a lone surrogate escape (``"\\ud800"``) in the params: ``-32602`` Invalid params; any
  other request the SDK's schema refuses: ``-32600``; both with the request's id, and a
  ``tools/call`` refused so is recorded as an ``agent.access`` refusal, since it was a call
  all the same.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from nerve.mcp.access import Access
from nerve.mcp.recorder import Middleware, stdio_session

__all__ = ["StrictLines", "serve"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
_INFO = ("name", "version")
_MAX_LINE = 64 << 20  # a message larger than this is refused unread


class StrictLines:
    """The lines of ``source`` that are JSON-RPC messages; the others answered on the
    write stream given to :meth:`attach` (and a refused ``tools/call`` passed to
    ``record``)."""

    def __init__(
        self, source: AsyncIterator[str], record: Callable[[Access], Any] | None = None
    ) -> None:
        self.source = source
        self.record = record
        self.client = ("unknown", "")
        self._write: Any = None
        self._attached = anyio.Event()

    def attach(self, write: Any) -> None:
        self._write = write
        self._attached.set()

    async def reply(self, request_id: Any, code: int, message: str) -> None:
        await self._attached.wait()
        error = types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
        )
        await self._write.send(SessionMessage(error))

    def __aiter__(self) -> StrictLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self.source.__anext__()
            if line.strip() and await self._fit(line):
                return line

    async def _fit(self, line: str) -> bool:
        """Whether ``line`` goes on to the SDK; if not, it has been answered."""
        message, problem = _parsed(line)
        if problem is not None:
            await self.reply(None, PARSE_ERROR, f"Parse error: {problem}")
            return False
        request_id = _id_of(message)
        wrong = _not_a_message(message)
        if wrong is not None:
            await self.reply(request_id, INVALID_REQUEST, f"Invalid Request: {wrong}")
            return False
        self._note_client(message)
        if _lone_surrogate(message.get("params")):
            why = "params: a string holds a lone surrogate escape (such as \\ud800): not Unicode"
            await self._refuse(message, request_id, why, INVALID_PARAMS)
            return False
        try:
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception as exc:  # the SDK would drop it without a word
            await self._refuse(message, request_id, _first_error(exc))
            return False
        return True

    async def _refuse(
        self, message: dict[str, Any], request_id: Any, why: str, code: int = INVALID_REQUEST
    ) -> None:
        if "id" not in message:
            return  # a notification gets no answer, even an error (JSON-RPC 2.0 §4.1)
        what = "Invalid params" if code == INVALID_PARAMS else "Invalid Request"
        await self.reply(request_id, code, f"{what}: {why}")
        params = message.get("params")
        if message.get("method") == "tools/call" and isinstance(params, dict) and self.record:
            access = Access(
                client=self.client[0],
                version=self.client[1],
                transport="stdio",
                session=stdio_session(),
                tool=str(params.get("name")),
                arguments=params.get("arguments"),
                outcome="refused",
                reason=f"InvalidRequest: {why}",
            )
            await self.record(access)

    def _note_client(self, message: dict[str, Any]) -> None:
        if message.get("method") != "initialize":
            return
        params = message.get("params")
        info = params.get("clientInfo") if isinstance(params, dict) else None
        if isinstance(info, dict):
            name, version = (" ".join(str(info.get(k) or "").split())[:64] for k in _INFO)
            self.client = (name or "unknown", version)


def _parsed(line: str) -> tuple[Any, str | None]:
    if len(line) > _MAX_LINE:
        return None, f"a message of {len(line):,} characters; at most {_MAX_LINE:,} are read"
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8, kept as surrogates when read
        return None, "the line is not UTF-8 text"
    try:
        return json.loads(line), None
    except RecursionError:
        return None, "the JSON is nested too deeply to read"
    except ValueError as exc:
        return None, f"not JSON ({exc})"


def _lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(v) for v in value)
    return False


def _id_of(message: Any) -> Any:
    if not isinstance(message, dict):
        return None
    value = message.get("id")
    valid = isinstance(value, str | int) and not isinstance(value, bool)
    return value if valid else None


def _not_a_message(message: Any) -> str | None:
    """What makes ``message`` no JSON-RPC 2.0 message, or None."""
    if isinstance(message, list):
        return "a batch (an array); send one message per line"
    if not isinstance(message, dict):
        return f"a JSON {type(message).__name__}, not an object"
    if message.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0" member'
    if "id" in message and _id_of(message) is None:
        return '"id" must be a string or an integer'
    if "method" in message:
        return None if isinstance(message["method"], str) else '"method" is not a string'
    if "result" in message or "error" in message:
        return None  # a response to one of our requests
    return 'no "method" member'


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        for detail in errors(include_url=False, include_input=False):
            where = ".".join(str(p) for p in detail.get("loc", ()) if not isinstance(p, int))
            return f"{where}: {detail.get('msg')}" if where else str(detail.get("msg"))
    return type(exc).__name__


def serve(server: MCPServer, middleware: Middleware | None) -> None:
    """Serve ``server`` on stdin/stdout until the client closes stdin."""
    anyio.run(_serve, server, middleware)


async def _serve(server: MCPServer, middleware: Middleware | None) -> None:
    # Read the wire from a private copy of fd 0; fd 0 itself reads nothing, so a child of
    # a tool cannot swallow a message.
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    source = anyio.wrap_file(os.fdopen(wire, "r", encoding="utf-8", errors="surrogateescape"))
    record = None
    if middleware is not None:
        recorder = middleware.recorder

        async def record(access: Access) -> None:
            await anyio.to_thread.run_sync(recorder.record, access)

    lines = StrictLines(source.__aiter__(), record)
    async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        lines.attach(write)
        lowlevel = server._lowlevel_server
        await lowlevel.run(read, write, lowlevel.create_initialization_options())
