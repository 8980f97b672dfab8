"""Talking to a workspace's daemon: where it says it runs, whether it answers, one request.

The client half of the daemon, below everything that talks to one (the server half,
``nerve.runtime.daemon``, starts and stops it). :func:`route` is the one place the rule
"through the daemon when one runs, else straight to the log" is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from nerve.errors import ConfigError, DaemonError, NerveError, UsageError
from nerve.workspace import WorkspaceDir

T = TypeVar("T")
Need = Literal["either", "daemon", "log"]

__all__ = ["Daemon", "call", "pid_path", "read_pid", "route", "run_info", "running"]


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


def call(ws: WorkspaceDir, request: dict[str, Any], *, timeout: float = 60) -> dict[str, Any]:
    """One request to the running daemon; a refusal becomes the error the daemon raised
    (``EventError``, ``LogError``, ...), an absent daemon a ``DaemonError``."""
    from nerve.runtime import ipc

    reply = ipc.request(socket_path(ws), request, timeout=timeout)
    if not reply.get("ok"):
        raise ipc.reply_error(reply)
    return reply


class Daemon:
    """The running daemon of one workspace, as :func:`route` hands it to a caller."""

    def __init__(self, ws: WorkspaceDir) -> None:
        self.ws = ws

    def call(self, request: dict[str, Any], *, timeout: float = 60) -> dict[str, Any]:
        return call(self.ws, request, timeout=timeout)


def not_running() -> DaemonError:
    return DaemonError(
        "the daemon is not running", hint="start it with `nerve start` or `nerve dev`"
    )


def holds_log() -> UsageError:
    return UsageError("a daemon holds this log", hint="`nerve stop` first")


def route(
    ws: WorkspaceDir,
    *,
    daemon: Callable[[Daemon], T] | None = None,
    log: Callable[[], T] | None = None,
    absent: Callable[[], NerveError] = not_running,
    busy: Callable[[], NerveError] = holds_log,
) -> T:
    """Do an operation through the running daemon (``daemon``), else on the log itself
    (``log``). An operation with only one half fails plainly when it cannot run: without
    ``log``, ``absent()`` is raised when no daemon runs; without ``daemon``, ``busy()`` when
    one does (the daemon is the log's single writer)."""
    if running(ws):
        if daemon is None:
            raise busy()
        return daemon(Daemon(ws))
    if log is None:
        raise absent()
    return log()
