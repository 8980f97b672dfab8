"""The write-ahead log: framed, checksummed batches of rows, one file per generation.

File layout: a 16-byte header (``b"NWAL"``, u32 version, u64 generation), then frames::

    u32 magic | u32 body length | u32 crc32(body) | body

A frame's magic names its body. ``0x4E465231`` (``NFR1``): an Arrow IPC stream of the log's
schema, any number of rows. ``0x4E465232`` (``NFR2``, version 2 files only): a small batch as
deterministic CBOR, an array of rows, each an array of the schema's twelve columns in order
(ids and payload addresses included, as in an Arrow frame). Version 1 files hold only Arrow
frames and stay readable; a writer that takes one over keeps writing Arrow frames to it, so
an older reader can still read it. New generations are version 2.

A torn tail (a prefix of a frame, or zeros, at the end of the newest generation: what a crash
mid-append leaves) is cut off on recovery; it was never acknowledged. Anything else that fails
its checksum is damage: reported by verify, refused by the writer, and moved aside (never
deleted) only by an explicit ``nerve repair``.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import cbor2
import pyarrow as pa

from nerve import fsio
from nerve.errors import LogCorrupt, LogError, one_line
from nerve.log import crypt
from nerve.log.codec import EMPTY, SCHEMA, SCHEMA_V1, Row, conform, table_from_rows

if TYPE_CHECKING:
    from nerve.log.crypt import Cipher

FILE_MAGIC = b"NWAL"
VERSION = 2
VERSIONS = (1, 2)  # what a reader accepts
FRAME_MAGIC = 0x4E465231  # body: Arrow IPC stream
SMALL_MAGIC = 0x4E465232  # body: CBOR rows (version 2 files)
_HEADER = struct.Struct(">4sIQ")
_FRAME = struct.Struct(">III")
MAX_FRAME = 1 << 31


def frame_magics(version: int) -> tuple[int, ...]:
    """The frame kinds a file of ``version`` may hold."""
    return (FRAME_MAGIC,) if version == 1 else (FRAME_MAGIC, SMALL_MAGIC)


def wal_name(gen: int) -> str:
    return f"{gen:016d}.wal"


def wal_gen(path: Path) -> int | None:
    stem, dot, ext = path.name.partition(".")
    return int(stem) if ext == "wal" and dot and stem.isdigit() else None


def encode_frame(table: pa.Table, cipher: Cipher | None = None) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, SCHEMA) as writer:
        writer.write_table(table)
    return _framed(FRAME_MAGIC, sink.getvalue().to_pybytes(), cipher)


def encode_small_frame(rows: Sequence[Row], cipher: Cipher | None = None) -> bytes:
    """A frame of a few rows (``codec.small_rows``'s tuples) as deterministic CBOR.

    Rows hold only integers, text, bytes and null, which CBOR encodes one way (shortest
    heads, definite lengths): the default encoder writes what ``canonical=True`` would."""
    return _framed(SMALL_MAGIC, cbor2.dumps(rows), cipher)


def _framed(magic: int, body: bytes, cipher: Cipher | None) -> bytes:
    """A frame; in an encrypted log its body is an envelope (the checksum is over it, so a
    torn or damaged frame is found without the key)."""
    if cipher is not None:
        body = cipher.encrypt(body)
    return _FRAME.pack(magic, len(body), zlib.crc32(body)) + body


# A small frame's row: the column types of ``SCHEMA`` as CBOR decodes them.
_ROW_TYPES: tuple[type | tuple[type, ...], ...] = (
    int,
    int,
    str,
    str,
    str,
    int,
    int,
    (int, type(None)),
    bytes,
    bytes,
    str,
    bytes,
)


def decode_small(body: bytes | memoryview, path: Path, offset: int) -> list[Row]:
    """The rows of a small frame's body; anything but well-formed rows is corruption."""
    where = f"{path}: frame at byte {offset} has a valid checksum but"
    stream = io.BytesIO(body)
    try:
        rows = cbor2.CBORDecoder(stream).decode()
    except (cbor2.CBORDecodeError, ValueError, TypeError, EOFError, RecursionError) as exc:
        raise LogCorrupt(f"{where} no readable CBOR rows: {one_line(exc)}") from None
    if stream.tell() != len(body):
        raise LogCorrupt(f"{where} {len(body) - stream.tell()} bytes follow its rows")
    if not isinstance(rows, list) or not rows:
        raise LogCorrupt(f"{where} its body is not a list of rows")
    for index, row in enumerate(rows):
        if not _row_ok(row):
            raise LogCorrupt(f"{where} its row {index} does not match the log's columns")
    return [tuple(row) for row in rows]


def _row_ok(row: object) -> bool:
    """A row of the log's columns, each value in the range its id field encodes."""
    if not isinstance(row, list) or len(row) != len(_ROW_TYPES):
        return False
    typed = zip(row, _ROW_TYPES, strict=True)
    if not all(isinstance(v, t) and not isinstance(v, bool) for v, t in typed):
        return False
    physical, logical, source, trust, valid_time = row[0], row[1], row[5], row[6], row[7]
    return (
        0 <= physical <= _I64_MAX
        and 0 <= logical <= _U32_MAX
        and 0 <= source <= _U32_MAX
        and 0 <= trust <= 255
        and (valid_time is None or -_I64_MAX - 1 <= valid_time <= _I64_MAX)
        and len(row[8]) == 32
        and len(row[11]) == 32
    )


_I64_MAX, _U32_MAX = (1 << 63) - 1, (1 << 32) - 1


def small_table(rows: list[Row], path: Path, offset: int) -> pa.Table:
    """Decoded small-frame rows as a table; a value out of its column's range is corruption."""
    try:
        return table_from_rows(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise LogCorrupt(
            f"{path}: frame at byte {offset} has a valid checksum but a value out of range: "
            + one_line(exc)
        ) from None


def decode_frame(magic: int, body: bytes | memoryview, path: Path, offset: int) -> pa.Table:
    """One frame's body (of the kind ``magic`` names) as a table in today's types."""
    body = crypt.open_bytes(body, f"{path}: frame at byte {offset}")
    if magic == SMALL_MAGIC:
        return small_table(decode_small(body, path, offset), path, offset)
    return _decode_body(body, path, offset)


def _decode_body(body: bytes | memoryview, path: Path, offset: int) -> pa.Table:
    try:
        table = pa.ipc.open_stream(body).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        raise LogCorrupt(
            f"{path}: frame at byte {offset} has a valid checksum but no Arrow data: "
            + one_line(exc)
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
    frames: int = 0  # good frames read (runs of small ones share a table)

    @property
    def torn(self) -> bool:
        return self.good_end < self.size and not self.damaged

    @property
    def cut_bytes(self) -> int:
        return self.size - self.good_end

    def table(self) -> pa.Table:
        return pa.concat_tables(self.tables) if self.tables else EMPTY


def _frame_at(data: bytes, pos: int, magics: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(magic, body_start, body_end) of a checksummed frame at ``pos``, or None."""
    if pos + _FRAME.size > len(data):
        return None
    magic, length, crc = _FRAME.unpack_from(data, pos)
    start, end = pos + _FRAME.size, pos + _FRAME.size + length
    if magic not in magics or length > MAX_FRAME or end > len(data):
        return None
    if zlib.crc32(memoryview(data)[start:end]) != crc:
        return None
    return magic, start, end


def _is_torn(data: bytes, pos: int, magics: tuple[int, ...]) -> bool:
    """True if the bytes from ``pos`` are what an interrupted append leaves behind."""
    rest = data[pos:]
    if not rest.strip(b"\0"):
        return True  # space the file system extended but never filled
    head = rest[: _FRAME.size]
    if len(head) < _FRAME.size:
        return any(struct.pack(">I", m).startswith(head[:4]) for m in magics)
    magic, length, _ = _FRAME.unpack(head)
    complete = pos + _FRAME.size + int(length) <= len(data)
    return bool(magic in magics and length <= MAX_FRAME and not complete)


def _next_magic(data: bytes, pos: int, magics: tuple[int, ...]) -> int:
    """Where the next frame magic of ``magics`` begins at or after ``pos``, or -1."""
    found = [data.find(struct.pack(">I", m), pos) for m in magics]
    return min((at for at in found if at != -1), default=-1)


def _later_frame_exists(data: bytes, pos: int, magics: tuple[int, ...]) -> bool:
    at = _next_magic(data, pos + 1, magics)
    while at != -1:
        if _frame_at(data, at, magics) is not None:
            return True
        at = _next_magic(data, at + 1, magics)
    return False


@dataclass
class _Frames:
    """Decoded frames; runs of small frames become one table (what recovery keeps)."""

    path: Path
    tables: list[pa.Table] = field(default_factory=list)
    count: int = 0
    decode: bool = True  # False: checksums only (verify without the key)
    _rows: list[Row] = field(default_factory=list)
    _rows_at: int = 0

    def add(self, data: bytes, span: tuple[int, int, int], offset: int) -> None:
        magic, start, end = span
        self.count += 1
        if not self.decode:
            return
        body = crypt.open_bytes(memoryview(data)[start:end], f"{self.path}: frame at byte {offset}")
        if magic == SMALL_MAGIC:
            if not self._rows:
                self._rows_at = offset
            self._rows += decode_small(body, self.path, offset)
            return
        self.flush()
        self.tables.append(_decode_body(body, self.path, offset))

    def flush(self) -> list[pa.Table]:
        if self._rows:
            self.tables.append(small_table(self._rows, self.path, self._rows_at))
            self._rows = []
        return self.tables


def scan(path: Path, *, strict: bool = True, start: int = 0, decode: bool = True) -> WalScan:
    """Read every good frame. With ``strict``, a bad frame before a good one raises.
    Without ``decode``, frames are only checked and counted (no key needed)."""
    data = read_wal(path)
    gen, version = _check_header(path, data)
    if len(data) < _HEADER.size:  # a crash between creating the file and its header
        damaged = not any(_HEADER.pack(FILE_MAGIC, v, gen).startswith(data) for v in VERSIONS)
        return WalScan(path, gen, [], 0, len(data), 0 if data else None, damaged)
    magics = frame_magics(version)
    frames = _Frames(path, decode=decode)
    pos = max(start, _HEADER.size)
    while pos < len(data):
        span = _frame_at(data, pos, magics)
        if span is None:
            later = _later_frame_exists(data, pos, magics)
            if strict and later:
                raise LogCorrupt(
                    f"{path}: frame at byte {pos} fails its checksum but later frames are intact",
                    hint="`nerve replay --verify` reports it; `nerve repair` moves it aside",
                )
            damaged = later or not _is_torn(data, pos, magics)
            tables = frames.flush()
            return WalScan(path, gen, tables, pos, len(data), pos, damaged, later, frames.count)
        frames.add(data, span, pos)
        pos = span[2]
    return WalScan(path, gen, frames.flush(), pos, len(data), None, frames=frames.count)


def frames_after(path: Path, pos: int) -> tuple[list[pa.Table], int]:
    """The good frames found from byte ``pos`` on, and where the last ends (for a repair)."""
    data = read_wal(path)
    magics = frame_magics(_check_header(path, data)[1])
    tables: list[pa.Table] = []
    end, at = pos, _next_magic(data, pos, magics)
    while at != -1:
        span = _frame_at(data, at, magics)
        if span is None:
            at = _next_magic(data, at + 1, magics)
            continue
        tables.append(decode_frame(span[0], memoryview(data)[span[1] : span[2]], path, at))
        end = at = span[2]
    return tables, end


def read_wal(path: Path) -> bytes:
    return fsio.read_bytes(path)


def write_generation(
    path: Path, gen: int, tables: list[pa.Table], cipher: Cipher | None = None
) -> None:
    """Replace a generation's file with a header and ``tables`` as frames (a repair)."""
    frames = b"".join(encode_frame(t, cipher) for t in tables)
    body = _HEADER.pack(FILE_MAGIC, VERSION, gen) + frames
    fsio.write_private(path, body, site="wal.create", exclusive=False)


def read_header(path: Path, data: bytes) -> tuple[int, int]:
    """(generation, version) of a WAL file's header; a header no reader knows is corruption."""
    magic, version, gen = _HEADER.unpack_from(data, 0)
    if magic != FILE_MAGIC or version not in VERSIONS:
        raise LogCorrupt(f"{path}: bad WAL header (magic {magic!r}, version {version})")
    return int(gen), int(version)


def _check_header(path: Path, data: bytes) -> tuple[int, int]:
    if len(data) < _HEADER.size:
        gen = wal_gen(path)
        if gen is None:
            raise LogCorrupt(f"{path}: not a WAL file name")
        return gen, VERSION
    gen, version = read_header(path, data)
    if wal_gen(path) not in (None, gen):
        raise LogCorrupt(f"{path}: header says generation {gen}, file name says otherwise")
    return gen, version


class WalWriter:
    """Appends frames to one WAL generation; ``sync`` decides whether commits fsync.

    An append that cannot be made durable is cut back off the file before the error
    reaches the caller, so the file always ends at the last acknowledged frame; until
    that cut succeeds, every append is refused.
    """

    def __init__(
        self,
        folder: Path,
        gen: int,
        *,
        sync: bool,
        truncate_to: int | None = None,
        cipher: Cipher | None = None,
    ) -> None:
        self.path = folder / wal_name(gen)
        self.gen = gen
        self.sync = sync
        self.cipher = cipher
        self._fd = fsio.open_file(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        try:
            self.size = os.fstat(self._fd).st_size
            self.version = VERSION  # of a new file; one taken over keeps its own
            if self.size < _HEADER.size:
                self._write_header(folder)
            else:
                self.version = read_header(self.path, os.pread(self._fd, _HEADER.size, 0))[1]
                if truncate_to is not None:
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
        fsio.fsync_dir(folder, site="wal.dirsync")
        self.size = _HEADER.size

    def commit(self, table: pa.Table) -> None:
        """Write one frame and, under the fsync policy, make it durable before returning."""
        self._write(encode_frame(table, self.cipher), table.num_rows)

    def commit_rows(self, rows: Sequence[Row]) -> None:
        """``commit`` for a few rows (``codec.small_rows``): a small frame, or an Arrow one
        in a version 1 file (taken over from an older writer)."""
        if self.version == 1:
            self._write(encode_frame(table_from_rows(rows), self.cipher), len(rows))
        else:
            self._write(encode_small_frame(rows, self.cipher), len(rows))

    def _write(self, frame: bytes, count: int) -> None:
        if self._broken:
            self._cut_back()
        try:
            fsio.write_all(self._fd, frame, site="wal.write", path=self.path)
            if self.sync:
                fsio.fsync(self._fd, site="wal.fsync", path=self.path, data_only=True)
        except OSError as exc:
            self._broken = True
            try:
                self._cut_back()
            except LogError as cut:
                why = getattr(cut.__cause__, "strerror", cut)
                raise LogError(
                    f"{self.path}: append failed ({exc.strerror}) and could not be cut back "
                    f"off ({why}): it MAY be stored; refusing appends until the cut succeeds",
                    hint="check with `nerve tail` before sending it again, or send it with "
                    "--key so a retry is stored once",
                ) from exc
            raise LogError(
                f"{self.path}: append not stored ({exc.strerror}); nothing was acknowledged",
                hint="free space or fix the disk; the log takes appends again once it can",
            ) from exc
        self.size += len(frame)
        self.rows += count

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
