"""A workspace's seal folder, ``data/seals/``: the set-up, the public keys, the secret state
and the seals themselves.

    setup.json        the seed, and the identity key's certificate of it (if any)
    keys.bin          the epoch public keys, 32 bytes each (public: the seed's root checks them)
    state             the secret: epoch (8 bytes, big-endian) + s_epoch (32) + blake3 of both
                      (32); owner-only, overwritten in place and synced as the epoch moves
    epochs-<k>.notes  the seals of epochs k*1024 .. k*1024+1023, appended, one blank line
                      between notes
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3

from nerve import fsio
from nerve.errors import NerveError
from nerve.seal.note import split_notes
from nerve.seal.seed import Seed

NOTES_PER_FILE = 1024
STATE_SIZE = 72


class SealError(NerveError):
    """Epoch sealing cannot set up, seal or reach its token (nerve.seal): names the file."""


@dataclass
class SealDir:
    folder: Path

    @property
    def setup_path(self) -> Path:
        return self.folder / "setup.json"

    @property
    def state_path(self) -> Path:
        return self.folder / "state"

    @property
    def keys_path(self) -> Path:
        return self.folder / "keys.bin"

    def notes_path(self, epoch: int) -> Path:
        return self.folder / f"epochs-{epoch // NOTES_PER_FILE}.notes"

    def exists(self) -> bool:
        return self.setup_path.exists()

    def setup(self) -> dict[str, Any]:
        try:
            obj = json.loads(fsio.read_bytes(self.setup_path))
        except FileNotFoundError:
            raise SealError(
                f"{self.setup_path}: no seal set-up", hint="nerve audit seal-setup makes one"
            ) from None
        except (ValueError, OSError) as exc:
            raise SealError(f"{self.setup_path}: unreadable: {exc}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("seed"), str):
            raise SealError(f"{self.setup_path}: no seed field")
        return obj

    def seed(self) -> Seed:
        return Seed.parse(str(self.setup()["seed"]))

    def public_keys(self) -> list[bytes]:
        raw = fsio.read_bytes(self.keys_path)
        return [raw[i : i + 32] for i in range(0, len(raw), 32)]

    def notes(self) -> list[str]:
        """Every stored note, file by file in epoch order."""
        files = sorted(self.folder.glob("epochs-*.notes"), key=_file_number)
        return [note for path in files for note in split_notes(fsio.read_bytes(path).decode())]

    def append(self, epoch: int, note: str) -> None:
        """Append ``note`` durably (the file, and the folder for a new file)."""
        path = self.notes_path(epoch)
        new = not path.exists()
        fd = fsio.open_append(path)
        size = os.fstat(fd).st_size
        try:
            fsio.write_all(fd, (note + "\n").encode(), site="seal.append", path=path)
            fsio.fsync(fd, site="seal.append", path=path)
        except OSError:
            with contextlib.suppress(OSError):  # no torn note is left for the next to follow
                os.ftruncate(fd, size)
            raise
        finally:
            os.close(fd)
        if new:
            fsio.fsync_dir(self.folder)

    def read_state(self) -> tuple[int, bytearray]:
        raw = fsio.read_bytes(self.state_path)
        if len(raw) != STATE_SIZE or blake3.blake3(raw[:40]).digest() != raw[40:]:
            raise SealError(f"{self.state_path}: not a seal state (damaged or wiped)")
        return int.from_bytes(raw[:8], "big"), bytearray(raw[8:40])

    def write_state(self, epoch: int, state: bytes | bytearray, *, new: bool = False) -> None:
        """Overwrite the state in place and sync it: the previous state's bytes are gone
        from the file, not left in a freed block behind a rename."""
        body = epoch.to_bytes(8, "big") + bytes(state)
        data = body + blake3.blake3(body).digest()
        if new:
            fsio.write_private(self.state_path, data, site="seal.state")
            return
        fd = fsio.open_file(self.state_path, os.O_WRONLY)
        try:
            try:
                fsio.write_all(fd, data, site="seal.state", path=self.state_path)
                fsio.fsync(fd, site="seal.state", path=self.state_path)
            except OSError:  # a torn overwrite reads as damaged: write it whole once more
                os.lseek(fd, 0, os.SEEK_SET)
                fsio.write_all(fd, data, site="seal.state", path=self.state_path)
                fsio.fsync(fd, site="seal.state", path=self.state_path)
        finally:
            os.close(fd)


def _file_number(path: Path) -> int:
    digits = path.name.removeprefix("epochs-").removesuffix(".notes")
    return int(digits) if digits.isdigit() else -1
