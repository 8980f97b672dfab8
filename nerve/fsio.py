"""Every durable write nerve makes goes through here: owner-only, no symlinks, named sites.

Three guarantees for the files under a workspace's ``data/``:

- **Owner-only.** Files are created 0600 and folders 0700 whatever the umask; a folder that
  already exists is tightened to 0700.
- **No symlinks followed, nothing but regular files opened.** Files are opened with
  ``O_NOFOLLOW`` and ``O_NONBLOCK`` and folders are checked with ``lstat``: a symlink planted
  at a path nerve writes is refused with :class:`UnsafePath`, never written through, and so
  is a FIFO or device at once (an ``open`` of a FIFO would otherwise wait forever).
- **Named write sites.** Each write, fsync, truncate and rename carries a site name from
  :data:`SITES`. Tests install a fault for a site (:func:`inject`) to make that one call fail
  as a full or broken disk would, so every site's failure path is exercised. A test walks
  the code for site names, so a new site must be listed here and gets a fault test.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nerve.errors import UnsafePath

FILE_MODE = 0o600
DIR_MODE = 0o700

# Every durable write site, by path: where nerve writes, syncs, truncates or renames.
SITES: tuple[str, ...] = (
    "wal.create",  # a new WAL generation's header
    "wal.write",  # one frame of an append
    "wal.fsync",  # an append made durable
    "wal.truncate",  # cutting a failed append (or a torn tail) back to the last good frame
    "segment.write",  # a sealed or compacted segment's temp file
    "segment.fsync",
    "segment.rename",  # temp file → <blake3>.parquet
    "segment.dirsync",
    "manifest.write",  # one hash-chained record
    "manifest.fsync",
    "manifest.truncate",  # cutting a torn or failed record back off
    "manifest.dirsync",  # the manifest file's creation made durable
    "wal.dirsync",  # a new generation, or dropped ones, made durable in the folder
    "wal.unlink",  # sealed generations dropped
    "segment.unlink",  # segments compacted, erased or archived away, after the reader grace
    "archive.write",  # a segment copied into an archive folder (its temp file)
    "archive.fsync",
    "archive.rename",  # temp file → <blake3>.parquet in the archive, then its folder synced
    "archive.dirsync",
    "quarantine.move",  # damaged or unaccounted files moved aside, never deleted
    "key.write",  # a chain signing key
    "keyring.write",  # an encrypted log's wrapped data key (new, rotated) or a new key file
    "trust.write",  # a verifier's trust record (pinned key, last checkpoint)
    "mcp.token",  # the bearer token `nerve mcp --http` requires
    "ui.token",  # the login token `nerve ui` prints
    "fleet.write",  # an object in a local fleet warehouse, or fleet state (its temp file)
    "fleet.fsync",
    "config",  # nerve.yaml rewritten by a person's edit from the UI (categories)
    "seal.keys",  # a seal set-up's public epoch keys
    "seal.setup",  # a seal set-up's seed record (written last: it marks a set-up whole)
    "seal.state",  # the forward-secure state, overwritten in place each epoch
    "seal.append",  # one epoch seal appended to its notes file
    "witness.write",  # a witness's memory of what it cosigned, and its cosigned notes
    "sync.key",  # a sync group's key
    "sync.group",  # a sync group's description (written after the key: it marks a join)
    "sync.state",  # what this device has sent to its group
    "sync.device",  # a peer's device name, as its status box gave it
    "sync.digest",  # the shared digest's running sums (rebuilt from the logs when lost)
)


@dataclass
class _Fault:
    site: str
    errno: int
    after: int  # calls of the site that succeed before the fault fires
    times: int  # how many calls fail once it fires (-1: until cleared)
    partial: bool  # a write puts half its bytes down before failing, as a full disk does
    hits: int = 0
    fired: int = 0


_faults: dict[str, _Fault] = {}


@contextlib.contextmanager
def inject(
    site: str,
    *,
    err: int = errno.ENOSPC,
    after: int = 0,
    times: int = 1,
    partial: bool = True,
) -> Iterator[_Fault]:
    """Make calls at ``site`` fail with ``err`` (for tests); yields the fault's counters."""
    if site not in SITES:
        raise ValueError(f"unknown write site {site!r}")
    fault = _Fault(site, err, after, times, partial)
    _faults[site] = fault
    try:
        yield fault
    finally:
        _faults.pop(site, None)


def _check(site: str) -> _Fault | None:
    """The fault to raise at this call of ``site``, if one is installed and due."""
    fault = _faults.get(site) if _faults else None
    if fault is None:
        return None
    fault.hits += 1
    if fault.hits <= fault.after or (0 <= fault.times <= fault.fired):
        return None
    fault.fired += 1
    return fault


def _raise(fault: _Fault, path: Path | str) -> None:
    raise OSError(fault.errno, f"{os.strerror(fault.errno)} (injected at {fault.site})", str(path))


def hit(site: str, path: Path | str) -> None:
    """A fault point with no syscall of its own (a rename, an fsync)."""
    fault = _check(site)
    if fault is not None:
        _raise(fault, path)


# -- folders and files -------------------------------------------------------------------


def private_dir(path: Path, *, allow_link: bool = False) -> Path:
    """Make ``path`` (parents too) a real, owner-only folder; refuse a symlink there.

    ``allow_link``: the folder may be a link a person made on purpose (a workspace's
    ``data`` moved to another disk); nothing under it may be.
    """
    path = Path(path)
    try:
        info = os.stat(path) if allow_link else os.lstat(path)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, DIR_MODE)
        info = os.stat(path) if allow_link else os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        what = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a folder"
        raise UnsafePath(
            f"{path}: is {what}; nerve keeps its data in real folders only",
            hint="move it aside and let nerve recreate the folder",
        )
    if stat.S_IMODE(info.st_mode) != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


def open_file(path: Path, flags: int) -> int:
    """``os.open`` with ``O_NOFOLLOW``, mode 0600 and (for an existing file) 0600 enforced."""
    fd = _open_nofollow(path, flags)
    try:
        info = os.fstat(fd)
        if stat.S_IMODE(info.st_mode) != FILE_MODE and flags & (os.O_WRONLY | os.O_RDWR):
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_nofollow(path: Path, flags: int) -> int:
    """Open a regular file only: a link is refused, and so is a FIFO or device, at once
    (``O_NONBLOCK`` keeps the ``open`` of a FIFO from waiting for its other end)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(
                f"{path}: is a symlink; nerve neither reads nor writes its files through links",
                hint="remove the link",
            ) from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO with no reader, a folder
            raise _not_regular(path) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_regular(path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_regular(path: Path) -> UnsafePath:
    return UnsafePath(
        f"{path}: is not a regular file (a FIFO, device or folder); nerve reads none",
        hint="move it aside",
    )


def is_regular(path: Path) -> bool:
    """True for a regular file at ``path`` (not a symlink, FIFO, device or folder)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def unlink(path: Path, *, site: str, missing_ok: bool = False) -> None:
    """Delete a file at a named site."""
    hit(site, path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        if not missing_ok:
            raise


def write_all(fd: int, data: bytes | memoryview, *, site: str, path: Path | str) -> None:
    """Write every byte or raise; an injected fault may leave half the bytes written."""
    view = memoryview(data)
    fault = _check(site)
    if fault is not None:
        if fault.partial and len(view) > 1:
            os.write(fd, view[: len(view) // 2])
        _raise(fault, path)
    while view:
        view = view[os.write(fd, view) :]


def fsync(fd: int, *, site: str, path: Path | str, data_only: bool = False) -> None:
    hit(site, path)
    (os.fdatasync if data_only else os.fsync)(fd)


def truncate(fd: int, size: int, *, site: str, path: Path | str) -> None:
    hit(site, path)
    os.ftruncate(fd, size)


def rename(src: Path, dst: Path, *, site: str) -> None:
    hit(site, dst)
    os.replace(src, dst)


def fsync_dir(path: Path, *, site: str | None = None) -> None:
    if site is not None:
        hit(site, path)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes, *, site: str, exclusive: bool = True) -> None:
    """Write a small owner-only file durably: new (``exclusive``) or atomically replaced;
    either way its folder is synced after, so the name survives a crash too."""
    if exclusive:
        _write_new(path, data, site=site)
    else:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        try:
            _write_new(tmp, data, site=site)
            rename(tmp, path, site=site)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    fsync_dir(path.parent)


def _write_new(path: Path, data: bytes, *, site: str) -> None:
    """A new file (``O_EXCL``) with ``data``, synced; removed if the write fails."""
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        write_all(fd, data, site=site, path=path)
        os.fsync(fd)
    except BaseException:
        os.unlink(path)  # ours (O_EXCL): a half-written file must not look like a key
        raise
    finally:
        os.close(fd)


def replace_unsynced(path: Path, data: bytes, *, site: str) -> None:
    """Replace a small owner-only file that only saves work (a cache, a mark that may fall
    back) atomically, by renaming a new file over it, without ``fsync``: a crash may leave
    the older copy, which its reader must take (or none)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        write_all(fd, data, site=site, path=tmp)
    finally:
        os.close(fd)
    try:
        rename(tmp, path, site=site)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_small(path: Path, data: bytes) -> None:
    """Replace a small runtime file (a pid file) owner-only, never through a symlink."""
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def open_append(path: Path) -> int:
    """An owner-only file opened for appending (a daemon's log), never through a symlink."""
    return open_file(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)


def open_read(path: Path) -> int:
    """A regular file opened for reading (never a link, FIFO or device)."""
    return _open_nofollow(path, os.O_RDONLY)


def read_bytes(path: Path) -> bytes:
    """A file's bytes, refusing to follow a symlink or to open anything but a regular file."""
    fd = _open_nofollow(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def is_socket(path: Path) -> bool | None:
    """True for a socket, False for anything else there, None when nothing is there."""
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None
