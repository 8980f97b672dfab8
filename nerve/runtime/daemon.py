"""Running the kernel as a daemon (the server half): start, stop, and its log.

The client half (pid, socket, one request) is ``nerve.transport``."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.abc
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from nerve import fsio
from nerve.commands.daemon import Stop
from nerve.errors import DaemonError
from nerve.runtime.children import adopt_orphans
from nerve.runtime.sockaddr import check_length
from nerve.transport import alive, call, pid_path, read_pid, run_path, running, socket_path
from nerve.workspace import WorkspaceDir

if TYPE_CHECKING:
    from nerve.runtime.journal import Recent
    from nerve.runtime.kernel import Kernel

View = Callable[["Kernel", "Recent"], Coroutine[Any, Any, None]]
"""Runs the kernel while drawing on this terminal (``nerve.dev.view.run_with_view``)."""

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
TAIL_BLOCK = 64 * 1024


def log_path(ws: WorkspaceDir) -> Path:
    return ws.data / "daemon.log"


def run_foreground(
    ws: WorkspaceDir, *, view: View | None = None, echo: TextIO | None = None
) -> None:
    """Run the kernel in this process until SIGTERM / SIGINT (or a `stop` request).

    The daemon's own log goes to ``data/daemon.log`` and to ``echo`` if given (a background
    daemon's stderr already is that file: it is not written twice); ``view`` runs the kernel
    drawing on this terminal instead (``nerve.dev.view.run_with_view``: nothing here draws).
    """
    keep_out(UNUSED_IN_DAEMON)
    # Arrow's own allocator keeps freed pages for reuse; the daemon's tables are small and
    # short-lived, so the system allocator costs nothing and returns ~6 MiB.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from nerve.runtime import journal
    from nerve.runtime.kernel import Kernel

    _refuse_second(ws)
    adopt_orphans()  # a killed worker's descendants come here, not to init (see groups)
    fsio.private_dir(ws.data, allow_link=True)
    fsio.write_small(pid_path(ws), f"{os.getpid()}\n".encode())
    kernel = Kernel(ws)
    record = {
        "pid": os.getpid(),
        "socket": str(kernel.socket_path),
        "max_request_bytes": kernel.config.daemon.max_request_bytes,
    }
    fsio.write_small(run_path(ws), json.dumps(record).encode())
    encrypt = _line_encrypter(ws)
    try:
        with journal.journal(log_path(ws), *([echo] if echo else []), encrypt=encrypt) as recent:
            if encrypt is not None and journal.same_file(sys.stderr, log_path(ws)):
                _relay_stdio()  # a background daemon: its stderr is the log file
            main = view(kernel, recent) if view is not None else kernel.run_until_stopped()
            asyncio.run(_settled(kernel, main))
    finally:
        with contextlib.suppress(FileNotFoundError):
            if read_pid(ws) in (None, os.getpid()):
                run_path(ws).unlink(missing_ok=True)
                pid_path(ws).unlink()


async def _settled(kernel: Kernel, main: Coroutine[Any, Any, None]) -> None:
    """Run ``main``; once the kernel is ready, freeze the heap it was built with."""
    settle = asyncio.create_task(_freeze_when_ready(kernel))
    try:
        await main
    finally:
        settle.cancel()


async def _freeze_when_ready(kernel: Kernel) -> None:
    """What start-up built (modules, config, sense code) lives as long as the daemon; a full
    collection walks all of it, about 70 ms on a 2-core machine, stalling every timer each
    time. Frozen, a full collection walks only what was made since."""
    import gc

    await kernel.ready.wait()
    gc.collect()
    gc.freeze()


def _line_encrypter(ws: WorkspaceDir) -> Callable[[str], str] | None:
    """How an encrypted workspace's daemon writes its log lines: encrypted, one per line."""
    from functools import partial

    from nerve.log import crypt

    cipher = crypt.cipher_for(ws.log_root)
    return None if cipher is None else partial(crypt.encrypt_line, cipher)


def _relay_stdio() -> None:
    """Send what this process writes on stdout/stderr (a background daemon's are the log
    file) through the encrypted journal, so no plaintext reaches the file."""
    import threading

    from nerve.runtime import journal

    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(write_fd, 1)
    os.dup2(write_fd, 2)
    os.close(write_fd)

    def pump() -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            for raw in pipe:
                journal.say("stderr: " + raw.decode(errors="replace").rstrip("\n"))

    threading.Thread(target=pump, name="stdio-relay", daemon=True).start()


def decrypt_lines(ws: WorkspaceDir, lines: list[str]) -> list[str]:
    """Daemon log lines as a person reads them: encrypted ones opened with the key if given."""
    from nerve.log import crypt

    if not any(line.startswith(crypt.LINE_TAG) for line in lines):
        return lines
    with contextlib.suppress(crypt.KeyMissing):
        crypt.cipher_for(ws.log_root)
    return [crypt.decrypt_line(line) for line in lines]


# Libraries the daemon never calls but would load anyway: pyarrow probes for pandas the
# first time it builds an array (to see whether it was handed a DataFrame), which costs the
# daemon ~36 MiB for nothing.
UNUSED_IN_DAEMON = ("pandas",)


class _KeepOut(importlib.abc.MetaPathFinder):
    """An import finder that answers "not installed" for some top-level packages."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"{name} is not loaded in the daemon", name=name)


def keep_out(names: tuple[str, ...]) -> None:
    """Make ``names`` unimportable in this process (libraries that probe for them treat
    them as absent); a package already imported stays as it is."""
    missing = tuple(n for n in names if n not in sys.modules)
    if missing and not any(isinstance(f, _KeepOut) for f in sys.meta_path):
        sys.meta_path.insert(0, _KeepOut(missing))


def _refuse_second(ws: WorkspaceDir) -> None:
    pid = read_pid(ws)
    if pid is not None and pid != os.getpid() and running(ws):
        raise DaemonError(
            f"a daemon is already running for {ws.root} (pid {pid})",
            hint="`nerve status` shows it; `nerve stop` stops it",
        )


def start_background(ws: WorkspaceDir) -> int:
    """Start ``nerve daemon run`` detached; return its pid once it answers on the socket."""
    if ws.config_path.exists():
        _ = ws.config  # a bad nerve.yaml fails here, before anything starts
    check_length(socket_path(ws))  # so does a socket no path can name
    _refuse_second(ws)
    env = unlock_env(ws)
    fsio.private_dir(ws.data, allow_link=True)
    with os.fdopen(fsio.open_append(log_path(ws)), "ab") as logfile:
        proc = subprocess.Popen(
            [sys.executable, "-m", "nerve", "--workspace", str(ws.root), "daemon", "run"],
            stdin=subprocess.DEVNULL,
            stdout=logfile,
            stderr=logfile,
            cwd=ws.root,
            start_new_session=True,
            env=env,
        )
    try:
        return _wait_started(ws, proc)
    except BaseException:
        proc.kill()  # never leave a half-started daemon behind
        proc.wait()
        raise


def unlock_env(ws: WorkspaceDir) -> dict[str, str]:
    """The environment a background daemon starts with. An encrypted workspace is unlocked
    here first (``NERVE_KEY_FILE``, ``NERVE_PASSPHRASE``, or a passphrase asked on this
    terminal), so a wrong or missing key fails now, in one line, and the daemon is given
    the passphrase in its own environment (readable only by this user)."""
    import getpass

    from nerve.log import crypt

    env = dict(os.environ)
    if not crypt.is_encrypted(ws.log_root):
        return env
    ring = crypt.read_keyring(ws.log_root)
    given = env.get(crypt.ENV_KEY_FILE) or env.get(crypt.ENV_PASSPHRASE)
    asks = (ring.get("kek") or {}).get("kind") == "passphrase" and sys.stdin.isatty()
    if not given and asks:
        env[crypt.ENV_PASSPHRASE] = getpass.getpass(f"passphrase for {ws.root}: ")
    crypt.cipher_for(ws.log_root, env)  # KeyMissing / WrongKey / KeyFileError, before starting
    return env


def _wait_started(ws: WorkspaceDir, proc: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DaemonError(
                f"the daemon exited with code {proc.returncode} while starting:\n" + _last_words(ws)
            )
        if running(ws):
            return proc.pid
        time.sleep(0.1)
    raise DaemonError("the daemon did not answer within 60 s:\n" + _last_words(ws))


def _last_words(ws: WorkspaceDir) -> str:
    """The daemon log's last lines, opened if encrypted and the key is at hand."""
    return "\n".join(decrypt_lines(ws, tail_text(log_path(ws), 15).splitlines()))


def stop(ws: WorkspaceDir) -> int | None:
    """Ask the daemon to stop; escalate to SIGTERM, then SIGKILL. Returns the pid stopped."""
    pid = read_pid(ws)
    if pid is None and not running(ws):
        return None
    with contextlib.suppress(DaemonError):
        call(ws, Stop().to_json(), timeout=5)
    if pid is None:
        return None
    for sig, wait_s in ((None, STOP_TIMEOUT_S), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if sig is not None and alive(pid):
            os.kill(pid, sig)
        if _wait_gone(pid, wait_s):
            break
    with contextlib.suppress(FileNotFoundError):
        run_path(ws).unlink(missing_ok=True)
        pid_path(ws).unlink()
    return pid


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return not alive(pid)


def tail_text(path: Path, lines: int) -> str:
    """The last ``lines`` lines of the daemon's log."""
    try:
        with path.open("rb") as handle:
            return "\n".join(_last_lines(handle, lines))
    except FileNotFoundError:
        return "(no daemon log yet)"


def log_page(path: Path, lines: int, offset: int) -> tuple[list[str], int | None]:
    """``lines`` lines of the daemon's log ending ``offset`` lines before its end, and the
    offset of the page before them (``None`` when this page starts at the first line)."""
    try:
        with path.open("rb") as handle:
            found = _last_lines(handle, lines + offset + 1)
    except FileNotFoundError:
        return [], None
    kept = found[: len(found) - offset] if offset else found
    earlier = len(kept) > lines
    return kept[-lines:] if lines > 0 else [], (offset + lines) if earlier else None


def _last_lines(handle: BinaryIO, count: int) -> list[str]:
    """The last ``count`` lines, reading back from the end in blocks (a log grows large);
    leaves ``handle`` at the end."""
    end = handle.seek(0, os.SEEK_END)
    start, data = end, b""
    while start > 0 and data.count(b"\n") <= count:
        start = max(0, start - TAIL_BLOCK)
        handle.seek(start)
        data = handle.read(end - start)
    handle.seek(end)
    found = data.decode(errors="replace").splitlines()[1 if start > 0 else 0 :]
    return found[-count:] if count > 0 else []


def follow_log(path: Path, *, lines: int, poll_s: float = 0.2) -> Iterator[str]:
    """The last ``lines`` lines, then each line as it is written (waits for the file)."""
    while not path.exists():
        time.sleep(poll_s)
    with path.open("rb") as handle:
        yield from _last_lines(handle, lines)
        partial = b""
        while True:
            chunk = handle.readline()
            if chunk.endswith(b"\n"):
                yield (partial + chunk).decode(errors="replace").rstrip("\n")
                partial = b""
            elif chunk:  # a line still being written
                partial += chunk
            else:
                time.sleep(poll_s)
