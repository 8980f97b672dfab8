"""The write-ahead log: framed, checksummed Arrow batches, one file per generation.

File layout: a 16-byte header (``b"NWAL"``, u32 version, u64 generation), then frames::

    u32 magic 0x4E465231 | u32 body length | u32 crc32(body) | body (Arrow IPC stream)

A torn tail (a partial or unchecksummed last frame with nothing valid after it) is cut off
on recovery. A bad frame followed by a good one is corruption, and is reported, not cut.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from nerve.errors import LogCorrupt
from nerve.log.codec import EMPTY, SCHEMA

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
    if not table.schema.equals(SCHEMA):
        raise LogCorrupt(f"{path}: frame at byte {offset} has an unexpected schema")
    return table


@dataclass(frozen=True)
class WalScan:
    """What a WAL file holds: its good frames and where the good prefix ends."""

    path: Path
    gen: int
    tables: list[pa.Table]
    good_end: int
    size: int
    bad_offset: int | None  # first bad frame, if any

    @property
    def torn(self) -> bool:
        return self.good_end < self.size

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


def _later_frame_exists(data: bytes, pos: int) -> bool:
    marker = struct.pack(">I", FRAME_MAGIC)
    at = data.find(marker, pos + 1)
    while at != -1:
        if _frame_at(data, at) is not None:
            return True
        at = data.find(marker, at + 1)
    return False


def scan(path: Path, *, strict: bool = True) -> WalScan:
    """Read every good frame. With ``strict``, a bad frame before a good one raises."""
    data = path.read_bytes()
    gen = _check_header(path, data)
    tables: list[pa.Table] = []
    pos = _HEADER.size
    while pos < len(data):
        span = _frame_at(data, pos)
        if span is None:
            if strict and _later_frame_exists(data, pos):
                raise LogCorrupt(
                    f"{path}: frame at byte {pos} fails its checksum but later frames are intact",
                    hint="run `nerve replay --verify` to see every damaged place",
                )
            return WalScan(path, gen, tables, pos, len(data), pos)
        tables.append(_decode_body(data[span[0] : span[1]], path, pos))
        pos = span[1]
    return WalScan(path, gen, tables, pos, len(data), None)


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


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WalWriter:
    """Appends frames to one WAL generation; ``sync`` decides whether commits fsync."""

    def __init__(
        self, folder: Path, gen: int, *, sync: bool, truncate_to: int | None = None
    ) -> None:
        self.path = folder / wal_name(gen)
        self.gen = gen
        self.sync = sync
        fresh = not self.path.exists()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if fresh or os.fstat(self._fd).st_size < _HEADER.size:
            os.ftruncate(self._fd, 0)
            os.write(self._fd, _HEADER.pack(FILE_MAGIC, VERSION, gen))
            os.fsync(self._fd)
            fsync_dir(folder)
        elif truncate_to is not None:
            os.ftruncate(self._fd, truncate_to)
            os.fsync(self._fd)
        self.rows = 0

    def commit(self, table: pa.Table) -> None:
        """Write one frame and, under the fsync policy, make it durable before returning."""
        frame = encode_frame(table)
        view = memoryview(frame)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        if self.sync:
            os.fdatasync(self._fd)
        self.rows += table.num_rows

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
