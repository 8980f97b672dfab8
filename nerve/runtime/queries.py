"""DuckDB for the daemon, in a child process started on the first query.

The daemon rebuilds its state from projections at start (sense states, the pause record,
attention, workflow runs) and reads them again now and then; DuckDB costs a process some
50 MiB once loaded, and a library cannot be unloaded. So the kernel never imports it: its
queries go to a child process (``python -m nerve.runtime.queries``) that opens the
connections, runs each statement and sends back its rows; the child exits after
``IDLE_S`` without a query and the next query starts a new one. A connection sees the log
as of when it was opened, as one opened in-process would.

Frames on the pipes are pickles: the child is this program, started by the kernel.
"""

from __future__ import annotations

import contextlib
import itertools
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from nerve.errors import NerveError

IDLE_S = 30.0
KEPT = 8  # connections the child keeps open (callers do not close theirs)
_LEN = struct.Struct("<I")


def _send(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LEN.pack(len(data)) + data)
    stream.flush()


def _recv(stream: IO[bytes]) -> Any:
    head = stream.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError("the query process closed its pipe")
    (size,) = _LEN.unpack(head)
    return pickle.loads(stream.read(size))


class QueryError(NerveError):
    """A statement the query process refused (its DuckDB error, by name and message)."""


class Rows:
    """A statement's result, fetched whole: what callers use of a DuckDB result."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows
        self._next = 0

    def fetchall(self) -> list[tuple[Any, ...]]:
        rest, self._next = self._rows[self._next :], len(self._rows)
        return rest

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]


class RemoteConnection:
    """One DuckDB connection in the query process; ``execute`` as DuckDB's."""

    def __init__(self, child: QueryChild, ident: int) -> None:
        self.child = child
        self.ident = ident

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Rows:
        return Rows(self.child.call(("execute", self.ident, sql, list(params or []))))


class QueryChild:
    """The query process: started on demand, stopped after ``idle_s`` without a query."""

    def __init__(self, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self.started = 0  # processes started so far
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._ids = itertools.count(1)
        self._views: dict[tuple[str, tuple[int, ...]], tuple[list[str], dict[str, int]]] = {}

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def connect(self, workspace: Path, *, projections: bool = True) -> RemoteConnection:
        """A connection over the workspace's log as it is now: ``WorkspaceDir.connect()``'s
        (``events`` and every projection), or with ``projections=False`` the ``events``
        view alone."""
        ident = next(self._ids)
        dirs, settings = self._views_of(Path(workspace)) if projections else ([], None)
        self.call(("open", ident, str(workspace), projections, dirs, settings))
        return RemoteConnection(self, ident)

    def _views_of(self, root: Path) -> tuple[list[str], dict[str, int]]:
        """The projection folders and settings of the workspace at ``root``, read here: the
        child then never loads the configuration parser (a third of its start-up). Kept
        while nerve.yaml is unchanged; a bad edit keeps the ones read last, as the daemon
        keeps the configuration it runs."""
        from nerve.workspace import WorkspaceDir

        ws = WorkspaceDir.at(root)
        try:
            stat = ws.config_path.stat()
            stamp: tuple[int, ...] = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except FileNotFoundError:
            stamp = ()
        key = (str(ws.root), stamp)
        if key not in self._views:
            try:
                settings = ws.settings()
            except NerveError as exc:  # as the child would have answered it
                kept = [v for (r, _), v in self._views.items() if r == str(ws.root)]
                if kept:
                    return kept[0]
                raise QueryError(f"query failed: {type(exc).__name__}: {exc}") from None
            self._views = {key: ([str(d) for d in ws.projection_dirs()], settings)}
        return self._views[key]

    def call(self, request: tuple[Any, ...]) -> Any:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            try:
                reply = self._exchange(request)
            finally:
                self._timer = threading.Timer(self.idle_s, self._idle)
                self._timer.daemon = True
                self._timer.start()
        if reply[0] == "error":
            raise QueryError(f"query failed: {reply[1]}: {reply[2]}")
        return reply[1]

    def _exchange(self, request: tuple[Any, ...]) -> Any:
        if self._proc is None or self._proc.poll() is not None:
            if request[0] != "open":
                raise QueryError("the query process exited; open a new connection")
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "nerve.runtime.queries"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,  # Ctrl+C goes to the kernel, which stops it
            )
            self.started += 1
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            _send(self._proc.stdin, request)
            return _recv(self._proc.stdout)
        except (OSError, EOFError) as exc:
            self._stop_locked()
            raise QueryError(f"the query process failed: {exc}") from None

    def _idle(self) -> None:
        with self._lock:
            if self._timer is not None and self._timer is threading.current_thread():
                self._timer = None
                self._stop_locked()

    def close(self) -> None:
        """Stop the process (idle, or the daemon is stopping); the next query restarts it."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._stop_locked()

    def _stop_locked(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()  # the child's read ends: it exits
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _open(root: str, projections: bool, dirs: list[str], settings: dict[str, int] | None) -> Any:
    """What ``WorkspaceDir.connect()`` opens, with the projections and settings the kernel
    read from nerve.yaml (or the ``events`` view alone)."""
    from nerve import fsio
    from nerve.query import connect
    from nerve.workspace import WorkspaceDir

    ws = WorkspaceDir.at(root)
    if not projections:
        return connect(ws.log_root)
    fsio.private_dir(ws.data, allow_link=True)
    fsio.private_dir(ws.log_root)
    return connect(ws.log_root, [Path(d) for d in dirs], settings)


def _serve(inp: IO[bytes], out: IO[bytes]) -> None:
    conns: dict[int, Any] = {}
    while True:
        try:
            request = _recv(inp)
        except EOFError:
            return
        try:
            if request[0] == "open":
                _, ident, root, projections, dirs, settings = request
                conns[ident] = _open(root, projections, dirs, settings)
                for old in sorted(conns)[:-KEPT]:
                    conns.pop(old).close()
                reply: tuple[Any, ...] = ("ok", None)
            else:
                _, ident, sql, params = request
                reply = ("ok", conns[ident].execute(sql, params).fetchall())
        except Exception as exc:  # every failure goes back to the caller, named
            reply = ("error", type(exc).__name__, str(exc))
        _send(out, reply)


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the kernel stops it
    _serve(sys.stdin.buffer, sys.stdout.buffer)
