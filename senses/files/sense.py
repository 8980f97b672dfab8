"""File changes under the workspace, watched by ``watchfiles`` in a background thread.

Source class ``file_change``, trust ``FirstParty`` (inotify / FSEvents / ReadDirectoryChangesW
through watchfiles). The first compute starts a daemon thread that collects changes; each
compute drains them, coalesces them per path (see :func:`coalesce`) and emits one observation
per changed path, ``{"path": <workspace-relative, posix>, "change": added|modified|deleted}``,
up to ``max_per_compute``, then one summary observation for the rest.

Changes made while no watcher runs (before the first compute, between worker restarts) are
not seen: the thread is the sense's eyes, and state only records what it is watching.

Options: ``paths`` (default ``["."]``, relative to the workspace), ``ignore`` (globs against
the workspace-relative path, default ``data/**``, ``.git/**``, ``**/__pycache__/**``,
``.venv/**``; ``**`` spans folders, ``*`` does not, a glob without ``/`` matches at any
depth), ``debounce_ms`` (300), ``max_per_compute`` (100), ``default_filter`` (true: also
drop editor swap files and tool caches, as ``watchfiles.DefaultFilter`` does),
``force_polling`` (null: watchfiles decides), ``max_pending`` (10000 changes held between
computes; older ones are dropped and counted).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePath
from typing import Any, NamedTuple

import watchfiles

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust

initial_state: dict[str, Any] = {
    "watching": [],
    "missing": [],
    "ready": False,
    "changes": 0,
    "error": None,
}

DEFAULT_IGNORE = ["data/**", ".git/**", "**/__pycache__/**", ".venv/**"]
_RUST_TIMEOUT_MS = 200  # how often an idle watcher wakes (and proves it is set up)
# watchfiles' polling step (its 50 ms default wakes the thread 20 times a second); a burst of
# changes is handed over once a step passes without new ones
_STEP_MS = 500
_NET_CHANGE = {
    (True, True): "modified",
    (False, True): "added",
    (True, False): "deleted",
}


def coalesce(changes: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Net change per path over a window of ``(change, path)`` pairs, in first-seen order.

    A path's first change says whether it existed before the window (anything but ``added``),
    its last whether it exists after (anything but ``deleted``). Existed and exists:
    ``modified``; appeared: ``added``; vanished: ``deleted``; added then deleted: nothing.
    """
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    for change, path in changes:
        if change not in ("added", "modified", "deleted"):
            raise ValueError(f"unknown change {change!r} for {path!r}")
        first.setdefault(path, change)
        last[path] = change
    net = {
        path: _NET_CHANGE.get((first[path] != "added", last[path] != "deleted")) for path in first
    }
    return {path: change for path, change in net.items() if change is not None}


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    opts = _options(ctx)
    workspace = ctx.workspace.resolve()
    roots, missing = _roots(workspace, opts.paths)
    pending, dropped, error = _drain(ctx.name)
    watcher = _ensure_watcher(ctx.name, workspace, roots, opts) if roots else None
    observations, changed = _observations(pending, dropped, opts.max_per_compute)
    new_state = {
        "watching": [_relative(workspace, r) for r in roots],
        "missing": missing,
        "ready": bool(watcher and watcher.ready.is_set()),
        "changes": int(state.get("changes") or 0) + changed,
        "error": error,
    }
    return Result(state=new_state, observations=observations)


def stop_watchers() -> None:
    """Stop every watcher thread this module started (for tests and shutdown)."""
    with _REGISTRY_LOCK:
        for watcher in _WATCHERS.values():
            watcher.stop.set()
        _WATCHERS.clear()


class _Options(NamedTuple):
    paths: list[str]
    ignore: list[str]
    debounce_ms: int
    max_per_compute: int
    max_pending: int
    default_filter: bool
    force_polling: bool | None


def _options(ctx: SenseContext) -> _Options:
    return _Options(
        paths=_str_list(ctx, "paths", ["."]),
        ignore=_str_list(ctx, "ignore", DEFAULT_IGNORE),
        debounce_ms=_int(ctx, "debounce_ms", 300, minimum=1),
        max_per_compute=_int(ctx, "max_per_compute", 100, minimum=1),
        max_pending=_int(ctx, "max_pending", 10_000, minimum=1),
        default_filter=bool(_bool(ctx, "default_filter", True)),
        force_polling=_bool(ctx, "force_polling", None),
    )


def _str_list(ctx: SenseContext, key: str, default: list[str]) -> list[str]:
    value = ctx.options.get(key, default)
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(
            f"senses.{ctx.name}.options.{key} must be a list of strings, got {value!r}"
        )
    return list(value)


def _int(ctx: SenseContext, key: str, default: int, minimum: int) -> int:
    value = ctx.options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(
            f"senses.{ctx.name}.options.{key} must be an integer >= {minimum}, got {value!r}"
        )
    return value


def _bool(ctx: SenseContext, key: str, default: bool | None) -> bool | None:
    value = ctx.options.get(key, default)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"senses.{ctx.name}.options.{key} must be true or false, got {value!r}")
    return value


def _roots(workspace: Path, paths: list[str]) -> tuple[list[Path], list[str]]:
    """Existing watch roots (resolved, deduplicated) and the configured paths that are missing."""
    roots: list[Path] = []
    missing: list[str] = []
    for path in paths:
        root = (workspace / Path(path).expanduser()).resolve()
        if not root.exists():
            missing.append(path)
        elif root not in roots:
            roots.append(root)
    return roots, missing


def _relative(workspace: Path, path: str | Path) -> str:
    """``path`` relative to the workspace in posix form; absolute if it lies outside."""
    pure = PurePath(path)
    try:
        return pure.relative_to(workspace).as_posix() or "."
    except ValueError:
        return pure.as_posix()


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile an ignore glob: ``**`` spans folders, ``*`` and ``?`` stay within one name."""
    pieces = {"**/": "(?:.*/)?", "/**": "(?:/.*)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    tokens = re.split(r"(\*\*/|/\*\*$|\*\*|\*|\?)", pattern.strip("/"))
    body = "".join(pieces.get(t, re.escape(t)) for t in tokens)
    prefix = "" if "/" in pattern.rstrip("/") else "(?:.*/)?"
    return re.compile(f"{prefix}{body}(?:/.*)?")


def _make_filter(workspace: Path, opts: _Options) -> Callable[[watchfiles.Change, str], bool]:
    ignore = [glob_regex(p) for p in opts.ignore]
    default = watchfiles.DefaultFilter() if opts.default_filter else None

    def accept(change: watchfiles.Change, path: str) -> bool:
        rel = _relative(workspace, path)
        if any(rx.fullmatch(rel) for rx in ignore):
            return False
        return default is None or default(change, rel)

    return accept


class _Watcher:
    """A daemon thread running ``watchfiles.watch`` and queueing what it sees."""

    def __init__(self, key: tuple[Any, ...], roots: list[Path], workspace: Path, opts: _Options):
        self.key = key
        self.workspace = workspace
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.error: str | None = None
        self.dropped = 0
        self._lock = threading.Lock()
        self._pending: deque[tuple[str, str, int]] = deque(maxlen=opts.max_pending)
        self._accept = _make_filter(workspace, opts)
        self._thread = threading.Thread(
            target=self._run, args=(roots, opts), daemon=True, name="nerve-sense-files"
        )
        self._thread.start()

    def _run(self, roots: list[Path], opts: _Options) -> None:
        try:
            for batch in watchfiles.watch(
                *roots,
                watch_filter=self._accept,
                debounce=opts.debounce_ms,
                step=min(_STEP_MS, opts.debounce_ms),
                stop_event=self.stop,
                rust_timeout=_RUST_TIMEOUT_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
                force_polling=opts.force_polling,
            ):
                self.ready.set()
                self._push(batch)
        except Exception as exc:  # the thread must end with a reason, never silently
            self.error = f"watcher stopped: {type(exc).__name__}: {exc}"
        self.ready.clear()

    def _push(self, batch: set[tuple[watchfiles.Change, str]]) -> None:
        now = time.time_ns()
        expanded = [
            item
            for c, p in sorted(batch, key=lambda i: (i[1], i[0]))
            for item in self._expand(c, p)
        ]
        with self._lock:
            for change, path in expanded:
                if len(self._pending) == self._pending.maxlen:
                    self.dropped += 1
                self._pending.append((change, _relative(self.workspace, path), now))

    def _expand(self, change: watchfiles.Change, path: str) -> Iterator[tuple[str, str]]:
        """Files, not folders: a new folder stands for the files already in it (created before
        the OS watch on it existed, so never reported); a folder's own metadata change is noise."""
        if change == watchfiles.Change.deleted or not os.path.isdir(path):
            yield change.name, path
            return
        if change != watchfiles.Change.added:
            return
        for top, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if self._accept(change, os.path.join(top, d))]
            for name in files:
                if self._accept(change, os.path.join(top, name)):
                    yield "added", os.path.join(top, name)

    def drain(self) -> tuple[list[tuple[str, str, int]], int]:
        with self._lock:
            items, dropped = list(self._pending), self.dropped
            self._pending.clear()
            self.dropped = 0
        return items, dropped

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self.stop.is_set()


_WATCHERS: dict[str, _Watcher] = {}
_REGISTRY_LOCK = threading.Lock()


def _drain(name: str) -> tuple[list[tuple[str, str, int]], int, str | None]:
    """What this sense's watcher has queued since the last compute, and its error if it died."""
    with _REGISTRY_LOCK:
        watcher = _WATCHERS.get(name)
    if watcher is None:
        return [], 0, None
    items, dropped = watcher.drain()
    return items, dropped, None if watcher.alive else watcher.error


def _ensure_watcher(name: str, workspace: Path, roots: list[Path], opts: _Options) -> _Watcher:
    """The running watcher for this configuration; replaces one that died or was reconfigured."""
    key = (
        str(workspace),
        tuple(map(str, roots)),
        tuple(opts.ignore),
        opts.debounce_ms,
        opts.max_pending,
        opts.default_filter,
        opts.force_polling,
    )
    with _REGISTRY_LOCK:
        current = _WATCHERS.get(name)
        if current is not None and current.key == key and current.alive:
            return current
        if current is not None:
            current.stop.set()  # it notices within one watchfiles step; no join, no blocking
        _WATCHERS[name] = _Watcher(key, roots, workspace, opts)
        return _WATCHERS[name]


def _observations(
    pending: list[tuple[str, str, int]], dropped: int, cap: int
) -> tuple[list[Observation], int]:
    """One observation per changed path up to ``cap``, a summary past it; and the path count."""
    net = coalesce((change, path) for change, path, _ in pending)
    seen_at = {path: t for _, path, t in pending}
    items = list(net.items())
    observations = [_change_observation(p, c, seen_at[p]) for p, c in items[:cap]]
    if len(items) > cap or dropped:
        observations.append(_summary(items[cap:], len(items), dropped))
    return observations, len(items)


def _change_observation(path: str, change: str, seen_ns: int) -> Observation:
    return Observation(
        source=SourceClass.FILE_CHANGE,
        line=f"file {change} {path}",
        payload={"path": path, "change": change},
        trust=Trust.FIRST_PARTY,
        valid_time_ns=seen_ns,
    )


def _summary(omitted: list[tuple[str, str]], total: int, dropped: int) -> Observation:
    by_change = dict(sorted(Counter(change for _, change in omitted).items()))
    line = f"files: {len(omitted)} more changed paths not listed ({total} in all)"
    if dropped:
        line += f"; {dropped} raw changes dropped while waiting"
    return Observation(
        source=SourceClass.FILE_CHANGE,
        line=line,
        payload={
            "omitted": len(omitted),
            "total": total,
            "by_change": by_change,
            "dropped": dropped,
        },
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns(),
    )
