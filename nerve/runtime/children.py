"""Worker processes the kernel owns: outside its process group, deaf to Ctrl+C.

A terminal sends Ctrl+C (SIGINT) to its whole foreground process group, and a service
manager may send SIGTERM to a whole group too. Those are meant for the kernel, which then
stops its workers in order; a worker that took them itself would die mid-compute, with a
``KeyboardInterrupt`` traceback. So workers run in their own process group, and start
with SIGINT ignored.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from typing import Any

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Hold SIGINT and SIGTERM in this thread while a worker is spawned.

    A child is in our process group until it moves to its own, and a signal sent to the
    group in between would end it. Held, such a signal waits in the child (which inherits
    the mask) until :func:`detach` drops it; here it waits for the block's end, or another
    thread takes it.
    """
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def detach() -> None:
    """First thing in a worker: ignore SIGINT, drop a stop signal held since the spawn
    (it was meant for the kernel's group), and take SIGTERM again."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    term = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ignoring discards a held one
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    signal.signal(signal.SIGTERM, term)


# The kernel's word to a sense worker that its compute ran past its timeout.
CANCEL_SIGNAL = signal.SIGUSR1


def adopt_orphans() -> None:
    """Become the subreaper of this process's descendants (Linux).

    In a worker: a sense's child that detaches (``setsid()`` and its parent gone) stays
    under the worker, where :func:`end_descendants` finds it, instead of passing to init and
    outliving its group. In the daemon: the tree of a worker that was itself killed passes
    to the daemon, where :func:`end_adopted` ends it."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


# Each sense worker gets its own mark in this variable; its descendants inherit it.
WORKER_MARK = "NERVE_WORKER_MARK"


def new_mark() -> str:
    import secrets

    return secrets.token_hex(8)


def end_adopted(mark: str, group: int, ended: Iterable[int] = ()) -> int:
    """In the daemon, after a sense worker is gone: SIGKILL and reap what the daemon (a
    subreaper, see :func:`adopt_orphans`) adopted from it, with their descendants; how many.

    A worker that was itself killed cannot end its tree, and the tree passes to the daemon.
    Its members are known by the worker's ``mark`` in their environment, by the worker's
    process group (``group``), or as ``ended`` (what :func:`end_descendants` killed: dead,
    they show neither); only those are touched: the daemon's other children (workers,
    checks) are waited on by whoever started them.
    """
    if not sys.platform.startswith("linux"):
        return 0
    import psutil  # here: only the daemon stops workers

    doomed: set[int] = set(ended)
    for _ in range(8):  # a killed child's own children pass to us in turn: reap them too
        found = [c for c in _children(psutil) if c.pid in doomed or _carries(c, mark, group)]
        if not found:
            break
        for child in found:
            with contextlib.suppress(psutil.Error):
                tree = child.children(recursive=True)
                doomed.update(p.pid for p in tree)
                for proc in tree:
                    with contextlib.suppress(psutil.Error):
                        proc.kill()
            doomed.add(child.pid)
            with contextlib.suppress(psutil.Error):
                child.kill()
        for child in found:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)  # SIGKILLed: this returns at once
    return len(doomed)


def _children(psutil: Any) -> list[Any]:
    try:
        return list(psutil.Process().children())
    except psutil.Error:
        return []


def _carries(proc: Any, mark: str, group: int) -> bool:
    import psutil

    with contextlib.suppress(OSError):
        if os.getpgid(proc.pid) == group:
            return True
    try:
        return bool(proc.environ().get(WORKER_MARK) == mark)
    except psutil.Error:
        return False


def end_descendants(pid: int) -> set[int]:
    """SIGKILL every process under ``pid`` (not ``pid`` itself); the pids ended.
    Twice, for a child forked while the first pass ran."""
    import psutil  # here: only the daemon stops workers

    ended: set[int] = set()
    for _ in range(2):
        try:
            tree = psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            return ended
        for proc in tree:
            with contextlib.suppress(psutil.Error):
                proc.kill()
                ended.add(proc.pid)
    return ended


_PR_SET_CHILD_SUBREAPER = 36
