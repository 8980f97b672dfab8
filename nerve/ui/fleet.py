"""The fleet in ``nerve ui``: which hosts there are, one host's shipped segments, each host's
health, read as ``nerve fleet query`` and ``nerve fleet status`` read them.

This host's own events are read from its log (shipped or not); another host's are the
segments it shipped, planned with the window's start so only files reaching it are read,
and fetched into the fleet cache as ``fleet query`` does. A file with delete files applied is
left out and said so: such a table is not what its host sealed (``nerve fleet verify``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nerve.errors import UsageError

if TYPE_CHECKING:
    from nerve.api import Workspace

__all__ = ["HostFiles", "configured", "health", "host_files", "hosts", "local_host"]


@dataclass(frozen=True)
class HostFiles:
    """One other host's shipped segments: (name, local path) each, and what was left out."""

    host: str
    files: list[tuple[str, str]]
    warnings: list[str]


def configured(ws: Workspace) -> bool:
    return ws.settings.config.fleet is not None


def local_host(ws: Workspace) -> str:
    return ws.fleet.host()


def hosts(ws: Workspace) -> list[str]:
    """This host, then every host with files in the table (none without a fleet)."""
    from nerve.fleet.warehouse import host_of

    if not configured(ws):
        return []
    mine = local_host(ws)
    found = {host_of(f.file_path) for f in ws.fleet.warehouse().data_files()} - {None, mine}
    return [mine, *sorted(h for h in found if h is not None)]


def host_files(ws: Workspace, host: str, since_ns: int | None) -> HostFiles:
    """The segments ``host`` shipped whose times reach ``since_ns``, fetched locally."""
    from nerve.fleet.query import fetch, plan
    from nerve.fleet.warehouse import segment_name

    if not configured(ws):
        raise UsageError("no fleet: the host filter needs a fleet: section", field="host")
    wh = ws.fleet.warehouse()
    if host not in hosts(ws):
        raise UsageError(f"no host {host!r} in the fleet", field="host")
    found = plan(wh, since_ns=since_ns, hosts=[host])
    kept = [u for u in found.files.get(host, []) if u not in found.deletes]
    planned = type(found)({host: kept}, found.total, since_ns)
    cache = ws.fleet.cache()
    if kept and ws.log.encrypted():
        raise UsageError(
            "an encrypted workspace keeps no fleet cache (its files would be plaintext)",
            field="host",
        )
    local = fetch(wh, planned, cache) if kept and ws.fleet.config().cache_mb else {}
    if kept and not local:
        raise UsageError("the fleet cache is off (fleet.cache_mb: 0)", field="host")
    left = [f"{len(found.deletes)} file(s) with delete files are not shown"] * bool(found.deletes)
    files = [(segment_name(u), str(local[u])) for u in dict.fromkeys(kept)]
    return HostFiles(host, files, left)


def health(ws: Workspace) -> list[dict[str, Any]]:
    """Each host's last ship, files, rows, lag and last verify (``nerve fleet status``)."""
    if not configured(ws):
        return []
    return [host.to_json() for host in ws.fleet.status()]
