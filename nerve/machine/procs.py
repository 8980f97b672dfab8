"""Every process from one read of ``/proc/<pid>/stat`` each (Linux), as psutil would see it.

The fields are those psutil derives from the same file: the name (``comm``; psutil's rule
for names cut at 15 characters is kept), the start time (start ticks since boot plus the
boot time, so ``(pid, create_time)`` is the same key as psutil's), CPU seconds (user +
system) and resident bytes. A process that goes while it is read is skipped.
"""

from __future__ import annotations

import os
from typing import NamedTuple

_PROC = "/proc"
_NAME_CUT = 15  # the kernel's comm holds 15 characters


class ProcStat(NamedTuple):
    pid: int
    name: str
    create_time: float
    cpu_s: float
    rss_bytes: int


def available() -> bool:
    """Whether this host has a Linux-style /proc to read."""
    return os.path.exists(f"{_PROC}/self/stat") and _boot_time() is not None


def scan() -> list[ProcStat] | None:
    """Every readable process, or None where there is no Linux /proc."""
    boot = _boot_time()
    if boot is None:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    found: list[ProcStat] = []
    with os.scandir(_PROC) as entries:
        for entry in entries:
            if entry.name.isdigit():
                stat = _read_stat(entry.name, boot, ticks, page)
                if stat is not None:
                    found.append(stat)
    return found


def _read_stat(pid: str, boot: float, ticks: int, page: int) -> ProcStat | None:
    try:
        fd = os.open(f"{_PROC}/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None  # gone, or not ours to read
    try:
        raw = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        # comm may hold spaces and parentheses: it ends at the last ')'
        head, _, rest = raw.rpartition(b")")
        name = head.partition(b"(")[2].decode(errors="replace")
        fields = rest.split()
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        started = int(fields[19]) / ticks + boot
        rss = int(fields[21]) * page
    except (IndexError, ValueError):
        return None
    if len(name) == _NAME_CUT:  # longer ones are kernel workers, which have no command line
        name = _full_name(pid, name)
    return ProcStat(int(pid), name, started, cpu, rss)


def _full_name(pid: str, name: str) -> str:
    """psutil's rule: a cut name is completed from the command line's program, if it fits."""
    try:
        with open(f"{_PROC}/{pid}/cmdline", "rb") as f:
            first = f.read().split(b"\0", 1)[0].decode(errors="replace")
    except OSError:
        return name
    program = os.path.basename(first)
    return program if program.startswith(name) else name


def real_uid(pid: int) -> int | None:
    """The process's real user id (the first ``Uid:`` of its status), or None if gone."""
    try:
        with open(f"{_PROC}/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return None


def _boot_time() -> float | None:
    try:
        with open(f"{_PROC}/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime"):
                    return float(line.split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return None
