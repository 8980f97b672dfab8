"""A sync group as this device keeps it: ``data/sync/group.json`` (name, transport, this
device's name) and ``data/sync/group.key`` (the 32-byte group key, owner-only), and the
one-time join code that carries both to another device.

A join code is ``nerve1-`` followed by the base64url text of the canonical JSON
``{"group", "key", "transport"}``; it holds the key, so it is shown once and passed by hand.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nerve import fsio
from nerve.errors import NerveError

__all__ = ["CODE_PREFIX", "KEY_BYTES", "Group", "SyncError", "Transport", "decode_code"]

KEY_BYTES = 32
CODE_PREFIX = "nerve1-"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


class SyncError(NerveError):
    """A sync group, its join code or its transport failed (names the file, field or URL)."""


@dataclass(frozen=True)
class Transport:
    """Where a group's messages go: ``kind`` ``nats`` (``url`` a NATS server, comma-separated
    for a cluster) or ``s3`` (``url`` ``s3://bucket/prefix``, ``endpoint`` an S3 server)."""

    kind: str
    url: str
    endpoint: str | None = None
    region: str = "us-east-1"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "url": self.url, "region": self.region}
        if self.endpoint:
            out["endpoint"] = self.endpoint
        return out

    @classmethod
    def of(cls, obj: Any, where: str) -> Transport:
        """A transport from its JSON form; ``SyncError`` naming ``where`` if it is not one."""
        if not isinstance(obj, dict) or obj.get("kind") not in ("nats", "s3"):
            raise SyncError(f"{where}: transport must be nats or s3")
        url, endpoint = obj.get("url"), obj.get("endpoint")
        if (
            not isinstance(url, str)
            or not url
            or not (endpoint is None or isinstance(endpoint, str))
        ):
            raise SyncError(f"{where}: transport.url must be text")
        if obj["kind"] == "s3" and not url.startswith("s3://"):
            raise SyncError(f"{where}: an s3 transport's url is s3://bucket/prefix, not {url!r}")
        return cls(obj["kind"], url, endpoint, str(obj.get("region") or "us-east-1"))


@dataclass(frozen=True)
class Group:
    """A sync group: its ``name``, shared ``key`` and ``transport``, and this ``device``'s
    name in it (shown beside each event it sent)."""

    name: str
    key: bytes = field(repr=False)
    transport: Transport
    device: str = ""

    @classmethod
    def new(cls, name: str, transport: Transport, device: str) -> Group:
        """A fresh group with a random key."""
        check_name(name)
        return cls(name, secrets.token_bytes(KEY_BYTES), transport, device)

    def code(self) -> str:
        """The join code for another device (holds the key: show it once)."""
        body = {
            "group": self.name,
            "key": base64.urlsafe_b64encode(self.key).decode().rstrip("="),
            "transport": self.transport.to_json(),
        }
        text = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        return CODE_PREFIX + base64.urlsafe_b64encode(text).decode().rstrip("=")

    def save(self, folder: Path) -> None:
        """Write ``group.json`` and the private ``group.key`` under ``folder``."""
        fsio.private_dir(folder)
        meta = {"group": self.name, "transport": self.transport.to_json(), "device": self.device}
        text = json.dumps(meta, sort_keys=True, indent=1).encode() + b"\n"
        fsio.write_private(folder / "group.key", self.key, site="sync.key", exclusive=False)
        fsio.write_private(folder / "group.json", text, site="sync.group", exclusive=False)

    @classmethod
    def load(cls, folder: Path) -> Group | None:
        """The group saved under ``folder``; None when this device is in none."""
        meta_path, key_path = folder / "group.json", folder / "group.key"
        if not meta_path.exists():
            return None
        try:
            meta = json.loads(fsio.read_bytes(meta_path))
        except (OSError, ValueError) as exc:
            raise SyncError(f"{meta_path}: not a sync group file ({exc})") from None
        key = _read_key(key_path)
        transport = Transport.of(meta.get("transport"), str(meta_path))
        return cls(str(meta.get("group")), key, transport, str(meta.get("device") or ""))


def _read_key(path: Path) -> bytes:
    """The group key; refused if missing, the wrong size, or readable by others."""
    try:
        mode = os.stat(path).st_mode & 0o077
        key = fsio.read_bytes(path)
    except OSError as exc:
        raise SyncError(f"{path}: cannot read the group key ({exc.strerror})") from None
    if mode:
        raise SyncError(f"{path}: the group key is readable by others", hint=f"chmod 600 {path}")
    if len(key) != KEY_BYTES:
        raise SyncError(f"{path}: a group key is {KEY_BYTES} bytes, this one {len(key)}")
    return key


def check_name(name: str) -> str:
    """A group or device name: letters, digits, ``_`` and ``-``, at most 63."""
    if not _NAME.match(name):
        raise SyncError(f"sync name {name!r}: use letters, digits, _ and - (at most 63)")
    return name


def decode_code(code: str, device: str) -> Group:
    """The group a join code names, for ``device``; ``SyncError`` if it is not a code."""
    text = code.strip()
    if not text.startswith(CODE_PREFIX):
        raise SyncError(f"join code must start with {CODE_PREFIX!r}")
    try:
        raw = _unb64(text[len(CODE_PREFIX) :])
        body = json.loads(raw)
        key = _unb64(body["key"])
        name = check_name(str(body["group"]))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise SyncError("join code is damaged (copy it again, whole)") from None
    if len(key) != KEY_BYTES:
        raise SyncError("join code is damaged (its key is the wrong size)")
    return Group(name, key, Transport.of(body.get("transport"), "join code"), device)


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
