"""The world of one randomised partition run of ``nerve sync`` (issue 45, point 4): the
servers (a three-node NATS cluster, or a SeaweedFS bucket), the devices (each a workspace
with a real daemon process, its clock skewed with ``NERVE_CLOCK_SKEW_MS``, reaching the
servers only through fault-injecting proxies of its own) and the faults applied to them.

The schedule, the run and its checks are in :mod:`tests.helpers.partition_run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nerve.sync.group import Group, Transport
from nerve.workspace import WorkspaceDir
from tests.helpers.faultproxy import Proxies, Proxy
from tests.helpers.natsd import NatsServer, nats

START_S = 90.0


class Place(Protocol):
    """The servers of one run, as the run drives them."""

    kind: str
    faults: tuple[str, ...]

    @property
    def ports(self) -> list[int]: ...

    def transport(self, ports: list[int]) -> Transport: ...

    def fault(self, index: int, action: str) -> None: ...

    def heal(self) -> None: ...

    def replay(self, group: Group, count: int, rng: random.Random) -> int: ...


class NatsPlace:
    """A three-node NATS cluster whose servers do not tell clients about each other
    (``--no_advertise``), so every byte a device sends passes its proxies."""

    kind = "nats"
    faults = ("kill", "pause")

    def __init__(self, servers: list[NatsServer]) -> None:
        self.servers = servers
        self.paused: set[int] = set()

    @property
    def ports(self) -> list[int]:
        return [s.port for s in self.servers]

    def transport(self, ports: list[int]) -> Transport:
        return Transport("nats", ",".join(f"nats://127.0.0.1:{p}" for p in ports))

    def fault(self, index: int, action: str) -> None:
        """``kill`` (SIGKILL) or ``pause`` (SIGSTOP) a server; on a server already down,
        bring it back (restart or SIGCONT)."""
        server = self.servers[index]
        if server.process is None:
            server.start()
        elif index in self.paused:
            server.signal(signal.SIGCONT)
            self.paused.discard(index)
        elif action == "kill":
            server.kill()
        else:
            server.signal(signal.SIGSTOP)
            self.paused.add(index)

    def heal(self) -> None:
        for index, server in enumerate(self.servers):
            if server.process is None:
                server.start()
            elif index in self.paused:
                server.signal(signal.SIGCONT)
        self.paused.clear()

    def replay(self, group: Group, count: int, rng: random.Random) -> int:
        """Publish ``count`` stored boxes again under new message ids, late, one in four
        with a byte flipped (a server that repeats, reorders and corrupts); the boxes
        replayed (0 when no server answers)."""
        live = [s.url for i, s in enumerate(self.servers) if s.process and i not in self.paused]
        if not live:
            return 0
        try:
            return asyncio.run(asyncio.wait_for(_replay_nats(live, group, count, rng), 8))
        except Exception:  # a server that fell over meanwhile: nothing replayed
            return 0


async def _replay_nats(urls: list[str], group: Group, count: int, rng: random.Random) -> int:
    import nats as nats_client

    from nerve.sync.box import token

    nc = await nats_client.connect(servers=urls, connect_timeout=2, max_reconnect_attempts=0)
    try:
        js = nc.jetstream(timeout=3)
        stream = f"NERVE_{token(group.key, 'group')}"
        state = (await js.stream_info(stream)).state
        done = 0
        for _ in range(count if state.last_seq else 0):
            msg = await js.get_msg(stream, rng.randint(state.first_seq, state.last_seq))
            headers = {"Nats-Msg-Id": f"replay-{rng.getrandbits(64):x}"}
            data = flip(msg.data, rng) if rng.random() < 0.25 else msg.data
            await js.publish(msg.subject, data, headers=headers)
            done += 1
        return done
    finally:
        await nc.close()


class S3Place:
    """A prefix of a SeaweedFS bucket; its one process can be paused (SIGSTOP)."""

    kind = "s3"
    faults = ("pause",)

    def __init__(self, server: Any, prefix: str) -> None:
        self.server, self.prefix = server, prefix
        self.paused = False

    @property
    def ports(self) -> list[int]:
        return [int(self.server.endpoint.rsplit(":", 1)[1])]

    def transport(self, ports: list[int]) -> Transport:
        url = f"s3://{self.server.bucket}/{self.prefix}"
        return Transport("s3", url, f"http://127.0.0.1:{ports[0]}")

    def fault(self, index: int, action: str) -> None:
        self._signal(signal.SIGCONT if self.paused else signal.SIGSTOP)
        self.paused = not self.paused

    def heal(self) -> None:
        self._signal(signal.SIGCONT)
        self.paused = False

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.server.process.pid, sig)

    def replay(self, group: Group, count: int, rng: random.Random) -> int:
        """Copy ``count`` stored batch objects to new names of the same stamp (a bucket that
        lists a box twice), or one in four overwrite in place with a byte flipped (a bucket
        that corrupts: only the sender's resend repairs it); the boxes touched."""
        if self.paused:
            return 0
        from pyarrow import fs

        from nerve.sync.box import token

        store = self.server.filesystem()
        base = f"{self.server.bucket}/{self.prefix}/{token(group.key, 'group')}/b"
        try:
            infos = store.get_file_info(fs.FileSelector(base, recursive=True, allow_not_found=True))
            names = sorted(i.path for i in infos if i.type == fs.FileType.File)
            for name in rng.sample(names, min(count, len(names))):
                if rng.random() < 0.25:
                    with store.open_input_stream(name) as f:
                        damaged = flip(f.read(), rng)
                    with store.open_output_stream(name) as out:
                        out.write(damaged)
                    continue
                head, _, tail = name.rpartition("/")
                physical, logical, _ = tail.split("-", 2)
                copy = f"{head}/{physical}-{logical}-replay{rng.getrandbits(48):x}"
                store.copy_file(name, copy)
            return min(count, len(names))
        except OSError:
            return 0


def flip(blob: bytes, rng: random.Random) -> bytes:
    """``blob`` with one byte changed."""
    at = rng.randrange(len(blob))
    return blob[:at] + bytes([blob[at] ^ 0x5A]) + blob[at + 1 :]


@contextlib.contextmanager
def nats_place(folder: Path) -> Iterator[NatsPlace]:
    """A fresh three-node cluster for one run."""
    with nats(folder, cluster=3, extra=("--no_advertise",)) as servers:
        place = NatsPlace(servers)
        try:
            yield place
        finally:
            place.heal()  # a paused server would not stop


@dataclass
class Device:
    """One device: a workspace, its daemon process, its proxies, its clock skew, and the
    ids of every event its emits acknowledged."""

    ws: WorkspaceDir
    skew_ms: int
    links: list[Proxy]
    proc: subprocess.Popen[bytes] | None = None
    acked: list[bytes] = field(default_factory=list)
    failed_emits: int = 0
    kills: int = 0

    @property
    def name(self) -> str:
        return self.ws.node

    def start(self) -> None:
        """``nerve daemon run`` in a session of its own, the skew in its environment; back
        once it answers on its socket."""
        from nerve.transport import running

        env = {**os.environ, "NERVE_CLOCK_SKEW_MS": str(self.skew_ms)}
        with open(self.ws.data / "daemon.log", "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "nerve", "--workspace", str(self.ws.root), "daemon", "run"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                env=env,
            )
        deadline = time.monotonic() + START_S
        while not running(self.ws):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: the daemon did not start\n{self.log_tail()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the daemon and every process of its session."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None
            self.kills += 1

    def stop(self) -> None:
        """SIGTERM, as ``nerve daemon stop`` does; SIGKILL if it has not ended in 30 s."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()
        self.proc = None

    def emit(self, count: int, tag: str, blob: int = 0) -> None:
        """``count`` events through the daemon (straight into the log while it is down),
        each with ``blob`` random bytes (as hex) in its payload; their ids are noted once
        the emit returned."""
        from nerve.events import parse_source
        from nerve.log.drafts import Draft
        from nerve.logops import emit

        source = parse_source("endpoint")
        drafts = [
            Draft.of(line=f"{tag} {i}", source=source, payload={"blob": os.urandom(blob).hex()})
            if blob
            else Draft.of(line=f"{tag} {i}", source=source)
            for i in range(count)
        ]
        try:
            self.acked += [e.id for e in emit(self.ws, drafts)]
        except Exception:  # not acknowledged: the run only asks that nothing acked is lost
            self.failed_emits += 1

    def failed_rounds(self) -> int:
        """How many sync rounds the daemon log reports failed (the faults that bit)."""
        path = self.ws.data / "daemon.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return text.count("sync round failed")

    def log_tail(self, lines: int = 12) -> str:
        """The daemon log's last lines about sync rounds."""
        path = self.ws.data / "daemon.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        picked = [line for line in text.splitlines() if "sync round" in line]
        return "\n".join(picked[-lines:])


def join_group(devices: list[Device], place: Place, deadline_s: float = 60.0) -> Group:
    """The first device creates the group (retrying while the servers elect a leader), the
    others join with its code; then each device's group points at its own proxies."""
    from nerve.sync import ops
    from nerve.sync.group import SyncError

    first = devices[0]
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            group = ops.init(first.ws, "jepsen", _via(place, first), first.name)
            break
        except SyncError:
            if time.monotonic() > deadline:
                raise
            (first.ws.data / "sync" / "group.json").unlink(missing_ok=True)
            time.sleep(0.5)
    for device in devices[1:]:
        ops.join(device.ws, group.code(), device.name)
        folder = device.ws.data / "sync"
        joined = Group.load(folder)
        assert joined is not None
        dataclasses.replace(joined, transport=_via(place, device)).save(folder)
    return group


def _via(place: Place, device: Device) -> Transport:
    return place.transport([link.port for link in device.links])


def new_device(folder: Path, index: int, skew_ms: int, place: Place, links: Proxies) -> Device:
    """A workspace with no senses and sync rounds every half second."""
    from tests.sync.conftest import device

    ws = device(folder, f"d{index}")
    return Device(ws, skew_ms, [links.to(port) for port in place.ports])
