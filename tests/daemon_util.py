"""Helpers for tests that run a real daemon process on a temp workspace."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nerve.events import decode_payload
from nerve.log.reader import snapshot, table_since
from nerve.runtime import ipc
from tests.conftest import run_cli

COUNTER = """
from nerve import Observation, Result
initial_state = {"n": 0}
def compute(state):
    n = state["n"] + 1
    return Result(state={"n": n}, observations=[Observation(source="endpoint", line=f"count {n}")])
"""


def write_sense(root: Path, name: str, code: str) -> None:
    folder = root / "senses" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sense.py").write_text(code)


class Daemon:
    """A real `nerve daemon start` process for one workspace."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def socket(self) -> Path:
        return self.root / "data" / "nerve.sock"

    def start(self) -> None:
        """`nerve daemon start`, then its warm-up: the tests here read a whole daemon."""
        run_cli("--workspace", str(self.root), "daemon", "start", timeout=90)
        self.wait_for(self.warm, timeout=90, what="the warm-up to end")

    def warm(self) -> bool:
        return self.request({"type": "status"})["status"]["warming"] is False

    def stop(self) -> None:
        run_cli("--workspace", str(self.root), "daemon", "stop", check=False, timeout=60)

    def pid(self) -> int:
        return int((self.root / "data" / "nerve.pid").read_text())

    def request(self, msg: dict[str, Any]) -> dict[str, Any]:
        return ipc.request(self.socket, msg, timeout=30)

    def events(self, kind: str | None = None, subject: str | None = None) -> list[dict[str, Any]]:
        table = table_since(snapshot(self.root / "data" / "log"))
        rows = []
        for row in table.to_pylist():
            if (kind is None or row["kind"] == kind) and (
                subject is None or row["subject"] == subject
            ):
                row["data"] = decode_payload(row["payload"])
                rows.append(row)
        return rows

    def wait_for(
        self, check: Callable[[], Any], timeout: float = 20.0, what: str = "condition"
    ) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.1)
        log = (self.root / "data" / "daemon.log").read_text(errors="replace")[-3000:]
        raise AssertionError(f"timed out waiting for {what}; daemon log:\n{log}")


@contextlib.contextmanager
def started(root: Path) -> Iterator[Daemon]:
    """A daemon running on ``root`` for the length of the block, stopped however it ends."""
    d = Daemon(root)
    d.start()
    try:
        yield d
    finally:
        d.stop()
