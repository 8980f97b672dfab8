"""The daemon's Unix socket: newline-delimited JSON, owner-only, one reply per request.

A request is a JSON object with a ``type``; a reply is ``{"ok": true, ...}`` or
``{"ok": false, "error": "..."}``. Junk, oversized or half-written requests get an error
reply; none of them can take the daemon down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from nerve.errors import DaemonError
from nerve.fsio import is_socket

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
DEFAULT_MAX_BYTES = 1 << 20


def encode(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def parse_request(line: bytes) -> dict[str, Any]:
    """Decode one request line; raise ValueError with a message for the client."""
    try:
        msg = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"request is not valid JSON: {exc}") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ValueError('request must be a JSON object with a string "type"')
    return msg


class IpcServer:
    def __init__(self, path: Path, handler: Handler, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.handler = handler
        self.max_bytes = max_bytes
        self._server: asyncio.Server | None = None
        self.requests = 0
        self._inode = -1

    async def start(self) -> None:
        _clear_stale(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(
                self._client, path=str(self.path), limit=self.max_bytes + 1
            )
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self._inode = os.lstat(self.path).st_ino

    async def close(self) -> None:
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
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            ended = await _discard_line(reader)
            too_big = f"request larger than {self.max_bytes} bytes"
            await _reply(writer, {"ok": False, "error": too_big})
            return ended
        except asyncio.IncompleteReadError as exc:
            if exc.partial.strip():
                await _reply(
                    writer,
                    {"ok": False, "error": "incomplete request: no newline before end of input"},
                )
            return False
        if not line.strip():
            return True
        self.requests += 1
        await _reply(writer, await self._dispatch(line))
        return True

    async def _dispatch(self, line: bytes) -> dict[str, Any]:
        try:
            request = parse_request(line)
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        try:
            return await self.handler(request)
        except Exception as exc:  # a handler bug becomes an error reply, not a dead daemon
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


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


def ping(path: Path) -> bool:
    try:
        request(path, {"type": "status"}, timeout=2)
        return True
    except DaemonError:
        return False


def request(path: Path, msg: dict[str, Any], *, timeout: float = 30) -> dict[str, Any]:
    """Send one request and return the reply; raise DaemonError if nobody answers."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
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
