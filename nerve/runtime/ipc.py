"""The daemon's Unix socket: newline-delimited JSON, owner-only, one reply per request.

A request is a JSON object with a ``type``; a reply is ``{"ok": true, ...}`` or a refusal::

    {"ok": false, "error": {"type": "EventError", "message": "...",
                            "field": "payload", "hint": "..."}}

``type`` is a class of ``nerve.errors`` (the client raises that class again); ``field`` and
``hint`` are there when known. A failure that is not one of nerve's errors (a bug) is a
``DaemonError`` naming the exception, its traceback in the daemon's log; a disk error is a
``LogError``. Junk, oversized, half-written or too deeply nested requests get a refusal;
none of them can take the daemon down. :func:`reply_error` also reads the older form
``{"ok": false, "error": "text", "error_type": "Name"}``.

A stream request (``follow``, see ``nerve.runtime.followers``) keeps its connection: after
its first reply the server goes on writing lines until either side ends it; the client reads
it with :class:`LineStream`.

A request may nest ``MAX_NESTING`` + 3 levels of arrays/objects (an ``emit`` request wraps
each payload in three: the request, its ``events`` list, the event).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import traceback
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve import errors
from nerve.canonical import loads_bounded
from nerve.commands.daemon import GetStatus
from nerve.errors import DaemonError, EventError, NerveError, UsageError, os_error_text
from nerve.fsio import is_socket
from nerve.runtime.sockaddr import check_length, unix_address

if TYPE_CHECKING:  # the server's half; a client (every CLI command) never loads asyncio
    import asyncio

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
# A request that keeps its connection (``follow``): it writes its own replies, then the
# connection closes.
StreamHandler = Callable[
    [dict[str, Any], "asyncio.StreamReader", "asyncio.StreamWriter"], Awaitable[None]
]
DEFAULT_MAX_BYTES = 1 << 20
REQUEST_ENVELOPE = 3  # request -> "events" list -> event -> payload


def encode(msg: dict[str, Any]) -> bytes:
    text = json.dumps(msg, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate in some text: escape it, stay valid UTF-8
        return json.dumps(msg, separators=(",", ":")).encode() + b"\n"


def parse_request(line: bytes) -> dict[str, Any]:
    """Decode one request line; raise a NerveError whose message is for the client."""
    try:
        msg = loads_bounded(line, field="request", envelope=REQUEST_ENVELOPE)
    except EventError as exc:
        if str(exc).startswith(("request", "events[")):
            raise
        raise EventError(f"request {exc}", field=exc.field, hint=exc.hint) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"request is not valid JSON: {exc}") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise UsageError('request must be a JSON object with a string "type"')
    return msg


# -- refusals --------------------------------------------------------------------------

_KNOWN: dict[str, type[NerveError]] = {
    name: cls
    for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, NerveError)
}


def refusal(
    type_name: str, message: str, *, field: str | None = None, hint: str | None = None
) -> dict[str, Any]:
    """A refused reply: ``{"ok": false, "error": {type, message[, field][, hint]}}``."""
    body: dict[str, Any] = {"type": type_name, "message": message}
    if field is not None:
        body["field"] = field
    if hint is not None:
        body["hint"] = hint
    return {"ok": False, "error": body}


def error_reply(exc: BaseException, *, request_type: str = "?") -> dict[str, Any]:
    """The refusal for an exception raised while serving a request."""
    if isinstance(exc, NerveError):
        known = next(c for c in type(exc).__mro__ if c.__name__ in _KNOWN)
        return refusal(known.__name__, str(exc), field=exc.field, hint=exc.hint)
    if isinstance(exc, OSError):
        return refusal("LogError", os_error_text(exc))
    traceback.print_exception(exc, file=sys.stderr)  # the daemon's log keeps the details
    return refusal(
        "DaemonError",
        f"the daemon failed serving {request_type!r}: {type(exc).__name__}: {exc}",
        hint="this is a bug in nerve; the daemon's log (nerve daemon logs) has the traceback",
    )


def reply_error(reply: dict[str, Any], default: type[NerveError] = DaemonError) -> NerveError:
    """The error a refused reply carries, as the ``nerve.errors`` class it names.

    Reads the structured form and the older plain-string one; an unknown type name becomes
    ``default`` with the name kept in the message.
    """
    raw = reply.get("error")
    if isinstance(raw, dict):
        name, message = str(raw.get("type") or ""), str(raw.get("message") or "")
        field, hint = raw.get("field"), raw.get("hint")
    else:
        name, message = str(reply.get("error_type") or ""), str(raw or "")
        field = hint = None
    message = message or "the daemon refused the request"
    cls = _KNOWN.get(name)
    if cls is None or cls.__init__ is not NerveError.__init__:
        cls = default
        message = f"{name}: {message}" if name and name != default.__name__ else message
    return cls(
        message,
        field=field if isinstance(field, str) else None,
        hint=hint if isinstance(hint, str) else None,
    )


class IpcServer:
    def __init__(
        self,
        path: Path,
        handler: Handler,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        streams: dict[str, StreamHandler] | None = None,
        reshape: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.path = path
        self.handler = handler
        self.reshape = reshape  # applied to every reply (a compatibility listener's dialect)
        self.streams = streams or {}
        self.max_bytes = max_bytes
        self._server: asyncio.Server | None = None
        self.requests = 0
        self._inode = -1

    async def start(self) -> None:
        import asyncio  # the server's only: clients of this module never load it

        check_length(self.path)
        _clear_stale(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._server = await asyncio.start_unix_server(
            self._client, sock=_bound(self.path), limit=self.max_bytes + 1
        )
        os.chmod(self.path, 0o600)
        self._inode = os.lstat(self.path).st_ino

    async def close(self) -> None:
        import asyncio

        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2):
                    await self._server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            # only our own socket: never a file someone put at the path since
            if is_socket(self.path) and os.lstat(self.path).st_ino == self._inode:
                self.path.unlink()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import asyncio

        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection should close."""
        import asyncio

        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            ended = await _discard_line(reader)
            too_big = f"request larger than {self.max_bytes} bytes"
            hint = "send large batches in several requests (nerve emit and import do)"
            await self._send(writer, refusal("UsageError", too_big, hint=hint))
            return ended
        except asyncio.IncompleteReadError as exc:
            if exc.partial.strip():
                message = "incomplete request: no newline before end of input"
                await self._send(writer, refusal("UsageError", message))
            return False
        if not line.strip():
            return True
        self.requests += 1
        try:
            request = parse_request(line)
        except NerveError as exc:
            await self._send(writer, error_reply(exc))
            return True
        stream = self.streams.get(request["type"])
        if stream is not None:
            await self._stream(stream, request, reader, writer)
            return False
        await self._send(writer, await self._dispatch(request))
        return True

    async def _send(self, writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
        await _reply(writer, msg if self.reshape is None else self.reshape(msg))

    async def _dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.handler(request)
        except Exception as exc:  # a handler bug becomes an error reply, not a dead daemon
            return error_reply(exc, request_type=request["type"])

    async def _stream(
        self,
        stream: StreamHandler,
        request: dict[str, Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        import asyncio

        try:
            await stream(request, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            raise
        except Exception as exc:  # a refused stream ends with its refusal
            with contextlib.suppress(ConnectionError):
                await _reply(writer, error_reply(exc, request_type=request["type"]))


async def _discard_line(reader: asyncio.StreamReader, cap: int = 64 << 20) -> bool:
    """Skip the rest of an oversized line so the client can read our reply; True if it ended."""
    dropped = 0
    while dropped < cap:
        chunk = await reader.read(1 << 16)
        if not chunk:
            return False
        dropped += len(chunk)
        if b"\n" in chunk:
            return True  # anything after the newline is lost with the oversized request
    return False


async def _reply(writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
    writer.write(encode(msg))
    await writer.drain()


def _bound(path: Path) -> socket.socket:
    """A stream socket bound at ``path``, owner-only from the start; an existing file there
    is never replaced (``bind`` fails)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        with unix_address(path) as address:
            sock.bind(address)
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old)
    return sock


def _clear_stale(path: Path) -> None:
    """Remove a dead daemon's socket; refuse to touch anything else at the path."""
    kind = is_socket(path)
    if kind is None:
        return
    if not kind:
        raise DaemonError(
            f"{path}: exists and is not a socket; the daemon will not replace it",
            hint="choose another `daemon.socket` in nerve.yaml, or move the file",
        )
    if ping(path):
        raise DaemonError(f"a daemon is already listening on {path}")
    path.unlink()


def ping(path: Path, *, timeout: float = 2) -> bool:
    """Whether a daemon listens on ``path``: it answers ``status``, or it took the request
    and is slow to answer (a loaded machine; it may be warming up). Slow is not absent: a
    caller that took it for absent would reach for the log the daemon holds."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with unix_address(path) as address:
            sock.connect(address)
        sock.sendall(encode(GetStatus().to_json()))
        return bool(sock.recv(1))  # nothing: it closed without answering
    except TimeoutError:
        return True
    except OSError:
        return False
    finally:
        sock.close()


def request(path: Path, msg: dict[str, Any], *, timeout: float = 30) -> dict[str, Any]:
    """Send one request and return the reply; raise DaemonError if nobody answers."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with unix_address(path) as address:
            sock.connect(address)
        sock.sendall(encode(msg))
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    except (FileNotFoundError, ConnectionRefusedError):
        raise DaemonError(
            f"no daemon is listening on {path}", hint="start one with `nerve start`"
        ) from None
    except (TimeoutError, OSError) as exc:
        raise DaemonError(f"daemon on {path} did not answer: {exc}") from None
    finally:
        sock.close()
    try:
        reply: dict[str, Any] = json.loads(data)
    except ValueError:
        raise DaemonError(f"daemon on {path} sent a reply that is not JSON") from None
    return reply


class LineStream:
    """The client side of a stream request: its first reply, then each line that follows
    (a ``follow`` pushes events as the daemon commits them)."""

    def __init__(self, path: Path, msg: dict[str, Any], *, timeout: float = 30) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._partial = b""
        self._ready: list[bytes] = []
        try:
            with unix_address(path) as address:
                self._sock.connect(address)
            self._sock.sendall(encode(msg))
            first = next(self.lines(), [])
        except (FileNotFoundError, ConnectionRefusedError):
            self.close()
            raise DaemonError(f"no daemon is listening on {path}") from None
        except OSError as exc:
            self.close()
            raise DaemonError(f"daemon on {path} did not answer: {exc}") from None
        self._sock.settimeout(None)  # the stream waits as long as the log is quiet
        self._ready = first[1:]  # lines that came with the reply
        try:
            self.reply: dict[str, Any] = json.loads(first[0]) if first else {}
        except ValueError:
            self.close()
            raise DaemonError(f"daemon on {path} sent a reply that is not JSON") from None

    def lines(self) -> Iterator[list[bytes]]:
        """The whole lines each read brings (without newlines); ends when the daemon closes
        the connection."""
        if self._ready:
            ready, self._ready = self._ready, []
            yield ready
        while True:
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                return
            data = self._partial + chunk
            cut = data.rfind(b"\n")
            if cut < 0:
                self._partial = data
                continue
            self._partial = data[cut + 1 :]
            yield data[:cut].split(b"\n")

    def close(self) -> None:
        self._sock.close()
