"""DuckDB over an encrypted log: a read-only file system that decrypts segments in memory.

DuckDB's own Parquet reader does the work (projection, row-group pruning, threads); it reads
``nerveenc://<absolute path>`` through this fsspec file system, which opens only the
encrypted chunks a read touches (:class:`nerve.log.crypt.EncryptedFile`): a query over a few
columns decrypts about what a plain query reads. Nothing decrypted is written to disk.
"""

from __future__ import annotations

import collections
import datetime
import threading
from pathlib import Path
from typing import Any

import duckdb
from fsspec import AbstractFileSystem  # type: ignore[import-untyped]
from fsspec.spec import AbstractBufferedFile  # type: ignore[import-untyped]

from nerve.log import crypt

PROTOCOL = "nerveenc"
_OPEN_FILES = 16


class EncryptedFileSystem(AbstractFileSystem):  # type: ignore[misc]
    """Read-only: ``open`` reads a segment's plaintext by range, ``info`` gives its size."""

    protocol = PROTOCOL
    cachable = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._files: collections.OrderedDict[str, crypt.EncryptedFile] = collections.OrderedDict()
        self._lock = threading.Lock()

    def reader(self, path: str) -> crypt.EncryptedFile:
        """The file's reader (kept for the last few files: each keeps its last chunks)."""
        path = self._strip_protocol(path)
        with self._lock:
            hit = self._files.get(path)
            if hit is not None:
                self._files.move_to_end(path)
                return hit
        found = crypt.EncryptedFile(Path(path))
        with self._lock:
            self._files[path] = found
            while len(self._files) > _OPEN_FILES:
                self._files.popitem(last=False)
        return found

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        path = str(path)
        prefix = f"{PROTOCOL}://"
        return path[len(prefix) :] if path.startswith(prefix) else path

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> _Reader:
        if "r" not in mode:
            raise PermissionError(f"{path}: an encrypted segment is read-only here")
        return _Reader(self, path, mode, **kwargs)

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        name = self._strip_protocol(path)
        return {"name": name, "size": self.reader(name).size, "type": "file"}

    def modified(self, path: str) -> datetime.datetime:
        stamp = Path(self._strip_protocol(path)).stat().st_mtime
        return datetime.datetime.fromtimestamp(stamp, tz=datetime.UTC)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        entry = self.info(path)
        return [entry] if detail else [entry["name"]]


class _Reader(AbstractBufferedFile):  # type: ignore[misc]
    def __init__(self, fs: EncryptedFileSystem, path: str, mode: str, **kwargs: Any) -> None:
        self._file = fs.reader(path)
        kwargs.setdefault("cache_type", "none")
        super().__init__(fs, path, mode, size=self._file.size, **kwargs)

    def _fetch_range(self, start: int, end: int) -> bytes:
        return self._file.read(start, end)


_SHARED: EncryptedFileSystem | None = None


def register(conn: duckdb.DuckDBPyConnection) -> None:
    """Let ``conn`` read ``nerveenc://`` paths (one file system per process: its cache)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = EncryptedFileSystem()
    conn.register_filesystem(_SHARED)
    conn.execute("SET temp_directory = ''")  # decrypted pages never spill to disk


def uri(path: Path) -> str:
    """What DuckDB should read for a segment file: its path, or an encrypted one's URI."""
    return f"{PROTOCOL}://{path.absolute()}" if crypt.encrypted_file(path) else str(path)
