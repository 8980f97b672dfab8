"""``nerve fleet status``: each host's last ship, what it registered and how far behind it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nerve.fleet.head import Head, HeadError
from nerve.fleet.warehouse import Warehouse, host_of, property_note, segment_name
from nerve.log.manifest import read_manifest

__all__ = ["fleet_status", "verify_record_path"]


def verify_record_path(data_dir: Path) -> Path:
    return data_dir / "fleet" / "verify.json"


def fleet_status(
    wh: Warehouse, *, local_host: str, log_root: Path, data_dir: Path
) -> list[dict[str, Any]]:
    files: dict[str, list[Any]] = {}
    for data_file in wh.data_files():
        files.setdefault(host_of(data_file.file_path) or "?", []).append(data_file)
    shipped: dict[str, int] = {}
    conflicts: dict[str, int] = {}
    for snap in wh.table.snapshots():
        props = snap.summary.additional_properties if snap.summary else {}
        if "nerve.host" in props:
            shipped[props["nerve.host"]] = int(snap.timestamp_ms) * 1_000_000
            conflicts[props["nerve.host"]] = int(props.get("nerve.ship.conflicts", 0))
    for host, value in wh.registrations().items():
        time_ms, lost = property_note(value)
        if time_ms is not None:
            shipped[host], conflicts[host] = time_ms * 1_000_000, lost or 0
    verified = _last_verify(data_dir)
    failing = _failing(data_dir)
    rows = []
    for host in sorted(set(files) | set(shipped) | {local_host}):
        mine = files.get(host, [])
        registered = {segment_name(f.file_path) for f in mine}
        entry: dict[str, Any] = {
            "host": host,
            "last_ship_ns": shipped.get(host),
            "files": len(mine),
            "rows": sum(int(f.record_count) for f in mine),
            "conflicts": conflicts.get(host),  # races its last committed ship lost
        }
        if host == local_host:  # failed ships since the last good one: only this host knows
            entry.update(failing)
        entry.update(_lag(wh, host, registered, log_root if host == local_host else None))
        entry["verify"] = verified.get(host)
        rows.append(entry)
    return rows


def _lag(wh: Warehouse, host: str, registered: set[str], log_root: Path | None) -> dict[str, Any]:
    """Sealed segments the host holds that the table does not, and the HLC time between
    its newest sealed event and the newest registered one (0 when caught up)."""
    if log_root is not None:
        live = read_manifest(log_root / "manifest.jsonl").segments()
        names, newest = [s.name for s in live], (live[-1].max_hlc.physical_ns if live else None)
        ends = {s.name: s.max_hlc.physical_ns for s in live}
    else:
        data = wh.read(f"{wh.host_dir(host)}/head.json")
        try:
            head = Head.parse(data, host) if data else None
        except HeadError:
            head = None
        if head is None:
            return {"behind_segments": None, "behind_s": None}
        names = head.segments
        newest = head.body["max"][0] if head.body.get("max") else None
        ends = {}
    pending = [n for n in names if n not in registered]
    done = [ends[n] for n in names if n in registered and n in ends]
    behind: float | None = 0.0
    if pending and newest is not None:
        behind = (newest - max(done)) / 1e9 if done else None  # nothing registered: unknown
    return {"behind_segments": len(pending), "behind_s": behind}


def _failing(data_dir: Path) -> dict[str, Any]:
    from nerve.fleet.ship import last_ship

    failure = (last_ship(data_dir) or {}).get("failure") or {}
    return {"failures": int(failure.get("failures", 0)), "failure": failure.get("message")}


def _last_verify(data_dir: Path) -> dict[str, Any]:
    try:
        obj = json.loads(verify_record_path(data_dir).read_bytes())
    except (OSError, ValueError):
        return {}
    return {r["host"]: {"ok": r["ok"], "time_ns": obj.get("time_ns")} for r in obj.get("hosts", [])}
