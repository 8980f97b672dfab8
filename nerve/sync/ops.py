"""What ``nerve sync`` does to a workspace: init, join, a round now, status, leave.

Each call connects to the group's transport, does its work and disconnects; the daemon
keeps one :class:`~nerve.sync.engine.Engine` and one connection instead (see
:mod:`nerve.runtime.syncer`).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from nerve.sync.connect import open_transport
from nerve.sync.engine import Engine, RoundResult, read_statuses
from nerve.sync.group import Group, SyncError, Transport, check_name, decode_code
from nerve.sync.history import Sharing, peer_roots

if TYPE_CHECKING:
    from nerve.sync.transport import Transport as Bus
    from nerve.workspace import WorkspaceDir

__all__ = ["SyncStatus", "device_names", "engine_for", "init", "join", "leave", "now", "status"]

T = TypeVar("T")


def sync_folder(ws: WorkspaceDir) -> Path:
    return ws.data / "sync"


def load_group(ws: WorkspaceDir) -> Group:
    """The group this workspace is in; ``SyncError`` with a hint when it is in none."""
    group = Group.load(sync_folder(ws))
    if group is None:
        raise SyncError(
            f"{sync_folder(ws)}: this workspace is in no sync group",
            hint="nerve sync init --nats URL, or nerve sync join CODE",
        )
    return group


def engine_for(ws: WorkspaceDir, group: Group) -> Engine:
    """An engine for ``ws`` built from its settings (``sync:``, ``privacy:``, ``log:``)."""
    from nerve.privacy.policy import Policy

    cfg = ws.config
    sharing = Sharing(cfg.sync.keep_local, Policy(cfg.privacy))
    log = ws.log_config()
    opts = {
        "durability": log.durability,
        "seal_max_events": log.seal_max_events,
        "seal_max_age_ns": log.seal_max_age * 10**6,
        "max_offset_ns": log.max_clock_offset * 10**6,
    }
    return Engine(sync_folder(ws), ws.log_root, ws.node, group, sharing, opts)


def _with_bus(ws: WorkspaceDir, group: Group, work: Callable[[Engine, Bus], Awaitable[T]]) -> T:
    engine = engine_for(ws, group)

    async def run() -> T:
        bus = await open_transport(group, engine.me)
        try:
            return await work(engine, bus)
        finally:
            try:
                engine.flush()  # the sent mark: may fail as any write may
            finally:
                await bus.close()

    return asyncio.run(run())


def init(ws: WorkspaceDir, name: str, transport: Transport, device: str | None = None) -> Group:
    """Create a group (a fresh key), join it as this device, and announce it on the transport."""
    _refuse_second(ws)
    group = Group.new(name, transport, check_name(device or _device(ws)))
    _with_bus(ws, group, lambda e, b: e.announce(b))
    group.save(sync_folder(ws))
    return group


def join(ws: WorkspaceDir, code: str, device: str | None = None) -> Group:
    """Join the group a code names; the first round fetches the whole shared history."""
    _refuse_second(ws)
    group = decode_code(code, check_name(device or _device(ws)))
    _with_bus(ws, group, lambda e, b: e.announce(b))
    group.save(sync_folder(ws))
    return group


def now(ws: WorkspaceDir) -> RoundResult:
    """One sync round now (send, receive, announce): through the daemon when one runs (it
    writes the peer logs), else here."""
    from nerve.commands import Reply
    from nerve.commands.daemon import SyncRound
    from nerve.transport import connect

    group = load_group(ws)

    def here() -> RoundResult:
        return _with_bus(ws, group, lambda e, b: e.round(b))

    def read(reply: Reply) -> RoundResult:
        return RoundResult(**(reply.fields.get("round") or {}))

    return connect(ws).either(SyncRound(), log=here, read=read)


def leave(ws: WorkspaceDir) -> str:
    """Leave the group: its key and state go; peers' events already received stay readable
    (under ``data/sync/left/``). Returns the group's name."""
    folder = sync_folder(ws)
    group = load_group(ws)
    peers = folder / "peers"
    if peers.is_dir():
        (folder / "left").mkdir(exist_ok=True)
        shutil.move(str(peers), str(folder / "left" / f"{group.name}-{_stamp()}"))
    for name in ("group.key", "group.json", "state.json"):
        (folder / name).unlink(missing_ok=True)
    return group.name


@dataclass(frozen=True)
class SyncStatus:
    """Each device's shared digest and how many shared events it lacks; ``in_sync`` when
    every device has the same digest and lacks none."""

    group: str
    devices: list[dict[str, Any]]
    in_sync: bool

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "devices": self.devices, "in_sync": self.in_sync}


def status(ws: WorkspaceDir) -> SyncStatus:
    """Where every device of the group stands, as their status boxes (and this device, live)
    say."""
    group = load_group(ws)

    async def work(engine: Engine, bus: Bus) -> SyncStatus:
        found = await engine.announce(bus)
        seen: dict[str, dict[str, Any]] = {}
        for body in await read_statuses(group.key, bus):
            node = str(body.get("node"))
            if node not in seen or int(body.get("time_ns", 0)) > int(seen[node].get("time_ns", 0)):
                seen[node] = body
        seen[engine.node] = {"node": engine.node, "device": group.device, **found.to_json()}
        return _report(group.name, seen)

    return _with_bus(ws, group, work)


def _report(name: str, seen: dict[str, dict[str, Any]]) -> SyncStatus:
    """Count each device's lag against what every other device says it holds of its own."""
    own = {n: int(b.get("nodes", {}).get(n, [0])[0]) for n, b in seen.items()}
    devices = []
    for node, body in sorted(seen.items()):
        held = body.get("nodes", {})
        behind = sum(max(0, c - int(held.get(n, [0])[0])) for n, c in own.items() if n != node)
        devices.append(
            {
                "node": node,
                "device": str(body.get("device") or node),
                "digest": str(body.get("digest")),
                "events": int(body.get("events", 0)),
                "behind": behind,
            }
        )
    digests = {d["digest"] for d in devices}
    return SyncStatus(name, devices, len(digests) == 1 and all(d["behind"] == 0 for d in devices))


def device_names(ws: WorkspaceDir) -> dict[str, str]:
    """node → device name for this device and every peer it has heard from."""
    import json

    folder = sync_folder(ws)
    group = Group.load(folder)
    names = {ws.node: group.device} if group is not None and group.device else {}
    for _, root in peer_roots(folder):
        path = root.parent / "device.json"
        if path.exists():
            body = json.loads(path.read_text())
            names[str(body["node"])] = str(body.get("device") or body["node"])
    return names


def _refuse_second(ws: WorkspaceDir) -> None:
    if (sync_folder(ws) / "group.json").exists():
        raise SyncError(
            f"{sync_folder(ws)}: this workspace is already in a sync group",
            hint="nerve sync leave first",
        )


def _device(ws: WorkspaceDir) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_-]", "-", ws.node)[:63].strip("-") or "device"


def _stamp() -> str:
    import time

    return time.strftime("%Y%m%dT%H%M%S", time.gmtime())
