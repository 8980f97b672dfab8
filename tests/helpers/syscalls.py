"""Fail one durable syscall nerve makes, chosen by where in nerve's code it is made.

:func:`recording` patches ``os``'s durable calls (write, fsync, fdatasync, ftruncate,
rename, replace, unlink, mkdir, and opens that create or write) and lists every call
nerve's code makes, each named by the nearest line of nerve outside ``nerve/fsio.py``
(its *site*) and by which call of that site it was. :func:`failing` makes exactly one of
them raise ``OSError(errno)`` as a broken or full disk would. Calls made by anything but
nerve (pytest, the standard library on its own behalf) pass through untouched.

Unlike ``nerve.fsio.inject``, this needs no site name in the code: a durable call that
bypasses ``fsio`` is enumerated too.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NERVE = str(Path(__file__).resolve().parents[2] / "nerve") + os.sep
FSIO = NERVE + "fsio.py"
_VIA = ("pathlib.py", "shutil.py")  # stdlib helpers nerve calls these through
_CREATE = os.O_CREAT | os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND
DURABLE = ("write", "fsync", "fdatasync", "ftruncate", "rename", "replace", "unlink", "mkdir")


@dataclass
class Plan:
    """What the patched calls do: record every call, and fail the one at ``target``."""

    target: tuple[str, int] | None = None  # (site, nth call of it, from 1)
    err: int = 0
    sticky: bool = False  # once it fired, every later call fails too (the disk broke)
    where: Callable[[str], bool] | None = None  # else: fail every call at a matching site
    calls: list[str] = field(default_factory=list)  # sites, in call order
    counts: dict[str, int] = field(default_factory=dict)
    fired: bool = False

    def hit(self, site: str) -> bool:
        self.calls.append(site)
        self.counts[site] = self.counts.get(site, 0) + 1
        if self.where is not None:
            self.fired = self.fired or self.where(site)
            return self.where(site)
        if self.fired:
            return self.sticky
        self.fired = self.target == (site, self.counts[site])
        return self.fired


def _site(name: str) -> str | None:
    """The site of a call of ``os.<name>`` made now, or None when nerve did not make it."""
    frame = sys._getframe(2)
    if frame.f_code.co_filename.endswith(_VIA):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None or not frame.f_code.co_filename.startswith(NERVE):
        return None
    while frame is not None and frame.f_code.co_filename == FSIO:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None or not frame.f_code.co_filename.startswith(NERVE):
        return None
    rel = frame.f_code.co_filename[len(NERVE) - len("nerve/") :]
    return f"{rel}:{frame.f_lineno} {name}"


def _wrap(plan: Plan, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if name == "open" and not (len(args) > 1 and args[1] & _CREATE):
            return real(*args, **kwargs)
        site = _site(name)
        if site is not None and plan.hit(site):
            raise OSError(plan.err, f"{os.strerror(plan.err)} (injected at {site})")
        return real(*args, **kwargs)

    return call


@contextlib.contextmanager
def patched(plan: Plan) -> Iterator[Plan]:
    saved = {name: getattr(os, name) for name in (*DURABLE, "open")}
    try:
        for name, real in saved.items():
            setattr(os, name, _wrap(plan, name, real))
        yield plan
    finally:
        for name, real in saved.items():
            setattr(os, name, real)


def recording() -> contextlib.AbstractContextManager[Plan]:
    """Record every durable call nerve makes (fail none)."""
    return patched(Plan())


def failing(
    site: str, nth: int, err: int, *, sticky: bool = False
) -> contextlib.AbstractContextManager[Plan]:
    """Fail the ``nth`` call made at ``site`` with ``err``; every other call runs (with
    ``sticky``, every call after it fails too, as on a disk that broke there)."""
    return patched(Plan(target=(site, nth), err=err, sticky=sticky))


def failing_where(pred: Callable[[str], bool], err: int) -> contextlib.AbstractContextManager[Plan]:
    """Fail every call nerve makes at a site ``pred`` accepts (``"nerve/log/x.py:12 fsync"``)."""
    return patched(Plan(where=pred, err=err))


def instances(calls: list[str]) -> list[tuple[str, int]]:
    """Each call as (site, nth call of that site)."""
    seen: dict[str, int] = {}
    out = []
    for site in calls:
        seen[site] = seen.get(site, 0) + 1
        out.append((site, seen[site]))
    return out
