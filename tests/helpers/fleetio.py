"""The durable calls of a ship that do not go through ``os``, made failable like those that do.

:mod:`tests.helpers.syscalls` sees every ``os`` call nerve makes (the state files under
``data/fleet``, the segment and head files it puts in a local warehouse). Two more writers
work below Python: pyiceberg writes the table's metadata, manifests and manifest lists
through pyarrow's file system, and the SQLite catalog commits through SQLAlchemy. Here each
of their writes is a site of the same :class:`~tests.helpers.syscalls.Plan`:

- ``iceberg <file kind> create|write|close`` (a file's first write; ``close`` is where
  the bytes reach the disk) and ``iceberg delete``;
- ``sqlite <INSERT|UPDATE|DELETE> <table>`` and ``sqlite commit``.

A failed SQLite call raises what SQLAlchemy raises when the database file cannot be written
(``disk I/O error``, ``database or disk is full``), before the statement or the commit
runs. A failed commit leaves the transaction open and its write lock held: SQLite's own
documentation says such a transaction "may or may not" be rolled back, and a writer must
cope with the harder case.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

from tests.helpers import syscalls

_SQLITE_TEXT = {errno.ENOSPC: "database or disk is full", errno.EIO: "disk I/O error"}


def _kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".metadata.json"):
        return "metadata"
    if name.startswith("snap-"):
        return "manifest-list"
    if name.endswith(".avro"):
        return "manifest"
    return name.rsplit(".", 1)[-1]


def _io_error(plan: syscalls.Plan, site: str) -> OSError:
    return OSError(plan.err, f"{os.strerror(plan.err)} (injected at {site})")


class _Stream:
    """A pyarrow output stream whose first write and close are sites (Avro writes a file
    in many small pieces; a later piece failing ends the file as the first one does)."""

    def __init__(self, plan: syscalls.Plan, kind: str, real: Any) -> None:
        self.plan, self.kind, self.real = plan, kind, real
        self.written = False

    def write(self, data: bytes) -> int:
        site = f"iceberg {self.kind} write"
        if not self.written and self.plan.hit(site):
            raise _io_error(self.plan, site)
        self.written = True
        return int(self.real.write(data))

    def close(self) -> None:
        site = f"iceberg {self.kind} close"
        failed = self.plan.hit(site)
        self.real.close()
        if failed:  # the bytes may be anywhere: as after a failed fsync
            raise _io_error(self.plan, site)

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _sqlite_error(plan: syscalls.Plan, statement: str) -> Exception:
    from sqlalchemy.exc import OperationalError

    text = _SQLITE_TEXT.get(plan.err, "disk I/O error")
    return OperationalError(statement, None, sqlite3.OperationalError(text))


@contextlib.contextmanager
def patched(plan: syscalls.Plan) -> Iterator[syscalls.Plan]:
    """``os`` (as :func:`tests.helpers.syscalls.patched`), pyiceberg's files and SQLite."""
    from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    real_create, real_delete = PyArrowFile.create, PyArrowFileIO.delete

    def create(self: Any, overwrite: bool = False) -> Any:
        site = f"iceberg {_kind(self.location)} create"
        if plan.hit(site):
            raise _io_error(plan, site)
        return _Stream(plan, _kind(self.location), real_create(self, overwrite))

    def delete(self: Any, location: Any) -> None:
        if plan.hit("iceberg delete"):
            raise _io_error(plan, "iceberg delete")
        real_delete(self, location)

    def execute(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        words = statement.split()
        verb = words[0].upper() if words else ""
        if verb not in ("INSERT", "UPDATE", "DELETE"):
            return
        table = (words[2] if verb in ("INSERT", "DELETE") else words[1]).strip('"')
        if plan.hit(f"sqlite {verb} {table}"):
            raise _sqlite_error(plan, statement)

    def commit(conn: Any) -> None:
        if plan.hit("sqlite commit"):
            raise _sqlite_error(plan, "COMMIT")

    PyArrowFile.create, PyArrowFileIO.delete = create, delete  # type: ignore[method-assign]
    event.listen(Engine, "before_cursor_execute", execute)
    event.listen(Engine, "commit", commit)
    try:
        with syscalls.patched(plan):
            yield plan
    finally:
        PyArrowFile.create, PyArrowFileIO.delete = real_create, real_delete  # type: ignore[method-assign]
        event.remove(Engine, "before_cursor_execute", execute)
        event.remove(Engine, "commit", commit)


def recording() -> contextlib.AbstractContextManager[syscalls.Plan]:
    return patched(syscalls.Plan())


def failing(
    site: str, nth: int, err: int, *, sticky: bool = False
) -> contextlib.AbstractContextManager[syscalls.Plan]:
    return patched(syscalls.Plan(target=(site, nth), err=err, sticky=sticky))
