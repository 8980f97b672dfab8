"""The log as a DuckDB file that plain DuckDB opens, with no nerve installed.

``export_duckdb`` seals the unsealed tail first (through the daemon when one runs), so the
file covers every event stored up to that moment, then writes:

- ``events``: a view with the columns of nerve's own (``source_name``, ``trust_name``, ``ts``,
  ``data``, ...) over the sealed segment files, named by absolute path: no data is copied.
- every projection (bundled, then the workspace's) as a view over ``events``;
- ``nerve_settings`` (what projections read: ``attention_window``), ``nerve_export`` (one row:
  what was exported, from which log, at which manifest head) and ``nerve_segments`` (the
  files the views read).

The views read the segment files in place, so they go stale: events stored later are not
in them, and once ``nerve compact`` has replaced a segment and deleted its file, DuckDB
fails with ``No files found that match the pattern "…/<hash>.parquet"`` until the file is
exported again. ``copy=True`` copies the rows into the file instead (table ``log_rows``), so
it stands alone, at the cost of its size. DuckDB 1.3 or newer opens the file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from nerve import fsio
from nerve.errors import LogError, UsageError
from nerve.log.codec import EMPTY
from nerve.log.reader import Snapshot, snapshot
from nerve.logops import seal
from nerve.query import (
    COMPUTED_CID,
    Projection,
    define_views,
    load_projections,
    parquet_sql,
    register_blake3,
)
from nerve.version import __version__
from nerve.workspace import WorkspaceDir

_FORCE_HINT = "--force replaces it"
# The oldest DuckDB that opens the file: nerve's own floor, which the projections' SQL needs
# (lambda syntax). A newer DuckDB would otherwise write a format older ones cannot read.
READABLE_BY = "v1.3.0"


@dataclass(frozen=True)
class Export:
    """What ``export_duckdb`` wrote: ``unsealed`` events arrived after its seal (not in it)."""

    path: Path
    events: int
    segments: int
    views: list[str]
    sealed: int
    unsealed: int
    copied: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "events": self.events,
            "segments": self.segments,
            "views": self.views,
            "sealed": self.sealed,
            "unsealed": self.unsealed,
            "copied": self.copied,
        }


def export_duckdb(
    ws: WorkspaceDir,
    path: Path | str,
    *,
    force: bool = False,
    copy: bool = False,
    plaintext: bool = False,
) -> Export:
    """Seal the tail, then write the DuckDB file at ``path`` (see the module docstring).

    The file appears whole or not at all (written under a temp name beside it, then
    renamed), owner-only; an existing file is replaced only with ``force``. An encrypted
    workspace exports only a decrypted copy asked for as such (``copy`` and ``plaintext``),
    and never into its own ``data/``.
    """
    target = check_target(Path(path), force=force)
    _check_encrypted(ws, target, copy=copy, plaintext=plaintext)
    projections, settings = load_projections(ws.projection_dirs()), ws.settings()
    info = seal(ws)
    snap = snapshot(ws.log_root)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}.", dir=target.parent) as tmp:
        staged = Path(tmp) / target.name
        try:
            views = _build(staged, ws, snap, projections, settings, copy=copy)
        except duckdb.Error as exc:  # a full disk shows as a failed transaction or I/O error
            raise LogError(
                f"{target}: cannot write the export: {str(exc).splitlines()[0]}; "
                "nothing was written",
                hint="free space in that folder, or export to another disk",
            ) from None
        os.chmod(staged, fsio.FILE_MODE)
        _place(staged, target, force=force)
    fsio.fsync_dir(target.parent)
    return Export(
        target,
        events=sum(s.rows for s in snap.segments),
        segments=len(snap.segments),
        views=views,
        sealed=int(info["rows"]) if info else 0,
        unsealed=int(snap.tail.num_rows),
        copied=copy,
    )


def _check_encrypted(ws: WorkspaceDir, target: Path, *, copy: bool, plaintext: bool) -> None:
    from nerve.log.crypt import is_encrypted

    if not is_encrypted(ws.log_root):
        return
    if not (copy and plaintext):
        raise UsageError(
            f"{ws.root} is encrypted: plain DuckDB cannot read its segments, and an export "
            "would hold the events decrypted",
            hint="nerve export --duckdb FILE --copy --plaintext writes a decrypted copy "
            "(keep FILE somewhere safe)",
        )
    if target.resolve().is_relative_to(ws.data.resolve()):
        raise UsageError(f"{target}: a decrypted export may not go under {ws.data}")


def _build(
    staged: Path,
    ws: WorkspaceDir,
    snap: Snapshot,
    projections: list[Projection],
    settings: dict[str, int],
    *,
    copy: bool,
) -> list[str]:
    conn = duckdb.connect(str(staged), config={"storage_compatibility_version": READABLE_BY})
    try:
        views = _write(conn, snap, projections, settings, copy=copy)
        _describe(conn, ws, snap, copy=copy)
    finally:
        conn.close()
    return views


def check_target(path: Path, *, force: bool) -> Path:
    """``path`` made absolute, if a file may be written there; else a one-line UsageError."""
    target = Path(os.path.abspath(path.expanduser()))
    if not target.parent.is_dir():
        what = "is not a folder" if target.parent.exists() else "does not exist"
        raise UsageError(
            f"{path}: the folder {target.parent} {what}",
            hint="create it first, or name a file in an existing folder",
        )
    if target.is_dir():
        raise UsageError(f"{path}: is a folder; name the database file to write")
    if (target.exists() or target.is_symlink()) and not force:
        raise UsageError(f"{path}: already exists; not overwriting it", hint=_FORCE_HINT)
    return target


def _write(
    conn: duckdb.DuckDBPyConnection,
    snap: Snapshot,
    projections: list[Projection],
    settings: dict[str, int],
    *,
    copy: bool,
) -> list[str]:
    files = _files(snap)
    if files and not copy:
        source = parquet_sql(files)
    else:  # the rows themselves: asked for, or no segment to name (an empty typed table)
        if files:  # with every payload_cid: a segment stores it for erased rows alone
            register_blake3(conn)
            register_encrypted(conn, snap)
            conn.execute(
                f"CREATE TABLE log_rows AS SELECT * REPLACE ({COMPUTED_CID} AS payload_cid) "
                f"FROM {parquet_sql(files)}"
            )
        else:
            conn.register("_empty", EMPTY)
            conn.execute("CREATE TABLE log_rows AS SELECT * FROM _empty")
            conn.unregister("_empty")
        source = "log_rows"
    return define_views(conn, source, projections, settings, temp=False)


def register_encrypted(conn: duckdb.DuckDBPyConnection, snap: Snapshot) -> None:
    """An encrypted log's segments are read through :mod:`nerve.encfs` (``--plaintext``)."""
    from nerve.log.crypt import is_encrypted

    if is_encrypted(snap.paths.root):
        from nerve.encfs import register

        register(conn)


def _files(snap: Snapshot) -> list[Path]:
    return [f.absolute() for f in snap.files]


def _describe(
    conn: duckdb.DuckDBPyConnection, ws: WorkspaceDir, snap: Snapshot, *, copy: bool
) -> None:
    """The ``nerve_export`` and ``nerve_segments`` tables: what the file holds, and from where."""
    conn.execute(
        "CREATE TABLE nerve_export (workspace VARCHAR, log VARCHAR, manifest_head VARCHAR, "
        "events BIGINT, segments INTEGER, newest_physical_ns BIGINT, newest_logical BIGINT, "
        "copied BOOLEAN, nerve_version VARCHAR)"
    )
    newest = snap.segments[-1].max_hlc if snap.segments else (0, 0)
    conn.execute(
        "INSERT INTO nerve_export VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            str(ws.root),
            str(ws.log_root.absolute()),
            snap.head,
            sum(s.rows for s in snap.segments),
            len(snap.segments),
            newest[0],
            newest[1],
            copy,
            __version__,
        ],
    )
    conn.execute(
        "CREATE TABLE nerve_segments (name VARCHAR, path VARCHAR, events BIGINT, "
        "min_physical_ns BIGINT, min_logical BIGINT, max_physical_ns BIGINT, max_logical BIGINT)"
    )
    rows = [
        [s.name, str(f), s.rows, *s.min_hlc, *s.max_hlc]
        for s, f in zip(snap.segments, _files(snap), strict=True)
    ]
    if rows:
        conn.executemany("INSERT INTO nerve_segments VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def _place(staged: Path, target: Path, *, force: bool) -> None:
    """Rename into place; without ``force``, never over a file that appeared meanwhile."""
    if force:
        # A write-ahead file left by a session on the replaced database would be replayed
        # into the new one.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{target}.wal")
        os.replace(staged, target)
        return
    try:
        os.link(staged, target)  # fails if the name is taken, unlike a rename
    except FileExistsError:
        raise UsageError(
            f"{target}: already exists; not overwriting it", hint=_FORCE_HINT
        ) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP) or target.exists():
            raise
        os.replace(staged, target)  # a file system without hard links
