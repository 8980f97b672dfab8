"""Where a workspace's gate checks come from, and how a manifest's command is made runnable.

Manifests live in ``workflows/checks/<id>.md``: the built-in ones first, then the workspace's,
which replace a built-in one of the same id. Two conveniences make a manifest portable:

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

from nerve.checks.manifest import CheckManifest, load_manifests, parse_manifest
from nerve.errors import CheckError

__all__ = ["CHECKS_DIR", "catalog", "check_dirs", "lookup", "require", "runnable"]

CHECKS_DIR = Path("workflows") / "checks"
_PYTHONS = frozenset({"python", "python3"})


def check_dirs(root: Path, bundled_workflows: Path) -> list[Path]:
    """The built-in checks folder, then the workspace's (duplicates removed)."""
    dirs = [bundled_workflows / "checks", Path(root) / CHECKS_DIR]
    return list(dict.fromkeys(d.resolve() for d in dirs))


def catalog(dirs: Iterable[Path], errors: list[str] | None = None) -> dict[str, CheckManifest]:
    """Every manifest by id; a later folder's manifest replaces an earlier one's.

    A manifest that does not parse raises ``CheckError``, or, when ``errors`` is a list, is
    left out and its error appended there (the daemon keeps the good ones).
    """
    found: dict[str, CheckManifest] = {}
    for folder in dirs:
        if errors is None:
            found.update(load_manifests(folder))
            continue
        for path in _manifest_files(folder):
            try:
                manifest = parse_manifest(path)
            except CheckError as exc:
                errors.append(str(exc))
                continue
            found[manifest.id] = manifest
    return dict(sorted(found.items()))


def _manifest_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [
        p
        for p in sorted(folder.glob("*.md"))
        if p.name.lower() != "readme.md" and not p.name.startswith(("_", "."))
    ]


def lookup(checks: dict[str, CheckManifest], check_id: str) -> CheckManifest:
    """The manifest ``check_id``, or a ``CheckError`` listing the known ids."""
    manifest = checks.get(check_id)
    if manifest is None:
        known = ", ".join(checks) or "none"
        raise CheckError(
            f"unknown check {check_id!r} (known: {known})",
            hint=f"add workflows/checks/{check_id}.md",
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
    """The workspace a manifest belongs to: the folder above its ``workflows/checks/``."""
    if not manifest.path:
        return None
    folder = Path(manifest.path).resolve().parent
    if folder.name != "checks" or folder.parent.name != "workflows":
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
