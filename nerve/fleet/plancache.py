"""Fleet query plans kept between commands, keyed by the table's metadata file.

An Iceberg commit writes the table's state to a new metadata file and never changes one,
so the file the catalog names is the table's state: a plan made against it (which files a
query reads) holds for as long as the catalog still names that file. With a SQLite catalog
the name is one stdlib query away, so a repeated ``fleet query`` loads neither pyiceberg
nor the table's manifests. Other catalogs, and plans with delete files (whose tasks are
not plain data), are planned every time.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from nerve.errors import NerveError
from nerve.fleet.query import FleetPlan
from nerve.fleet.warehouse import CATALOG_NAME, Resolved, write_local

__all__ = ["cached", "keep", "metadata_location"]

PLANS = "plans.json"
KEEP = 16  # plans kept: a few --since / --host variants of the same table state


def metadata_location(resolved: Resolved) -> str | None:
    """The metadata file a SQLite catalog names for the table now; None for another
    catalog, or whenever the catalog cannot be read plainly (then the query plans)."""
    if not resolved.catalog.startswith("sqlite:///"):
        return None
    namespace, _, name = resolved.table.rpartition(".")
    path = resolved.catalog.removeprefix("sqlite:///")
    try:
        conn = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute(
                "SELECT metadata_location FROM iceberg_tables "
                "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
                (CATALOG_NAME, namespace, name),
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return row[0] if row and isinstance(row[0], str) else None


def _key(location: str, since_ns: int | None, hosts: list[str] | None) -> str:
    return json.dumps([location, since_ns, sorted(set(hosts)) if hosts else None])


def _read(folder: Path) -> dict[str, Any]:
    try:
        plans = json.loads((folder / PLANS).read_bytes())
    except (OSError, ValueError):
        return {}
    return plans if isinstance(plans, dict) else {}


def cached(
    folder: Path, location: str, since_ns: int | None, hosts: list[str] | None
) -> FleetPlan | None:
    """The plan kept for this table state and these bounds, if any (a damaged or foreign
    entry is ignored: the query plans again)."""
    entry = _read(folder).get(_key(location, since_ns, hosts))
    if not isinstance(entry, dict):
        return None
    files, total, warnings = entry.get("files"), entry.get("total"), entry.get("warnings")
    if not (isinstance(files, dict) and isinstance(total, int) and _strings(warnings)):
        return None
    if not all(isinstance(h, str) and _strings(uris) for h, uris in files.items()):
        return None
    return FleetPlan(files, total, since_ns, {}, list(warnings or []))


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def keep(
    folder: Path, resolved: Resolved, location: str, plan: FleetPlan, hosts: list[str] | None
) -> None:
    """Keep ``plan``, made against the table state ``location``, for the next query."""
    if plan.deletes or not resolved.catalog.startswith("sqlite:///"):
        return
    plans = _read(folder)
    key = _key(location, plan.since_ns, hosts)
    plans.pop(key, None)
    plans[key] = {"files": plan.files, "total": plan.total, "warnings": plan.warnings}
    while len(plans) > KEEP:
        plans.pop(next(iter(plans)))  # the oldest kept first
    with contextlib.suppress(OSError, NerveError):  # a plan not kept is planned again
        write_local(folder / PLANS, json.dumps(plans).encode())
