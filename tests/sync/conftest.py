"""Two (or three) workspaces with no senses, each its own node, and real NATS servers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.daemon_util import Daemon
from tests.helpers.natsd import NatsServer, nats


def device(tmp_path: Path, node: str, extra: str = "") -> WorkspaceDir:
    """A workspace whose events carry ``node``, with no senses (only what a test emits)."""
    ws = init_workspace(tmp_path / node)
    (ws.root / "nerve.yaml").write_text(f"node: {node}\nsync:\n  interval: 0.5\n{extra}")
    return WorkspaceDir.at(ws.root)


def cli(ws: WorkspaceDir, *args: str) -> str:
    return run_cli("--workspace", str(ws.root), *args, timeout=120).stdout


def code_of(output: str) -> str:
    """The join code from `nerve sync init`'s `code: …` line."""
    lines = [line for line in output.splitlines() if line.startswith("code: ")]
    assert len(lines) == 1, output
    return lines[0].removeprefix("code: ")


def status(ws: WorkspaceDir) -> dict[str, object]:
    found: dict[str, object] = json.loads(cli(ws, "sync", "status", "--json"))
    return found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[NatsServer]:
    with nats(tmp_path / "nats") as servers:
        yield servers[0]


@contextlib.contextmanager
def running(*spaces: WorkspaceDir) -> Iterator[list[Daemon]]:
    """A real daemon on each workspace, started side by side, stopped however the block ends."""
    daemons = [Daemon(ws.root) for ws in spaces]
    with ThreadPoolExecutor(len(daemons)) as pool:
        try:
            list(pool.map(Daemon.start, daemons))
            yield daemons
        finally:
            list(pool.map(Daemon.stop, daemons))


def all_verify(ws: WorkspaceDir) -> bool:
    """Every peer log under ``data/sync`` verifies (`replay --verify` checks the main log)."""
    from nerve.log.verify import verify

    roots = list((ws.data / "sync").glob("peers/*/log"))
    reports = [verify(root) for root in roots]
    assert all(not r.problems for r in reports), [r.problems for r in reports]
    return bool(roots)
