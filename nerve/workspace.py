"""A workspace: a folder with ``nerve.yaml``, its senses, workflows and ``data/``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve import fsio, userdirs
from nerve.errors import EventError, UsageError
from nerve.resources import bundled

if TYPE_CHECKING:  # loaded by the methods that use them: a CLI start-up skips DuckDB and Arrow
    import duckdb

    from nerve.config.models import LogConfig, NerveConfig
    from nerve.log.store import EventLog

_NODE_HINT = "set NERVE_NODE, or node: in nerve.yaml, to a UTF-8 name"


@dataclass(frozen=True)
class WorkspaceDir:
    root: Path

    @classmethod
    def at(cls, root: Path | str | None = None) -> WorkspaceDir:
        path = Path(root or os.environ.get("NERVE_WORKSPACE") or ".").expanduser().resolve()
        if not path.is_dir():
            raise UsageError(
                f"workspace {path} is not a folder", hint="create one with `nerve init DIR`"
            )
        return cls(path)

    @classmethod
    def find(
        cls,
        given: Path | str | None = None,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        write: bool = False,
    ) -> WorkspaceDir:
        """The workspace a command means, found the way git finds a repository.

        ``given`` (``--workspace``), else ``NERVE_WORKSPACE``, else the nearest folder from
        ``cwd`` upwards that holds ``nerve.yaml``, else the user's own workspace (the one
        ``nerve setup`` made, named in :func:`nerve.userdirs.pointer_file`). A named folder
        without ``nerve.yaml`` is accepted only for reading a log already there (an archive,
        a copied ``data/``); a command that writes needs ``nerve.yaml``. Nothing is created.
        """
        return cls.locate(given, cwd=cwd, env=env, write=write)[0]

    @classmethod
    def locate(
        cls,
        given: Path | str | None = None,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        write: bool = False,
    ) -> tuple[WorkspaceDir, str]:
        """The workspace :meth:`find` gives, and why it is that one (what ``nerve status``
        says): ``--workspace``, ``NERVE_WORKSPACE``, the nearest ``nerve.yaml`` upwards, else
        the user workspace the pointer names (:mod:`nerve.userdirs`, set by ``nerve setup``)."""
        environ = os.environ if env is None else env
        if given:
            return cls._named(given, write), "--workspace"
        if environ.get("NERVE_WORKSPACE"):
            return cls._named(environ["NERVE_WORKSPACE"], write), "NERVE_WORKSPACE"
        start = (cwd or Path.cwd()).resolve()
        for folder in (start, *start.parents):
            if (folder / "nerve.yaml").is_file():
                return cls(folder), f"nerve.yaml in {folder}"
        mine = userdirs.pointed_workspace(environ)
        if mine is not None and (mine / "nerve.yaml").is_file():
            return cls(mine.resolve()), f"your workspace, named in {userdirs.pointer_file(environ)}"
        raise UsageError(
            f"not in a nerve workspace: no nerve.yaml in {start} or any folder above it",
            hint="make your own with `nerve setup`, one here with `nerve init DIR`, or name one "
            "with --workspace DIR",
        )

    @classmethod
    def _named(cls, named: Path | str, write: bool) -> WorkspaceDir:
        """The folder ``--workspace`` or ``NERVE_WORKSPACE`` names, if it can serve."""
        ws = cls.at(named)
        if ws.config_path.is_file() or (not write and ws.log_root.is_dir()):
            return ws
        what = "writes to" if write else "reads"
        raise UsageError(
            f"{ws.root} is not a nerve workspace (no nerve.yaml); this command {what} one",
            hint=f"create one with `nerve init {named}`",
        )

    @property
    def config_path(self) -> Path:
        return self.root / "nerve.yaml"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log_root(self) -> Path:
        return self.data / "log"

    @cached_property
    def config(self) -> NerveConfig:
        from nerve.config import load_config
        from nerve.config.models import NerveConfig

        if not self.config_path.exists():
            return NerveConfig()
        return load_config(self.config_path)

    def log_config(self) -> LogConfig:
        """Log settings, falling back to defaults if nerve.yaml cannot be read."""
        from nerve.config.models import LogConfig

        return self.config.log if self.config_path.exists() else LogConfig()

    @property
    def node(self) -> str:
        """This host's id in events: nerve.yaml's ``node``, else ``NERVE_NODE`` or the host
        name; ``EventError`` if it is not valid Unicode (say, undecodable bytes in the env)."""
        from nerve.events import check_text
        from nerve.log.store import default_node

        node = self.config.node or default_node()
        try:
            return check_text("node", node)
        except EventError as exc:
            raise EventError(str(exc), field="node", hint=_NODE_HINT) from None

    def archive_dirs(self) -> list[Path]:
        """Archive folders ``log.archives`` names (relative to the workspace), for replay."""
        if not self.config_path.exists():
            return []
        return [(self.root / Path(p).expanduser()).resolve() for p in self.config.log.archives]

    def projection_dirs(self) -> list[Path]:
        dirs = [bundled("projections"), self.root / "projections"]
        return list(dict.fromkeys(d.resolve() for d in dirs))

    def sense_dirs(self) -> list[Path]:
        dirs = [bundled("senses"), self.root / "senses"]
        return list(dict.fromkeys(d.resolve() for d in dirs))

    def open_log(self, *, background_seal: bool = False, repair: bool = False) -> EventLog:
        """Open the log as its single writer (fails if a daemon or another writer holds it)."""
        from nerve.log.store import EventLog

        cfg = self.log_config()
        self.check_encryption()
        fsio.private_dir(self.data, allow_link=True)
        return EventLog(
            self.log_root,
            node=self.node,
            durability=cfg.durability,
            seal_max_events=cfg.seal_max_events,
            seal_max_age_ns=cfg.seal_max_age * 10**6,
            max_offset_ns=cfg.max_clock_offset * 10**6,
            background_seal=background_seal,
            repair=repair,
        )

    def check_encryption(self) -> None:
        """Refuse to write plaintext where nerve.yaml asks for encryption (a keyring lost)."""
        from nerve.log.crypt import KEYRING, is_encrypted

        wanted = self.config_path.exists() and self.config.log.encryption is not None
        if wanted and self.log_root.is_dir() and not is_encrypted(self.log_root):
            raise UsageError(
                f"{self.config_path}: log.encryption is set but {self.log_root / KEYRING} "
                "is missing: refusing to write plaintext",
                hint="restore the keyring from a backup; a lost key is lost data",
            )

    def connect(self) -> duckdb.DuckDBPyConnection:
        """DuckDB with ``events`` and every projection (bundled, then the workspace's)."""
        from nerve.query import connect

        fsio.private_dir(self.data, allow_link=True)
        fsio.private_dir(self.log_root)
        return connect(self.log_root, self.projection_dirs(), self.settings())

    def settings(self) -> dict[str, Any]:
        """What projections read from the table ``nerve_settings``, as nerve.yaml sets it,
        and its category rules (``categories``, for ``focus_spells``); nothing without one
        (``nerve.query.define_views`` fills in the defaults). Imports no DuckDB: the daemon
        asks this of its query process's connections."""
        if not self.config_path.exists():
            return {}
        from nerve.categories import rule_rows

        cfg = self.config
        return {
            "attention_window": cfg.attention.window,
            "categories": rule_rows(cfg.categories),
        }


def _with_encryption(text: str, kind: str) -> str:
    """The default nerve.yaml with ``log.encryption`` set (under its ``log:`` block)."""
    block = f"  encryption:\n    key: {kind}  # what opens data/log/keyring.json\n"
    lines = text.splitlines(keepends=True)
    if "log:\n" not in lines:
        return text + "\nlog:\n" + block
    at = lines.index("log:\n") + 1
    return "".join([*lines[:at], block, *lines[at:]])


_GITIGNORE = "data/\n__pycache__/\nnerve.sock\n"
_README = """# A nerve workspace

- `nerve.yaml` names the senses nerve runs and how they are scheduled.
- `senses/<name>/sense.py` holds your own senses; built-in ones need no folder.
- `workflows/<name>/` holds workflows; `projections/*.sql` adds DuckDB views.
- `data/` is the event log and runtime files (not for version control).
"""


def init_workspace(
    path: Path, *, encrypt: tuple[bytes, dict[str, object]] | None = None
) -> WorkspaceDir:
    """Create a workspace with the default nerve.yaml; refuse to overwrite one.

    ``encrypt``: (key-encryption key, its keyring source): the log starts encrypted under a
    new data key, and nerve.yaml says so (``log.encryption``)."""
    path = path.expanduser().resolve()
    if (path / "nerve.yaml").exists():
        raise UsageError(f"{path / 'nerve.yaml'} already exists; not overwriting it")
    for sub in ("senses", "workflows", "projections", "data"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    text = bundled("nerve.yaml").read_text(encoding="utf-8")
    if encrypt is not None:
        from nerve.log.crypt import new_keyring

        fsio.private_dir(path / "data", allow_link=True)
        new_keyring(path / "data" / "log", encrypt[0], dict(encrypt[1]))
        text = _with_encryption(text, str(encrypt[1]["kind"]))
    (path / "nerve.yaml").write_text(text, encoding="utf-8")
    if not (path / ".gitignore").exists():
        (path / ".gitignore").write_text(_GITIGNORE)
    if not (path / "README.md").exists():
        (path / "README.md").write_text(_README)
    return WorkspaceDir(path)
