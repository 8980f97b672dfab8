"""A hostile local crowd for the HTTP servers: thousands of raw loopback connections that never
finish a request, against a server process held to the default open-file limit (1024)."""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

DEFAULT_FILES = 1024
CROWD = 2_000
PARTIAL = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "  # a header that never ends


def default_file_limit() -> None:
    """For a server subprocess (``preexec_fn``): the usual ``ulimit -n`` of 1024."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft = DEFAULT_FILES if hard == resource.RLIM_INFINITY else min(DEFAULT_FILES, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@contextlib.contextmanager
def room_for(count: int) -> Iterator[None]:
    """This process may hold ``count`` more sockets for a while (its soft limit raised)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 256 if hard == resource.RLIM_INFINITY else min(hard, count + 256)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@contextlib.contextmanager
def crowd(port: int, count: int = CROWD, *, deadline_s: float = 60.0) -> Iterator[int]:
    """``count`` connections to ``127.0.0.1:port`` held open, every third sending a header
    that never ends, the rest nothing; yields how many connected, and closes them all after."""
    held: list[socket.socket] = []
    with room_for(count):
        try:
            end = time.monotonic() + deadline_s
            for i in range(count):
                if time.monotonic() > end:
                    break
                with contextlib.suppress(OSError):
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
                    if i % 3 == 0:
                        held[-1].send(PARTIAL)  # the server may have shed it already
            yield len(held)
        finally:
            for s in held:
                s.close()


def status(url: str, headers: dict[str, str], body: bytes | None = None) -> int:
    """One request's status (an error status too); a failure to connect or answer raises."""
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=4) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def within(seconds: float, attempt: Callable[[], int]) -> int:
    """The first status ``attempt`` gets within ``seconds`` (each try's failure is retried)."""
    end, last = time.monotonic() + seconds, None
    while time.monotonic() < end:
        try:
            return attempt()
        except OSError as exc:
            last = exc
            time.sleep(0.1)
    raise AssertionError(f"no answer within {seconds} s: {last!r}")


def alive(proc: subprocess.Popen[str] | subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None
