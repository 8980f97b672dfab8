"""``nerve fleet init``: write the ``fleet:`` section, then make the namespace and table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nerve.errors import NerveError, UsageError
from nerve.fleet.warehouse import Resolved, Warehouse, open_warehouse, resolve
from nerve.workspace import WorkspaceDir

__all__ = ["init_fleet", "warehouse_uri"]


def warehouse_uri(text: str, cwd: Path | None = None) -> str:
    """``s3://…`` and ``file://…`` as given; a plain path becomes an absolute ``file://``."""
    if "://" in text:
        return text
    path = Path(text).expanduser()
    return (path if path.is_absolute() else (cwd or Path.cwd()) / path).resolve().as_uri()


def init_fleet(ws: WorkspaceDir, settings: dict[str, Any]) -> tuple[Resolved, Warehouse]:
    """Add ``fleet:`` to nerve.yaml (or keep an identical one), validate the whole file,
    and create the namespace and table. A file that would not validate is left as it was."""
    from nerve.config import load_config
    from nerve.fleet.warehouse import require_fleet

    require_fleet()  # before nerve.yaml is touched
    before = ws.config_path.read_text(encoding="utf-8")
    current = ws.config.fleet
    wanted = {k: v for k, v in settings.items() if v is not None}
    if current is not None:
        same = all(getattr(current, k) == v for k, v in wanted.items())
        if not same:
            raise UsageError(
                f"{ws.config_path} already has a fleet section with other settings",
                hint="edit it there, or remove it and run `nerve fleet init` again",
            )
    else:
        block = "\n# Many hosts: this workspace ships to a shared Iceberg table.\nfleet:\n"
        block += "".join(f"  {key}: {_yaml(value)}\n" for key, value in wanted.items())
        text = before if before.endswith("\n") or not before else before + "\n"
        ws.config_path.write_text(text + block, encoding="utf-8")
    try:
        cfg = load_config(ws.config_path).fleet
    except NerveError:
        ws.config_path.write_text(before, encoding="utf-8")
        raise
    assert cfg is not None  # just written, or there before
    resolved = resolve(cfg, ws.data)
    return resolved, open_warehouse(resolved, create=True)


def _yaml(value: Any) -> str:
    import json

    return json.dumps(value)  # a JSON string is a YAML scalar with nothing left to guess
