"""Worker processes the kernel owns: outside its process group, deaf to Ctrl+C.

A terminal sends Ctrl+C (SIGINT) to its whole foreground process group, and a service
manager may send SIGTERM to a whole group too. Those are meant for the kernel, which then
stops its workers in order; a worker that took them itself would die mid-compute, with a
``KeyboardInterrupt`` traceback. So workers run in their own process group, and start
with SIGINT ignored.
"""

from __future__ import annotations

import contextlib
import signal
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
