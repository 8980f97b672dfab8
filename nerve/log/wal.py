"""The write-ahead log: framed, checksummed Arrow batches, one file per generation.

File layout: a 16-byte header (``b"NWAL"``, u32 version, u64 generation), then frames::

    u32 magic 0x4E465231 | u32 body length | u32 crc32(body) | body (Arrow IPC stream)

A torn tail (a prefix of a frame, or zeros, at the end of the newest generation: what a crash
mid-append leaves) is cut off on recovery; it was never acknowledged. Anything else that fails
its checksum is damage: reported by verify, refused by the writer, and moved aside (never
deleted) only by an explicit ``nerve repair``.
"""

from __future__ import annotations

import contextlib
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from nerve import fsio
from nerve.errors import LogCorrupt, LogError
from nerve.log.codec import EMPTY, SCHEMA, SCHEMA_V1, conform

FILE_MAGIC = b"NWAL"
VERSION = 1
FRAME_MAGIC = 0x4E465231
_HEADER = struct.Struct(">4sIQ")
_FRAME = struct.Struct(">III")
MAX_FRAME = 1 << 31


def wal_name(gen: int) -> str:
    return f"{gen:016d}.wal"


def wal_gen(path: Path) -> int | None:
    stem, dot, ext = path.name.partition(".")
    return int(stem) if ext == "wal" and dot and stem.isdigit() else None


def encode_frame(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, SCHEMA) as writer:
        writer.write_table(table)
    body: bytes = sink.getvalue().to_pybytes()
    return _FRAME.pack(FRAME_MAGIC, len(body), zlib.crc32(body)) + body


def _decode_body(body: bytes, path: Path, offset: int) -> pa.Table:
    try:
        table = pa.ipc.open_stream(body).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        raise LogCorrupt(
            f"{path}: frame at byte {offset} has a valid checksum but no Arrow data: {exc}"
        ) from None
    return frame_table(table, path, offset)


def frame_table(table: pa.Table, path: Path, offset: int) -> pa.Table:
    """A decoded frame in today's types; a frame of an unknown schema is corruption."""
    if table.schema.equals(SCHEMA):
        return table
    if table.schema.equals(SCHEMA_V1):
        return conform(table)
    raise LogCorrupt(f"{path}: frame at byte {offset} has an unexpected schema")


@dataclass(frozen=True)
class WalScan:
    """What a WAL file holds: its good frames and what, if anything, follows them.

    After the good prefix a file may hold a **torn** final frame (a prefix of a frame, or
    zeros: what a crash mid-append leaves, never acknowledged) or **damaged** bytes (a
    complete frame that fails its checksum, or junk: stored bytes that changed).
    """

    path: Path
    gen: int
    tables: list[pa.Table]
    good_end: int
    size: int
    bad_offset: int | None  # first bad frame, if any
    damaged: bool = False  # the bytes after the good prefix are not a torn frame
    later_good: bool = False  # good frames follow the bad one (only without ``strict``)

    @property
    def torn(self) -> bool:
        return self.good_end < self.size and not self.damaged

    @property
    def cut_bytes(self) -> int:
        return self.size - self.good_end

    def table(self) -> pa.Table:
        return pa.concat_tables(self.tables) if self.tables else EMPTY


def _frame_at(data: bytes, pos: int) -> tuple[int, int] | None:
    """(body_start, body_end) of a checksummed frame at ``pos``, or None."""
    if pos + _FRAME.size > len(data):
        return None
    magic, length, crc = _FRAME.unpack_from(data, pos)
    start, end = pos + _FRAME.size, pos + _FRAME.size + length
    if magic != FRAME_MAGIC or length > MAX_FRAME or end > len(data):
        return None
    if zlib.crc32(memoryview(data)[start:end]) != crc:
        return None
    return start, end


def _is_torn(data: bytes, pos: int) -> bool:
    """True if the bytes from ``pos`` are what an interrupted append leaves behind."""
    rest = data[pos:]
    if not rest.strip(b"\0"):
        return True  # space the file system extended but never filled
    head = rest[: _FRAME.size]
    if len(head) < _FRAME.size:
        return _FRAME_MAGIC_BYTES.startswith(head[:4])
    magic, length, _ = _FRAME.unpack(head)
    complete = pos + _FRAME.size + int(length) <= len(data)
    return bool(magic == FRAME_MAGIC and length <= MAX_FRAME and not complete)


_FRAME_MAGIC_BYTES = struct.pack(">I", FRAME_MAGIC)


def _later_frame_exists(data: bytes, pos: int) -> bool:
    at = data.find(_FRAME_MAGIC_BYTES, pos + 1)
    while at != -1:
        if _frame_at(data, at) is not None:
            return True
        at = data.find(_FRAME_MAGIC_BYTES, at + 1)
    return False


def scan(path: Path, *, strict: bool = True, start: int = 0) -> WalScan:
    """Read every good frame. With ``strict``, a bad frame before a good one raises."""
    data = read_wal(path)
    gen = _check_header(path, data)
    if len(data) < _HEADER.size:  # a crash between creating the file and its header
        damaged = not _HEADER.pack(FILE_MAGIC, VERSION, gen).startswith(data)
        return WalScan(path, gen, [], 0, len(data), 0 if data else None, damaged)
    tables: list[pa.Table] = []
    pos = max(start, _HEADER.size)
    while pos < len(data):
        span = _frame_at(data, pos)
        if span is None:
            later = _later_frame_exists(data, pos)
            if strict and later:
                raise LogCorrupt(
                    f"{path}: frame at byte {pos} fails its checksum but later frames are intact",
                    hint="`nerve replay --verify` reports it; `nerve repair` moves it aside",
                )
            damaged = later or not _is_torn(data, pos)
            return WalScan(path, gen, tables, pos, len(data), pos, damaged, later)
        tables.append(_decode_body(data[span[0] : span[1]], path, pos))
        pos = span[1]
    return WalScan(path, gen, tables, pos, len(data), None)


def frames_after(path: Path, pos: int) -> tuple[list[pa.Table], int]:
    """The good frames found from byte ``pos`` on, and where the last ends (for a repair)."""
    data = read_wal(path)
    tables: list[pa.Table] = []
    end, at = pos, data.find(_FRAME_MAGIC_BYTES, pos)
    while at != -1:
        span = _frame_at(data, at)
        if span is None:
            at = data.find(_FRAME_MAGIC_BYTES, at + 1)
            continue
        tables.append(_decode_body(data[span[0] : span[1]], path, at))
        end = at = span[1]
    return tables, end


def read_wal(path: Path) -> bytes:
    return fsio.read_bytes(path)


def write_generation(path: Path, gen: int, tables: list[pa.Table]) -> None:
    """Replace a generation's file with a header and ``tables`` as frames (a repair)."""
    body = _HEADER.pack(FILE_MAGIC, VERSION, gen) + b"".join(encode_frame(t) for t in tables)
    fsio.write_private(path, body, site="wal.create", exclusive=False)


def _check_header(path: Path, data: bytes) -> int:
    if len(data) < _HEADER.size:
        gen = wal_gen(path)
        if gen is None:
            raise LogCorrupt(f"{path}: not a WAL file name")
        return gen
    magic, version, gen = _HEADER.unpack_from(data, 0)
    if magic != FILE_MAGIC or version != VERSION:
        raise LogCorrupt(f"{path}: bad WAL header (magic {magic!r}, version {version})")
    if wal_gen(path) not in (None, gen):
        raise LogCorrupt(f"{path}: header says generation {gen}, file name says otherwise")
    return int(gen)


class WalWriter:
    """Appends frames to one WAL generation; ``sync`` decides whether commits fsync.

    An append that cannot be made durable is cut back off the file before the error
    reaches the caller, so the file always ends at the last acknowledged frame; until
    that cut succeeds, every append is refused.
    """

    def __init__(
        self, folder: Path, gen: int, *, sync: bool, truncate_to: int | None = None
    ) -> None:
        self.path = folder / wal_name(gen)
        self.gen = gen
        self.sync = sync
        self._fd = fsio.open_file(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            self.size = os.fstat(self._fd).st_size
            if self.size < _HEADER.size:
                self._write_header(folder)
            elif truncate_to is not None:
                fsio.truncate(self._fd, truncate_to, site="wal.truncate", path=self.path)
                os.fsync(self._fd)
                self.size = truncate_to
        except BaseException:
            self.close()
            raise
        self.rows = 0
        self._broken = False

    def _write_header(self, folder: Path) -> None:
        os.ftruncate(self._fd, 0)
        header = _HEADER.pack(FILE_MAGIC, VERSION, self.gen)
        fsio.write_all(self._fd, header, site="wal.create", path=self.path)
        os.fsync(self._fd)
        fsio.fsync_dir(folder)
        self.size = _HEADER.size

    def commit(self, table: pa.Table) -> None:
        """Write one frame and, under the fsync policy, make it durable before returning."""
        if self._broken:
            self._cut_back()
        frame = encode_frame(table)
        try:
            fsio.write_all(self._fd, frame, site="wal.write", path=self.path)
            if self.sync:
                fsio.fsync(self._fd, site="wal.fsync", path=self.path, data_only=True)
        except OSError as exc:
            self._broken = True
            with contextlib.suppress(LogError):
                self._cut_back()
            raise LogError(
                f"{self.path}: append not stored ({exc.strerror}); nothing was acknowledged",
                hint="free space or fix the disk; the log takes appends again once it can",
            ) from exc
        self.size += len(frame)
        self.rows += table.num_rows

    def _cut_back(self) -> None:
        """Truncate to the last good frame after a failed append (and make that durable)."""
        try:
            fsio.truncate(self._fd, self.size, site="wal.truncate", path=self.path)
            os.fsync(self._fd)
        except OSError as exc:
            raise LogError(
                f"{self.path}: a failed append could not be cut off ({exc.strerror}); "
                "refusing appends until it can",
                hint="free space or fix the disk",
            ) from exc
        self._broken = False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
