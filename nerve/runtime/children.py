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
import signal
import sys
from collections.abc import Iterator

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
    """In a worker: become the subreaper of its descendants (Linux), so a sense's child
    that detaches (``setsid()`` and its parent gone) stays under the worker, where
    :func:`end_descendants` finds it, instead of passing to init and outliving its group."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def end_descendants(pid: int) -> int:
    """SIGKILL every process under ``pid`` (not ``pid`` itself); how many were ended.
    Twice, for a child forked while the first pass ran."""
    import psutil  # here: only the daemon stops workers

    ended = 0
    for _ in range(2):
        try:
            tree = psutil.Process(pid).children(recursive=True)
        except psutil.Error:
            return ended
        for proc in tree:
            with contextlib.suppress(psutil.Error):
                proc.kill()
                ended += 1
    return ended


_PR_SET_CHILD_SUBREAPER = 36
