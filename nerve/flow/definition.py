"""Finding a workflow's folder and loading ``workflow.py`` into a checked :class:`Definition`.

A workflow ``<name>`` lives in ``workflows/<name>/workflow.py`` of the workspace, else of the
built-in workflows, unless ``nerve.yaml`` gives ``workflows.<name>.path``. Loading imports the
module and checks its exports (see :mod:`nerve.flow.contract`); every problem is one
:class:`~nerve.errors.WorkflowError` naming the file and the export. The worker process loads
definitions (roles run there); ``nerve validate`` loads them too, to report problems early.

Depends on the standard library and :mod:`nerve.flow.contract` only: the worker imports it.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from nerve.errors import WorkflowError
from nerve.flow.contract import END, START

__all__ = ["WORKFLOW_FILE", "Definition", "find_workflow", "load_definition", "safe_output"]

WORKFLOW_FILE = "workflow.py"
NOT_WORKFLOWS = frozenset({"checks"})  # workflows/checks/ holds check manifests
_CHECK_ID = re.compile(r"[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Definition:
    """A loaded workflow: its roles (and which take a ctx), moderator and declarations."""

    name: str
    path: Path
    roles: Mapping[str, Callable[..., Any]]
    takes_ctx: frozenset[str]
    moderator: Callable[..., Any]
    checks: tuple[str, ...]
    outputs: tuple[str, ...]
    role_timeout: float | None
    autonomous: bool = False

    def summary(self) -> dict[str, Any]:
        """What the worker reports to the kernel once loaded."""
        return {
            "roles": sorted(self.roles),
            "checks": list(self.checks),
            "outputs": list(self.outputs),
            "role_timeout": self.role_timeout,
            "autonomous": self.autonomous,
        }


def find_workflow(name: str, dirs: Iterable[Path], *, root: Path, path: str | None = None) -> Path:
    """The ``workflow.py`` of ``name``: ``path`` (relative to ``root``) or the first of ``dirs``."""
    if name in NOT_WORKFLOWS:
        raise WorkflowError(f"workflows/{name}/ holds check manifests, not a workflow")
    if path is not None:
        candidate = (root / path).resolve()
        target = candidate / WORKFLOW_FILE if candidate.is_dir() else candidate
        if target.is_file():
            return target
        raise WorkflowError(f"workflow {name!r}: {target} does not exist")
    for folder in dirs:
        target = folder / name / WORKFLOW_FILE
        if target.is_file():
            return target
    raise WorkflowError(
        f"workflow {name!r}: no workflows/{name}/{WORKFLOW_FILE} in the workspace or built-ins",
        hint=f"create workflows/{name}/{WORKFLOW_FILE} exporting roles and moderator",
    )


def load_definition(name: str, path: Path) -> Definition:
    """Import ``path`` and check its exports; raise ``WorkflowError`` naming what is wrong."""
    module = _import(name, path)
    where = f"{path}: workflow {name!r}"
    roles, takes_ctx = _roles(getattr(module, "roles", None), where)
    moderator = getattr(module, "moderator", None)
    if not callable(moderator) or not _accepts(moderator, 3):
        raise WorkflowError(f"{where}: export moderator(context, round, max_rounds)")
    return Definition(
        name=name,
        path=path,
        roles=roles,
        takes_ctx=takes_ctx,
        moderator=moderator,
        checks=_checks(getattr(module, "checks", ()), where),
        outputs=tuple(_output(o, where) for o in _strings(getattr(module, "outputs", ()), where)),
        role_timeout=_timeout(getattr(module, "role_timeout", None), where),
        autonomous=_flag(getattr(module, "autonomous", False), f"{where}: autonomous"),
    )


def _flag(raw: Any, where: str) -> bool:
    if not isinstance(raw, bool):
        raise WorkflowError(f"{where} must be True or False, got {raw!r}")
    return raw


def _import(name: str, path: Path) -> Any:
    module_name = f"nerve_workflow_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise WorkflowError(f"{path}: cannot be imported as a workflow module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the author's code: any failure is a load error
        sys.modules.pop(module_name, None)
        raise WorkflowError(f"{path}: cannot import: {type(exc).__name__}: {exc}") from None
    return module


def _roles(raw: Any, where: str) -> tuple[dict[str, Callable[..., Any]], frozenset[str]]:
    if not isinstance(raw, Mapping) or not raw:
        got = "nothing" if raw is None else type(raw).__name__
        raise WorkflowError(f"{where}: export roles, a non-empty dict of name -> role (got {got})")
    roles: dict[str, Callable[..., Any]] = {}
    with_ctx = set()
    for key, fn in raw.items():
        if not isinstance(key, str) or not key or key in (START, END):
            raise WorkflowError(f"{where}: role name {key!r} is not allowed")
        if not callable(fn):
            raise WorkflowError(f"{where}: role {key!r} is not callable")
        if _accepts(fn, 3):
            with_ctx.add(key)
        elif not _accepts(fn, 2):
            raise WorkflowError(f"{where}: role {key!r} must take (start, messages[, ctx])")
        roles[key] = fn
    return roles, frozenset(with_ctx)


def _accepts(fn: Callable[..., Any], count: int) -> bool:
    try:
        inspect.signature(fn).bind(*([None] * count))
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins): assume it fits
        return True
    return True


def _strings(raw: Any, where: str) -> tuple[str, ...]:
    if isinstance(raw, str) or not isinstance(raw, list | tuple):
        raise WorkflowError(f"{where}: expected a list of strings, got {raw!r}")
    if not all(isinstance(item, str) for item in raw):
        raise WorkflowError(f"{where}: expected a list of strings, got {raw!r}")
    return tuple(raw)


def _checks(raw: Any, where: str) -> tuple[str, ...]:
    ids = _strings(raw, f"{where}: checks")
    for check_id in ids:
        if not _CHECK_ID.fullmatch(check_id):
            raise WorkflowError(f"{where}: check id {check_id!r} is not kebab-case")
    return tuple(dict.fromkeys(ids))


def safe_output(raw: str) -> str:
    """An output path as written, if it stays inside the run folder; else ``WorkflowError``."""
    path = PurePosixPath(raw)
    if not raw or path.is_absolute() or ".." in path.parts or "\\" in raw:
        raise WorkflowError(f"output {raw!r} must be a relative path inside the run folder")
    return path.as_posix()


def _output(raw: str, where: str) -> str:
    try:
        return safe_output(raw)
    except WorkflowError as exc:
        raise WorkflowError(f"{where}: {exc}") from None


def _timeout(raw: Any, where: str) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise WorkflowError(f"{where}: role_timeout must be a number of seconds, got {raw!r}")
    if raw <= 0:
        raise WorkflowError(f"{where}: role_timeout must be positive, got {raw!r}")
    return float(raw)
