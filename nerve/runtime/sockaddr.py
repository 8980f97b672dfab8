"""The address ``bind`` and ``connect`` take for a Unix socket at any path.

A socket's address (``sun_path``) holds at most 107 bytes on Linux, 103 on macOS, while a
workspace, and so its socket, can be anywhere: a long user name or a deep folder is enough
to pass that. :func:`unix_address` is the one way nerve turns a socket's path into an
address: the path itself when it fits, else a short name for the socket's folder with the
socket's file name after it:

- on Linux, ``/proc/self/fd/N/<name>``, N this process's own descriptor of the folder, open
  for the length of the call: nothing is written anywhere, nothing is shared with another
  process, and threads do not disturb each other (``os.chdir`` would);
- where there is no ``/proc`` (macOS), a symlink to the folder in a folder only this user
  can enter (``$XDG_RUNTIME_DIR/nerve``, else ``nerve-<uid>`` in the temp folder), named by
  a hash of the folder's path and replaced atomically when it points elsewhere.

Everything else done to the socket (``lstat``, ``chmod``, ``unlink``, the inode check) takes
its real path, which the system accepts up to ``PATH_MAX``; a longer path is refused in one
line naming it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from nerve.errors import DaemonError, UnsafePath

# the bytes sun_path holds, its closing NUL included
SUN_PATH = 104 if sys.platform == "darwin" else 108
PROC_FDS = Path("/proc/self/fd")


def path_max() -> int:
    """The longest path, in bytes, this system accepts (``PATH_MAX``: 4096 on Linux)."""
    return os.pathconf("/", "PC_PATH_MAX")


def check_length(path: Path) -> None:
    """Refuse, in one line naming it, a socket path longer than any path can be."""
    size, limit = len(os.fsencode(path.absolute())), path_max()
    if size >= limit:
        raise DaemonError(
            f"socket path is {size} bytes, longer than this system takes for any path "
            f"(PATH_MAX {limit}): {path}",
            hint="set a shorter `daemon.socket` in nerve.yaml, or move the workspace",
        )


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """The address ``bind`` and ``connect`` accept for the socket at ``path``, good for the
    length of the block."""
    check_length(path)
    if len(os.fsencode(path)) < SUN_PATH:
        yield str(path)
        return
    folder = path.absolute().parent
    if PROC_FDS.is_dir():
        fd = os.open(folder, os.O_DIRECTORY | getattr(os, "O_PATH", os.O_RDONLY))
        try:
            yield _fitting(f"{PROC_FDS}/{fd}/{path.name}", path)
        finally:
            os.close(fd)
    else:
        link = folder_link(folder, runtime_dir())
        yield _fitting(f"{link}/{path.name}", path)


def _fitting(address: str, path: Path) -> str:
    """``address``, if it fits ``sun_path`` (a socket's file name of ~90 bytes does not)."""
    if len(os.fsencode(address)) >= SUN_PATH:
        raise DaemonError(
            f"socket file name {path.name!r} is too long for a Unix socket: {path}",
            hint="set a `daemon.socket` in nerve.yaml whose file name is short",
        )
    return address


def folder_link(folder: Path, links: Path) -> Path:
    """A short symlink in ``links`` to ``folder``, named by a hash of its path: reused while
    it points there, else made beside and renamed over it (never half made)."""
    import hashlib  # the links' modules: every client loads this one, few take this way
    import secrets

    link = links / hashlib.blake2b(os.fsencode(folder), digest_size=8).hexdigest()
    with contextlib.suppress(OSError):
        if os.readlink(link) == str(folder):
            return link
    spare = links / f".{link.name}.{secrets.token_hex(4)}"
    os.symlink(folder, spare)
    os.replace(spare, link)
    return link


def runtime_dir() -> Path:
    """This user's private folder for the links: ``$XDG_RUNTIME_DIR/nerve``, else
    ``nerve-<uid>`` in the temp folder; one that is not a real folder of this user's that
    only they can enter is refused."""
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(base, "nerve") if base else Path(tempfile.gettempdir(), f"nerve-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    mine = info.st_uid == os.getuid() and not info.st_mode & 0o077
    if not (stat.S_ISDIR(info.st_mode) and mine):
        raise UnsafePath(
            f"{folder}: is not a folder of this user's that only they can enter",
            hint="remove it; nerve makes it again",
        )
    return folder
