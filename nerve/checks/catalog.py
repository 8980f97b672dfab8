"""Where a workspace's checks come from, and how a manifest's command is made runnable.

Manifests live in ``workflows/checks/<id>.md``: the built-in ones first, then the workspace's,
which replace a built-in one of the same id. A workspace may also keep AI-DLC sensor
manifests unchanged in ``.claude/sensors/aidlc-<id>.md``; an id defined both there and in
``workflows/checks/`` is an error naming both files. Two conveniences make a manifest portable:

- a command whose program is ``python`` or ``python3`` runs with the interpreter nerve runs
  on (so the check sees the same packages, whatever ``PATH`` says);
- a relative ``.py`` argument that names a file next to the manifest's own workspace (the
  folder holding its ``workflows/``) is made absolute, so a built-in check's script is found
  when it fires in any workspace. In the workspace's own manifests this changes nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from nerve.checks.manifest import SENSOR_FILE, CheckManifest, parse_manifest
from nerve.errors import CheckError

__all__ = [
    "CHECKS_DIR",
    "SENSORS_DIR",
    "catalog",
    "check_dirs",
    "lookup",
    "manifest_files",
    "require",
    "runnable",
]

CHECKS_DIR = Path("workflows") / "checks"
SENSORS_DIR = Path(".claude") / "sensors"
_PYTHONS = frozenset({"python", "python3"})


def check_dirs(root: Path, bundled_workflows: Path) -> list[tuple[Path, ...]]:
    """Where manifests are found, level by level: the built-in checks, then the workspace's.

    The workspace level has two folders: ``workflows/checks/`` and the AI-DLC location
    ``.claude/sensors/``. A later level replaces an earlier one's manifest of the same id;
    within one level an id defined twice is an error. When the workspace is the bundled one,
    its folder counts once, as the workspace's.
    """
    own = (Path(root).resolve() / CHECKS_DIR, Path(root).resolve() / SENSORS_DIR)
    builtin = (Path(bundled_workflows) / "checks").resolve()
    return [own] if builtin in own else [(builtin,), own]


def catalog(
    levels: Iterable[tuple[Path, ...]], errors: list[str] | None = None
) -> dict[str, CheckManifest]:
    """Every manifest by id; a later level's manifest replaces an earlier one's.

    A manifest that does not parse, or an id defined twice within one level, raises
    ``CheckError``, or, when ``errors`` is a list, is left out and its error appended there
    (the daemon and ``nerve check list`` keep the good ones). Of an id defined twice in one
    level, the first file (``workflows/checks/`` before ``.claude/sensors/``) is kept.
    """
    found: dict[str, CheckManifest] = {}
    for level in levels:
        seen: dict[str, CheckManifest] = {}
        for path in (path for folder in level for path in manifest_files(folder)):
            try:
                manifest = parse_manifest(path)
                if manifest.id in seen:
                    raise CheckError(_twice(manifest.id, seen[manifest.id].path, str(path)))
            except CheckError as exc:
                if errors is None:
                    raise
                errors.append(str(exc))
                continue
            seen[manifest.id] = manifest
        found.update(seen)
    return dict(sorted(found.items()))


def _twice(check_id: str, first: str, second: str) -> str:
    return f"{second}: check id {check_id!r} is already defined by {first}"


def manifest_files(folder: Path) -> list[Path]:
    """The manifest files of one folder, in name order.

    In ``.claude/sensors/`` only ``aidlc-<id>.md`` files are manifests (as AI-DLC's resolver
    reads that folder; anything else there is skipped). Elsewhere every ``*.md`` is, except
    ``README.md`` and files starting with ``_`` or ``.``.
    """
    if not folder.is_dir():
        return []
    sensors = folder.name == SENSORS_DIR.name and folder.parent.name == SENSORS_DIR.parent.name
    return [
        p
        for p in sorted(folder.glob("*.md"))
        if (SENSOR_FILE.fullmatch(p.name) if sensors else _plain_manifest(p))
    ]


def _plain_manifest(path: Path) -> bool:
    return path.name.lower() != "readme.md" and not path.name.startswith(("_", "."))


def lookup(checks: dict[str, CheckManifest], check_id: str) -> CheckManifest:
    """The manifest ``check_id``, or a ``CheckError`` listing the known ids."""
    manifest = checks.get(check_id)
    if manifest is None:
        known = ", ".join(checks) or "none"
        raise CheckError(
            f"unknown check {check_id!r} (known: {known})",
            hint=f"add workflows/checks/{check_id}.md or .claude/sensors/aidlc-{check_id}.md",
        )
    return manifest


def runnable(manifest: CheckManifest) -> CheckManifest:
    """``manifest`` with ``python`` made this interpreter and its own scripts made absolute."""
    argv = list(manifest.command)
    if argv[0] in _PYTHONS:
        argv[0] = sys.executable
    home = _home(manifest)
    if home is not None:
        argv = [argv[0], *(_anchored(arg, home) for arg in argv[1:])]
    if tuple(argv) == manifest.command:
        return manifest
    return manifest.model_copy(update={"command": tuple(argv)})


def _home(manifest: CheckManifest) -> Path | None:
    """The workspace a manifest belongs to: the folder above its ``workflows/checks/``
    (or ``.claude/sensors/``)."""
    if not manifest.path:
        return None
    folder = Path(manifest.path).resolve().parent
    if (folder.parent.name, folder.name) not in {("workflows", "checks"), (".claude", "sensors")}:
        return None
    return folder.parent.parent


def _anchored(arg: str, home: Path) -> str:
    if not arg.endswith(".py") or arg.startswith("-") or Path(arg).is_absolute():
        return arg
    candidate = home / arg
    return str(candidate) if candidate.is_file() else arg


def require(checks: dict[str, CheckManifest], ids: Iterable[str], where: str) -> None:
    """Raise ``CheckError`` if any of ``ids`` is not a known check (a load-time error)."""
    missing = [check_id for check_id in ids if check_id not in checks]
    if missing:
        known = ", ".join(checks) or "none"
        raise CheckError(f"{where} imports unknown check(s) {', '.join(missing)} (known: {known})")
