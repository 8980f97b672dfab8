"""The S3 transport: each batch is an object ``<prefix>/<group token>/b/<sender token>/
<last stamp>-<batch id>`` (a repeat writes the same name with the same bytes), listed and
fetched by every device past what it holds; each device's status is the object
``<prefix>/<group token>/s/<sender token>``. Keys come from the environment
(``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``), never from the join code."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from nerve.clock import Hlc
from nerve.sync.box import token
from nerve.sync.group import SyncError
from nerve.sync.transport import Delivery

if TYPE_CHECKING:
    from nerve.sync.group import Group

__all__ = ["S3Bus"]


class S3Bus:
    """A bucket as a transport (see the module docstring)."""

    def __init__(self, fs: Any, base: str) -> None:
        self._fs, self._base = fs, base

    @classmethod
    async def connect(cls, group: Group, me: str) -> S3Bus:
        """The bucket the group's ``s3://bucket/prefix`` names, on its endpoint."""
        from pyarrow import fs

        parts = urlsplit(group.transport.url)
        base = f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")
        endpoint = group.transport.endpoint
        options: dict[str, Any] = {"region": group.transport.region}
        if endpoint:
            options["endpoint_override"] = endpoint
            options["scheme"] = urlsplit(endpoint).scheme or "https"
        if os.environ.get("AWS_ACCESS_KEY_ID"):
            options["access_key"] = os.environ["AWS_ACCESS_KEY_ID"]
            options["secret_key"] = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
        options["connect_timeout"] = options["request_timeout"] = 5.0
        return cls(fs.S3FileSystem(**options), f"{base}/{token(group.key, 'group')}")

    async def publish(self, sender: str, batch_id: str, last: Hlc, blob: bytes) -> None:
        name = f"{self._base}/b/{sender}/{last.physical_ns:020d}-{last.logical:010d}-{batch_id}"
        await asyncio.to_thread(self._write, name, blob)

    async def fetch(self, positions: dict[str, Hlc], limit: int) -> list[Delivery]:
        """Batch boxes past each sender's position, oldest first per sender."""
        return await asyncio.to_thread(self._fetch, positions, limit)

    async def put_status(self, sender: str, blob: bytes) -> None:
        await asyncio.to_thread(self._write, f"{self._base}/s/{sender}", blob)

    async def statuses(self) -> list[bytes]:
        return await asyncio.to_thread(self._read_all, f"{self._base}/s")

    async def listen(self, bell: Callable[[], None]) -> bool:
        """A bucket cannot ring: the daemon polls it (see :mod:`nerve.sync.pace`)."""
        return False

    @property
    def listening(self) -> bool:
        return False

    async def close(self) -> None:
        return None

    def _write(self, name: str, blob: bytes) -> None:
        try:
            with self._fs.open_output_stream(name) as out:
                out.write(blob)
        except OSError as exc:
            raise SyncError(f"s3://{name}: could not write ({exc})") from None

    def _list(self, folder: str) -> list[Any]:
        from pyarrow import fs

        try:
            infos = self._fs.get_file_info(fs.FileSelector(folder, allow_not_found=True))
        except OSError as exc:
            raise SyncError(f"s3://{folder}: could not list ({exc})") from None
        return sorted(infos, key=lambda i: i.path)

    def _read(self, path: str) -> bytes:
        try:
            with self._fs.open_input_stream(path) as f:
                return bytes(f.read())
        except OSError as exc:
            raise SyncError(f"s3://{path}: could not read ({exc})") from None

    def _read_all(self, folder: str) -> list[bytes]:
        return [self._read(i.path) for i in self._list(folder) if i.type.name == "File"]

    def _fetch(self, positions: dict[str, Hlc], limit: int) -> list[Delivery]:
        out: list[Delivery] = []
        for sender in self._list(f"{self._base}/b"):
            name = sender.path.rsplit("/", 1)[-1]
            after = positions.get(name, Hlc(0, 0))
            for info in self._list(sender.path):
                stamp = _stamp(info.path.rsplit("/", 1)[-1])
                if stamp is not None and stamp > after and len(out) < limit:
                    out.append(Delivery(self._read(info.path), _nothing))
        return out


def _stamp(name: str) -> Hlc | None:
    try:
        physical, logical, _ = name.split("-", 2)
        return Hlc(int(physical), int(logical))
    except ValueError:
        return None


async def _nothing() -> None:
    return None
