"""DuckDB over an encrypted log: a read-only file system that decrypts segments in memory.

DuckDB's own Parquet reader does the work (projection, row-group pruning, threads); it reads
``nervesealed://<absolute path>`` through this fsspec file system, which opens the envelope
(:mod:`nerve.log.crypt`) once per file and serves the plaintext from memory. Nothing
decrypted is ever written to disk. Parquet Modular Encryption was the other way; see the
README's "Encryption at rest" for why this one was chosen.
"""

from __future__ import annotations

import collections
import datetime
import io
import threading
from pathlib import Path
from typing import Any

import duckdb
from fsspec import AbstractFileSystem

from nerve import fsio
from nerve.log import crypt

PROTOCOL = "nervesealed"
_CACHE_BYTES = 512 << 20


class SealedFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """Read-only: ``open`` gives a segment's plaintext, ``info`` its plaintext size."""

    protocol = PROTOCOL
    cachable = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._plain: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self._lock = threading.Lock()

    def _bytes(self, path: str) -> bytes:
        path = self._strip_protocol(path)
        with self._lock:
            hit = self._plain.get(path)
            if hit is not None:
                self._plain.move_to_end(path)
                return hit
        data = bytes(crypt.open_bytes(fsio.read_bytes(Path(path)), path))
        with self._lock:
            self._plain[path] = data
            while len(self._plain) > 1 and sum(map(len, self._plain.values())) > _CACHE_BYTES:
                self._plain.popitem(last=False)
        return data

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        path = str(path)
        prefix = f"{PROTOCOL}://"
        return path[len(prefix) :] if path.startswith(prefix) else path

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> io.BytesIO:
        if "r" not in mode:
            raise PermissionError(f"{path}: an encrypted segment is read-only here")
        return io.BytesIO(self._bytes(path))

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        return {"name": self._strip_protocol(path), "size": len(self._bytes(path)), "type": "file"}

    def modified(self, path: str) -> datetime.datetime:
        stamp = Path(self._strip_protocol(path)).stat().st_mtime
        return datetime.datetime.fromtimestamp(stamp, tz=datetime.UTC)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        entry = self.info(path)
        return [entry] if detail else [entry["name"]]


_SHARED: SealedFileSystem | None = None


def register(conn: duckdb.DuckDBPyConnection) -> None:
    """Let ``conn`` read ``nervesealed://`` paths (one file system per process: its cache)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = SealedFileSystem()
    conn.register_filesystem(_SHARED)


def uri(path: Path) -> str:
    """What DuckDB should read for a segment file: its path, or a sealed one's URI."""
    return f"{PROTOCOL}://{path.absolute()}" if crypt.sealed_file(path) else str(path)
