"""Folders whose files code outside nerve writes (a workflow role's outputs, a check's
findings), kept encrypted under ``data/`` in an encrypted workspace.

Such code writes plain files with ``open()``, so it is given a *working folder* in a
memory-backed file system (``$XDG_RUNTIME_DIR``, else ``/dev/shm``): its plaintext never
reaches the disk and a reboot clears it. :class:`EncryptedDir` pairs that folder with the one
under ``data/`` that keeps each file encrypted under the same relative name
(:meth:`nerve.log.crypt.Cipher.encrypt_file`). :meth:`EncryptedDir.encrypt` copies each
regular file in (one whose encrypted bytes are already there is left alone: encryption is
deterministic) and drops encrypted files the working folder no longer has;
:meth:`EncryptedDir.restore` brings missing working files back from their encrypted copies
(after a reboot); :meth:`EncryptedDir.discard` removes the working folder. In a plain
workspace both are one folder and these do nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nerve import fsio
from nerve.errors import LogError
from nerve.log import crypt

_SITE = "encrypted.write"
# the lock file keeps the name working folders already on disk have (it is never encrypted)
_LOCK = ".nerve-seal.lock"  # in the working folder: one writer at a time, across processes
_THREAD_LOCK = threading.RLock()
_USERS: dict[Path, int] = {}  # working folder → uses in progress in this process


def memory_base(env: Mapping[str, str] | None = None, fallback: Path = Path("/dev/shm")) -> Path:
    """Where working folders live: a memory-backed folder this user may write."""
    env = os.environ if env is None else env
    for candidate in (env.get("XDG_RUNTIME_DIR"), str(fallback)):
        if candidate and os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return Path(candidate)
    raise LogError(
        "an encrypted workspace keeps workflow outputs and check findings in memory while "
        f"they are worked on, and neither $XDG_RUNTIME_DIR nor {fallback} is writable here",
        hint="set XDG_RUNTIME_DIR to a folder on a memory-backed file system (tmpfs)",
    )


def working_root(data: Path, base: Path) -> Path:
    """This workspace's own folder under ``base`` (named by its data folder's path)."""
    name = hashlib.blake2b(str(data.resolve()).encode(), digest_size=8).hexdigest()
    return base / f"nerve-{os.getuid()}" / name


@dataclass
class EncryptedDir:
    """A working folder and the encrypted folder under ``data/`` that keeps it."""

    stored: Path
    work: Path
    cipher: crypt.Cipher | None = field(default=None, repr=False)
    tops: tuple[Path, Path] | None = None  # (data, working root): made owner-only below them

    @classmethod
    def under(cls, data: Path, rel: str, env: Mapping[str, str] | None = None) -> EncryptedDir:
        """``data/<rel>``: worked on in place in a plain workspace, in memory in an
        encrypted one (``KeyMissing`` when its key is not to be had)."""
        stored = data / rel
        cipher = crypt.held_cipher(data / "log", env)
        if cipher is None:
            return cls(stored, stored)
        base = memory_base(env)
        return cls(stored, working_root(data, base) / rel, cipher, (data, base))

    @property
    def encrypted(self) -> bool:
        return self.cipher is not None

    def ready(self) -> Path:
        """The working folder, made and restored from its encrypted copies if need be (a plain
        one is left as it is: whoever writes there makes it, as before)."""
        if self.cipher is not None:
            _private_dirs(self.work, self._top(1))
            self.restore()
        return self.work

    def restore(self) -> None:
        """Working files missing (a reboot cleared them) come back from their encrypted copies."""
        if self.cipher is None or not self.stored.is_dir():
            return
        for path in _files(self.stored):
            rel = path.relative_to(self.stored)
            mine = self.work / rel
            if not mine.exists():
                _private_dirs(mine.parent, self._top(1))
                plain = crypt.open_bytes(fsio.read_bytes(path), path)
                fsio.write_private(mine, bytes(plain), site=_SITE, exclusive=False)

    def encrypt(self) -> None:
        """Every regular file of the working folder, encrypted into ``stored``; the encrypted
        files it no longer has, removed."""
        if self.cipher is None or not self.work.is_dir():
            return
        with self._locked():
            kept = {self._encrypt_one(path) for path in _files(self.work) if path.name != _LOCK}
            if self.stored.is_dir():
                for path in _files(self.stored):
                    if path.relative_to(self.stored) not in kept:
                        path.unlink(missing_ok=True)

    def _encrypt_one(self, path: Path) -> Path:
        assert self.cipher is not None
        rel = path.relative_to(self.work)
        target = self.stored / rel
        data = self.cipher.encrypt_file(fsio.read_bytes(path))
        same = target.is_file() and target.stat().st_size == len(data)
        if not (same and fsio.read_bytes(target) == data):
            _private_dirs(target.parent, self._top(0))
            fsio.write_private(target, data, site=_SITE, exclusive=False)
        return rel

    def _top(self, which: int) -> Path:
        assert self.tops is not None
        return self.tops[which]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with _THREAD_LOCK, open(self.work / _LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def enter(self) -> Path:
        """Begin a use of the working folder (the first use readies it); see :meth:`leave`."""
        with _THREAD_LOCK:
            users = _USERS.get(self.work, 0)
            if users == 0:
                self.ready()
            _USERS[self.work] = users + 1
        return self.work

    def leave(self) -> None:
        """End a use: encrypt what the working folder holds; the last use removes it (if that
        fails the folder stays, so nothing is lost)."""
        with _THREAD_LOCK:
            try:
                self.encrypt()
            finally:
                users = _USERS.pop(self.work, 1) - 1
                if users > 0:
                    _USERS[self.work] = users
            if users == 0:
                self.discard()

    @contextlib.contextmanager
    def working(self) -> Iterator[Path]:
        """The working folder for the length of the block (:meth:`enter`, :meth:`leave`)."""
        work = self.enter()
        try:
            yield work
        finally:
            self.leave()

    def discard(self) -> None:
        """Remove the working folder (its files are encrypted): plaintext leaves memory."""
        if self.cipher is not None:
            shutil.rmtree(self.work, ignore_errors=True)


def read_kept(data: Path, rel: str) -> bytes:
    """The plaintext of ``data/<rel>`` (``KeyMissing`` when it is encrypted and no key is had)."""
    path = data / rel
    raw = fsio.read_bytes(path)
    if not crypt.is_encrypted(data / "log"):
        return raw
    crypt.held_cipher(data / "log")  # unlocked here, from the environment, or a refusal
    return bytes(crypt.open_bytes(raw, path))


def kept_names(folder: Path) -> list[str]:
    """The files kept under ``folder``, relative and sorted (names need no key)."""
    if not folder.is_dir():
        return []
    return sorted(p.relative_to(folder).as_posix() for p in _files(folder))


def _files(folder: Path) -> Iterator[Path]:
    """Regular files under ``folder``, symlinks neither followed nor listed."""
    for top, dirs, names in os.walk(folder):
        for name in names:
            path = Path(top) / name
            if not path.is_symlink() and path.is_file():
                yield path
        dirs[:] = [d for d in dirs if not (Path(top) / d).is_symlink()]


def _private_dirs(path: Path, top: Path) -> None:
    """``path`` and each folder between ``top`` and it, owner-only."""
    chain = [path, *[p for p in path.parents if p.is_relative_to(top) and p != top]]
    for folder in reversed(chain):
        fsio.private_dir(folder)
