"""The changes ``nerve setup`` makes, each shown before it is made, kept in a manifest so
``nerve setup --undo`` takes exactly those back.

A change is one of: a folder made (``mkdir``; undone only if it is empty again), a file
written that was not there (``write``; undone by removing it), bytes appended to a file that
was there (``append``; undone by cutting exactly those bytes out again), the workspace made
(``workspace``; undone by removing its folder), a hook file written in it (``hook``), the
folders its ``files`` sense watches set (``watch``; not recorded, the workspace holds it) and
a user service installed (``service``; undone by stopping and removing it, see
:mod:`nerve.setup.service`). The manifest is
``setup.json`` in the user workspace, rewritten after every change, so a setup stopped
half-way is still undone whole.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from nerve.errors import UsageError

__all__ = ["MANIFEST", "Change", "Manifest", "missing_folders"]

MANIFEST = "setup.json"

_VERBS = {
    "mkdir": "make the folder {path}",
    "write": "write {path}",
    "append": "add to {path}: {shown}",
    "workspace": "make the workspace {path}",
    "service": "install the user service {path}",
    "hook": "write the shell hook {path}",
    "watch": "set the folders the files sense watches, in {path}: {shown}",
}


@dataclass(frozen=True)
class Change:
    """One change to the user's files: ``op`` (see the module), the ``path`` it touches and,
    for ``write`` and ``append``, the ``text`` written."""

    op: str
    path: str
    text: str = ""

    def describe(self) -> str:
        """One line saying what the change does (printed before it is made)."""
        shown = self.text.strip().replace("\n", " ")
        return _VERBS[self.op].format(path=self.path, shown=shown)

    def apply(self) -> None:
        """Make the change (``service`` and ``workspace`` are made by their owners)."""
        path = Path(self.path)
        if self.op == "mkdir":
            path.mkdir()
        elif self.op == "write":
            with path.open("x", encoding="utf-8") as out:
                out.write(self.text)
        elif self.op == "append":
            with path.open("a", encoding="utf-8") as out:
                out.write(self.text)

    def undo(self) -> str | None:
        """Take the change back; a sentence when it could not be taken back whole."""
        path = Path(self.path)
        if self.op == "mkdir":
            return _remove_empty(path)
        if self.op in ("write", "service", "hook"):
            path.unlink(missing_ok=True)
        elif self.op == "append":
            return _cut(path, self.text)
        elif self.op == "workspace" and path.is_dir():
            shutil.rmtree(path)
        return None


def _remove_empty(path: Path) -> str | None:
    if not path.is_dir():
        return None
    if any(path.iterdir()):
        return f"kept {path}: something else is in it now"
    path.rmdir()
    return None


def _cut(path: Path, added: str) -> str | None:
    """Remove the bytes ``added`` from ``path``: from its end if they are still last, else
    their last place (the file was edited after setup)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    at = text.rfind(added)
    if at < 0:
        body = added.strip("\n")
        at = text.rfind(body)
        if at < 0:
            return f"{path} no longer holds {body!r}; nothing cut"
        added = body + ("\n" if text[at + len(body) : at + len(body) + 1] == "\n" else "")
    path.write_text(text[:at] + text[at + len(added) :], encoding="utf-8")
    return None


def missing_folders(path: Path, stop: Path, planned: set[Path] | None = None) -> list[Path]:
    """The folders that must be made, outermost first, for ``path`` to be made below
    ``stop`` (which must exist already); those in ``planned`` count as made, and the ones
    returned are added to it."""
    made = set() if planned is None else planned
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if folder in made or folder.exists() or folder == stop:
            break
        missing.append(folder)
    made.update(missing)
    return missing[::-1]


class Manifest:
    """The changes made so far, kept in ``<workspace>/setup.json``."""

    def __init__(self, workspace: Path, changes: Iterable[Change] = ()) -> None:
        self.workspace = workspace
        self.changes = list(changes)

    @classmethod
    def load(cls, workspace: Path) -> Manifest:
        """The manifest of ``workspace`` (empty when setup never ran there)."""
        path = workspace / MANIFEST
        if not path.is_file():
            return cls(workspace)
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))["changes"]
            return cls(workspace, [Change(**row) for row in rows])
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path} is not a setup manifest: {exc}", field=MANIFEST) from None

    def made(self, op: str, path: Path) -> bool:
        """Whether a change ``op`` on ``path`` is recorded."""
        return any(c.op == op and c.path == str(path) for c in self.changes)

    def record(self, change: Change) -> None:
        """Add ``change`` and save (once the workspace folder exists)."""
        self.changes.append(change)
        self.save()

    def save(self) -> None:
        """Write the manifest into the workspace, if the workspace is there."""
        if not self.workspace.is_dir():
            return
        rows = [asdict(c) for c in self.changes]
        text = json.dumps({"version": 1, "changes": rows}, indent=1) + "\n"
        (self.workspace / MANIFEST).write_text(text, encoding="utf-8")

    def undo(self, say: Callable[[str], None], stop_service: Callable[[Change], None]) -> None:
        """Take every change back, newest first, saying each before it is taken back."""
        for change in reversed(self.changes):
            say(f"- take back: {change.describe()}")
            if change.op == "service":
                stop_service(change)
            problem = change.undo()
            if problem:
                say(f"  {problem}")
        self.changes = []
