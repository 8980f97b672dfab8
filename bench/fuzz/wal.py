"""A write-ahead log file (``nerve.log.wal``): what recovery and every reader scan.

The first byte picks how the rest is read: even, as the file's bytes; odd, with each
complete frame's checksum made right first, so the fuzzer reaches the frame decoders (CBOR
rows, Arrow IPC) instead of stopping at the checksum."""

from __future__ import annotations

import struct
import tempfile
import zlib
from pathlib import Path

from nerve.errors import NerveError
from nerve.log.drafts import Draft
from nerve.log.store import EventLog
from nerve.log.wal import frames_after, scan, wal_name

from . import placed

_FRAME = struct.Struct(">III")
_HEADER_SIZE = 16
_FOLDER = Path(tempfile.mkdtemp(prefix="nerve-fuzz-wal-"))
_PATH = _FOLDER / wal_name(1)

# The modules whose branches guide the fuzzer (only they are instrumented).
COVERED = ("nerve.log.wal", "nerve.log.codec", "nerve.log.crypt")


def seeds() -> list[bytes]:
    """A real log's WAL: small CBOR frames and an Arrow frame, raw and checksum-fixed."""
    with tempfile.TemporaryDirectory(prefix="nerve-fuzz-seed-") as tmp:
        root = Path(tmp) / "log"
        with EventLog(root, node="fuzz", durability="os") as log:
            log.append("observation", subject="cpu", source=3, payload={"v": 1}, line="cpu")
            log.append("observation", subject="disk", payload=b"\x00raw", valid_time_ns=7)
            log.append_drafts(
                [Draft(source=1, subject=f"s{i}", payload=b'{"i":%d}' % i) for i in range(200)]
            )
        data = next((root / "wal").glob("*.wal")).read_bytes()
    return [b"\x00" + data, b"\x01" + data, b"\x01" + data[: len(data) // 2]]


def fix_checksums(data: bytes) -> bytes:
    """``data`` with the checksum of every complete frame after the header made right."""
    out, pos = bytearray(data), _HEADER_SIZE
    while pos + _FRAME.size <= len(out):
        magic, length, _ = _FRAME.unpack_from(out, pos)
        end = pos + _FRAME.size + length
        if end > len(out):
            break
        _FRAME.pack_into(out, pos, magic, length, zlib.crc32(out[pos + _FRAME.size : end]))
        pos = end
    return bytes(out)


def TestOneInput(data: bytes) -> None:
    """The file scanned strictly, leniently, and searched for frames after its header."""
    if not data:
        return
    body = fix_checksums(data[1:]) if data[0] & 1 else data[1:]
    _PATH.write_bytes(body)
    for read in (
        lambda: scan(_PATH, strict=True),
        lambda: scan(_PATH, strict=False),
        lambda: frames_after(_PATH, _HEADER_SIZE),
    ):
        try:
            read()
        except NerveError as exc:
            placed(exc, str(_PATH))
