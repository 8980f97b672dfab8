"""Finding senses on disk and turning nerve.yaml into plans, groups and stored states."""

from __future__ import annotations

import py_compile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nerve.canonical import loads_bounded
from nerve.clock import Hlc
from nerve.config.models import NerveConfig
from nerve.errors import EventError, SenseError
from nerve.runtime.groups import SenseSpec
from nerve.runtime.scheduler import Plan
from nerve.workspace import WorkspaceDir

SENSE_FILE = "sense.py"


def find_sense(ws: WorkspaceDir, name: str, path: str | None = None) -> Path:
    """``senses/<name>/sense.py`` in the workspace, else the built-in one; or ``path``."""
    if path is not None:
        candidate = (ws.root / path).resolve()
        target = candidate / SENSE_FILE if candidate.is_dir() else candidate
        if target.is_file():
            return target
        raise SenseError(f"sense {name!r}: {target} does not exist")
    for folder in reversed(ws.sense_dirs()):
        target = folder / name / SENSE_FILE
        if target.is_file():
            return target
    raise SenseError(f"sense {name!r}: no senses/{name}/{SENSE_FILE} in the workspace or built-ins")


def check_sense_file(path: Path) -> None:
    """Refuse a sense file that does not compile (so a bad edit never replaces a good one)."""
    try:
        py_compile.compile(str(path), doraise=True, cfile=None, quiet=1)
    except py_compile.PyCompileError as exc:
        raise SenseError(f"{path}: {exc.msg.strip()}") from None


# How long a compute past its timeout has to stop once cancelled, unless its grace_period says.
CANCEL_GRACE_MS = 1000


@dataclass(frozen=True)
class Layout:
    specs: dict[str, dict[str, SenseSpec]]  # group -> sense -> spec
    plans: list[Plan]
    missing: dict[str, str]  # sense -> why it cannot run


def layout(ws: WorkspaceDir, config: NerveConfig) -> Layout:
    specs: dict[str, dict[str, SenseSpec]] = {}
    plans: list[Plan] = []
    missing: dict[str, str] = {}
    for name, sense in config.senses.items():
        if not sense.enabled:
            continue
        try:
            path = find_sense(ws, name, sense.path)
        except SenseError as exc:
            missing[name] = str(exc)
            continue
        grace = sense.grace_period or CANCEL_GRACE_MS
        spec = SenseSpec(name, str(path), dict(sense.options), sense.effective_timeout_ms, grace)
        specs.setdefault(sense.group or name, {})[name] = spec
        interval, on = config.schedule_for(name)
        throttle = sense.throttle
        if name in on and not throttle:
            throttle = interval  # its own signal repeats it at most once an interval
        plans.append(
            Plan(
                name,
                interval,
                tuple(on),
                throttle,
                sense.grace_period,
                cron=sense.schedule,
                timezone=sense.timezone,
                jitter_ms=sense.jitter_ms,
                catch_up=sense.catch_up,
                catch_up_window_ms=sense.catch_up_window,
            )
        )
    return Layout(specs, plans, missing)


def check_layout(ws: WorkspaceDir, config: NerveConfig) -> list[str]:
    """Problems ``nerve validate`` reports beyond nerve.yaml itself: missing or broken senses."""
    lay = layout(ws, config)
    problems = list(lay.missing.values())
    for group in lay.specs.values():
        for spec in group.values():
            try:
                check_sense_file(Path(spec.path))
            except SenseError as exc:
                problems.append(str(exc))
    return problems


@dataclass(frozen=True)
class StoredState:
    state: Any
    undecodable: bool


def stored_states(
    ws: WorkspaceDir, connect: Callable[[], Any] | None = None
) -> dict[str, StoredState]:
    """The newest ``sense.state`` of every sense, read through the sense_state projection
    (over ``connect()``, by default the workspace's own DuckDB connection)."""
    conn = (connect or ws.connect)()
    rows = conn.execute("SELECT sense, state, undecodable FROM sense_state").fetchall()
    out: dict[str, StoredState] = {}
    for sense, state, undecodable in rows:
        value = _decoded(state)
        missing = value is _UNDECODABLE
        out[sense] = StoredState(None if missing else value, bool(undecodable) or missing)
    return out


_UNDECODABLE = object()


def last_alive_ns(
    ws: WorkspaceDir, connect: Callable[[], Any] | None = None, upto: Hlc | None = None
) -> int | None:
    """When a daemon last wrote to the log (its newest event's physical time), if one ever
    ran here: the start of the downtime that scheduling catches up on (read over
    ``connect()``, by default the workspace's own DuckDB connection). ``upto``: only events
    stamped at or before it (the log as a starting daemon found it)."""
    conn = (connect or ws.connect)()
    where, args = _upto(upto)
    row = conn.execute(
        "SELECT max(physical_ns), count(*) FILTER (WHERE kind = 'daemon.started') "
        f"FROM events{where}",
        args,
    ).fetchone()
    if row is None or not row[1] or row[0] is None:
        return None
    return int(row[0])


def ended_cleanly(
    ws: WorkspaceDir, connect: Callable[[], Any] | None = None, upto: Hlc | None = None
) -> bool:
    """Whether the last daemon here recorded ``daemon.stopped`` after its ``daemon.started``
    (True for a log no daemon ran on). ``upto``: as for :func:`last_alive_ns`, so a daemon
    that recorded its own start already reads the log as it found it."""
    conn = (connect or ws.connect)()
    where, args = _upto(upto)
    where += " AND" if where else " WHERE"
    row = conn.execute(
        f"SELECT kind FROM events{where} kind IN ('daemon.started', 'daemon.stopped') "
        "ORDER BY physical_ns DESC, logical DESC LIMIT 1",
        args,
    ).fetchone()
    return row is None or row[0] == "daemon.stopped"


def _upto(upto: Hlc | None) -> tuple[str, list[int]]:
    """A WHERE clause keeping events stamped at or before ``upto`` (none if it is None)."""
    if upto is None:
        return "", []
    p, n = upto.physical_ns, upto.logical
    return " WHERE (physical_ns < ? OR (physical_ns = ? AND logical <= ?))", [p, p, n]


def _decoded(state: str | None) -> Any:
    """A stored state, or ``_UNDECODABLE`` when it is missing or nests deeper than the limit."""
    if state is None:
        return _UNDECODABLE
    try:
        return loads_bounded(state, field="state")
    except (EventError, ValueError):
        return _UNDECODABLE


def sense_rows(config: NerveConfig) -> list[dict[str, Any]]:
    """Each configured sense with its schedule, as ``nerve sense list`` shows it."""
    rows = []
    for name, cfg in config.senses.items():
        interval, on = config.schedule_for(name)
        rows.append(
            {
                "name": name,
                "group": cfg.group or name,
                "interval_ms": interval,
                "on": on,
                "throttle_ms": cfg.throttle,
                "timeout_ms": cfg.effective_timeout_ms,
                "grace_ms": cfg.grace_period,
            }
        )
    return rows
