"""``nerve setup``: the changes that make a person's own nerve, planned, then made one by one.

:func:`plan` looks at the disk and lists what is missing (nothing, on a second run when all
is in place); :func:`make` makes each change after ``say`` has shown it, recording it in the
manifest (:mod:`nerve.setup.changes`); :func:`undo` takes them all back. The places:

- the user workspace, ``<data folder>/nerve`` (:func:`nerve.userdirs.data_home`), its
  ``files`` sense watching the ``watch`` folders (none unless named), its ``shell`` sense
  reading the spool ``shell/shell.spool`` inside it;
- the static hook files ``shell/hook.bash|zsh|fish`` inside it, and one line at the end of
  each shell's start-up file that sources its hook file when that file is there;
- the workspace pointer (:func:`nerve.userdirs.pointer_file`);
- the user service (:mod:`nerve.setup.service`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nerve import userdirs
from nerve.errors import UsageError
from nerve.setup.changes import Change, Manifest, missing_folders
from nerve.setup.service import Manager, service_file
from nerve.shellhook import SHELLS, hook_file, written_version
from nerve.version import __version__

__all__ = ["Places", "hook_path", "make", "nerve_program", "plan", "refresh_hooks", "undo"]


def nerve_program(executable: str | None = None) -> Path:
    """The absolute path of this ``nerve`` command: the one beside this Python (a venv's),
    else the one on ``PATH``."""
    beside = Path(executable or sys.executable).absolute().parent / "nerve"
    if beside.is_file():
        return beside
    found = shutil.which("nerve")
    if found is None:
        raise UsageError("cannot find the nerve command beside this Python or on PATH")
    return Path(found).absolute()


def hook_path(workspace: Path, shell: str) -> Path:
    """The static hook file of ``shell`` in ``workspace``."""
    return workspace / "shell" / f"hook.{shell}"


def spool_path(workspace: Path) -> Path:
    """Where the hooks of a set-up workspace append, and its ``shell`` sense reads."""
    return workspace / "shell" / "shell.spool"


@dataclass
class Places:
    """Everything setup touches, from the environment and platform given."""

    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    platform: str = sys.platform
    nerve: Path = field(default_factory=nerve_program)

    @property
    def home(self) -> Path:
        return userdirs.home(self.environ)

    @property
    def workspace(self) -> Path:
        return userdirs.data_home(self.environ, self.platform)

    @property
    def pointer(self) -> Path:
        return userdirs.pointer_file(self.environ, self.platform)

    def rc_file(self, shell: str) -> Path:
        """The start-up file an interactive ``shell`` reads."""
        if shell == "zsh":
            return Path(self.environ.get("ZDOTDIR") or self.home) / ".zshrc"
        if shell == "fish":
            config = userdirs.config_home(self.environ, "linux").parent
            return config / "fish" / "config.fish"
        return self.home / ".bashrc"

    def shells(self) -> list[str]:
        """The shells of :data:`SHELLS` found on ``PATH``."""
        path = self.environ.get("PATH", os.defpath)
        return [shell for shell in SHELLS if shutil.which(shell, path=path)]


def rc_line(shell: str, hook: Path) -> str:
    """The line a start-up file gets: source the hook file if it is there, silently."""
    if shell == "fish":
        quoted = "'" + str(hook).replace("\\", "\\\\").replace("'", "\\'") + "'"
        return f"test -r {quoted}; and source {quoted}  # nerve (nerve setup --undo removes it)"
    quoted = "'" + str(hook).replace("'", "'\\''") + "'"
    return f"[ -r {quoted} ] && . {quoted}  # nerve (nerve setup --undo removes it)"


def _file_steps(
    path: Path, text: str, home: Path, planned: set[Path], op: str = "write"
) -> list[Change]:
    """Make ``path`` hold ``text``: its missing folders (but those in ``planned``), then
    the file (none if it holds that already)."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return []
    steps = [Change("mkdir", str(p)) for p in missing_folders(path.parent, home, planned)]
    return [*steps, Change(op, str(path), text)]


def _rc_steps(places: Places, shell: str, planned: set[Path]) -> list[Change]:
    rc = places.rc_file(shell)
    line = rc_line(shell, hook_path(places.workspace, shell))
    if not rc.exists():
        return _file_steps(rc, line + "\n", places.home, planned)
    text = rc.read_text(encoding="utf-8")
    if line in text.splitlines():
        return []
    lead = "\n" if text and not text.endswith("\n") else ""
    return [Change("append", str(rc), f"{lead}{line}\n")]


def _pointer_steps(places: Places, planned: set[Path]) -> list[Change]:
    named = userdirs.pointed_workspace(places.environ, places.platform)
    if named is not None and named != places.workspace:
        raise UsageError(
            f"{places.pointer} already names the workspace {named}",
            hint="run `nerve setup --undo` for that one first, or remove the file",
        )
    return _file_steps(places.pointer, f"{places.workspace}\n", places.home, planned)


def _workspace_steps(
    places: Places, watch: Sequence[Path] | None, planned: set[Path]
) -> list[Change]:
    ws = places.workspace
    if (ws / "nerve.yaml").is_file():
        if watch is None:
            return []
        return [Change("watch", str(ws / "nerve.yaml"), _paths_text(watch))]
    steps = [Change("mkdir", str(p)) for p in missing_folders(ws.parent, places.home, planned)]
    planned.add(ws)
    return [*steps, Change("workspace", str(ws), _paths_text(watch or []))]


def _paths_text(watch: Sequence[Path]) -> str:
    return json.dumps([str(Path(p).expanduser().absolute()) for p in watch])


def plan(
    places: Places,
    *,
    watch: Sequence[Path] | None = None,
    shells: Sequence[str] | None = None,
    service: bool = True,
) -> list[Change]:
    """Every change setup would make now, in the order it makes them; ``watch`` None keeps
    what a workspace already watches (none for a new one)."""
    ws = places.workspace
    planned = {ws / "shell"}  # the hook files' folder is made with them, in the workspace
    steps = _workspace_steps(places, watch, planned)
    for shell in shells if shells is not None else places.shells():
        text = hook_file(shell, spool=spool_path(ws), nerve=places.nerve, version=__version__)
        steps += _file_steps(hook_path(ws, shell), text, places.home, planned, op="hook")
        steps += _rc_steps(places, shell, planned)
    steps += _pointer_steps(places, planned)
    if service:
        unit = service_file(places.nerve, ws, places.environ, places.platform)
        steps += _file_steps(unit.path, unit.text, places.home, planned, op="service")
    return steps


def _make_workspace(ws: Path, paths: str) -> None:
    from nerve.workspace import init_workspace

    init_workspace(ws)
    _set_watch(ws / "nerve.yaml", paths)
    config = ws / "nerve.yaml"
    spool = json.dumps(str(spool_path(ws)))
    text = config.read_text(encoding="utf-8")
    shell = "  shell:\n    group: system\n    interval: 5s\n"
    config.write_text(text.replace(shell, f"{shell}    options:\n      spool: {spool}\n", 1))


def _set_watch(config: Path, paths: str) -> None:
    """Point the ``files`` sense of ``config`` at ``paths`` (a JSON list)."""
    lines = config.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("paths:"))
    lines[at] = lines[at][: lines[at].index("paths:")] + f"paths: {paths}\n"
    config.write_text("".join(lines), encoding="utf-8")


def make(
    steps: Sequence[Change],
    places: Places,
    say: Callable[[str], None],
    manager: Manager | None = None,
) -> Manifest:
    """Make ``steps`` in order, each shown by ``say`` before it is made and recorded in
    the workspace's manifest after."""
    manifest = Manifest.load(places.workspace)
    for step in steps:
        say(f"+ {step.describe()}")
        _apply(step, places, say, manager or Manager(places.platform))
        if step.op == "watch" or manifest.made(step.op, Path(step.path)):
            manifest.save()
        else:
            manifest.record(step)
    return manifest


def _apply(step: Change, places: Places, say: Callable[[str], None], manager: Manager) -> None:
    path = Path(step.path)
    if step.op == "workspace":
        _make_workspace(path, step.text)
    elif step.op == "watch":
        _set_watch(path, step.text)
    elif step.op in ("hook", "service"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(step.text, encoding="utf-8")
    else:
        step.apply()
    if step.op == "service":
        ok, said = manager.start(path)
        if not ok:
            say(
                f"  the service manager did not start it ({_first(said)}); it starts at the "
                "next login, and `nerve daemon start` runs the daemon now"
            )


def _first(text: str) -> str:
    return (text.strip().splitlines() or ["no answer"])[0]


def undo(
    places: Places,
    say: Callable[[str], None],
    *,
    keep_workspace: bool = False,
    manager: Manager | None = None,
) -> None:
    """Take back every change the manifest of the user workspace records (``keep_workspace``:
    all but the workspace and its data)."""
    ws = places.workspace
    if not (ws / "nerve.yaml").is_file() or not (ws / "setup.json").is_file():
        raise UsageError(f"no setup to undo: {ws / 'setup.json'} is not there")
    manifest = Manifest.load(ws)
    if keep_workspace:
        kept = {str(p) for p in (ws, *ws.parents)}
        manifest.changes = [c for c in manifest.changes if c.path not in kept]
        (ws / "setup.json").unlink()
    manager = manager or Manager(places.platform)
    manifest.undo(say, lambda _change: _stop(manager, say))
    _forget_state(places, say)


def _stop(manager: Manager, say: Callable[[str], None]) -> None:
    ok, said = manager.stop()
    if not ok:
        say(f"  the service manager did not stop it ({_first(said)})")


def _forget_state(places: Places, say: Callable[[str], None]) -> None:
    """Remove the login tokens nerve kept for the workspace outside it (``nerve ui``,
    ``nerve mcp --http``), and their folders when nothing else is left in them."""
    from nerve.tokens import token_path

    for use in ("ui", "mcp"):
        path = token_path(places.workspace, use, places.environ)
        if path.exists():
            say(f"undo: remove the {use} token {path}")
            path.unlink()
            _prune(path.parent, userdirs.home(places.environ))


def _prune(folder: Path, home: Path) -> None:
    """Remove ``folder`` and its parents below ``home`` while they are empty."""
    for each in (folder, *folder.parents):
        if each == home or not each.is_relative_to(home) or any(each.iterdir()):
            return
        each.rmdir()


def refresh_hooks(workspace: Path, nerve: Path | None = None) -> list[Path]:
    """Rewrite the hook files of a set-up ``workspace`` that an older nerve wrote (the
    daemon calls this as it starts, so an upgrade reaches every new shell); the files
    rewritten."""
    done = []
    for shell in SHELLS:
        path = hook_path(workspace, shell)
        if not path.is_file() or written_version(path.read_text(encoding="utf-8")) == __version__:
            continue
        program = nerve or nerve_program()
        text = hook_file(shell, spool=spool_path(workspace), nerve=program, version=__version__)
        path.write_text(text, encoding="utf-8")
        done.append(path)
    return done
