"""Two (or three) workspaces with no senses, each its own node, and real NATS servers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Place:
    """Where a group meets, as `nerve sync init` takes it, and the folder its bytes are in."""

    kind: str
    args: tuple[str, ...]
    stored: Path


@pytest.fixture(scope="module", params=["nats", "s3"])
def place(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Place]:
    """One behavioural suite per transport (CONTRIBUTING: NATS and S3 must never drift)."""
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "nats":
        with nats(folder) as servers:
            yield Place("nats", ("--nats", servers[0].url), servers[0].store)
        return
    from tests.helpers.seaweed import seaweed

    with seaweed(folder, bucket="sync") as s3, pytest.MonkeyPatch.context() as mp:
        for name, value in s3.env.items():
            mp.setenv(name, value)
        prefix = f"s3://sync/{folder.name}"
        yield Place("s3", ("--s3", prefix, "--endpoint", s3.endpoint), folder / "data")


def group_of(place: Place, first: WorkspaceDir, *others: WorkspaceDir) -> None:
    """``first`` creates a group at ``place``; each of ``others`` joins it with the code."""
    code = code_of(cli(first, "sync", "init", *place.args, "--device", first.node))
    for ws in others:
        cli(ws, "sync", "join", code, "--device", ws.node)


def emit(ws: WorkspaceDir, count: int, line: str = "event", **fields: object) -> None:
    """``count`` events of ``ws``'s own node, straight into its log (no daemon runs)."""
    from nerve.events import parse_source

    if isinstance(fields.get("source"), str):
        fields["source"] = parse_source(str(fields["source"]))
    from nerve.log.drafts import Draft

    drafts = [Draft.of("observation", line=f"{line} {i}", **fields) for i in range(count)]  # type: ignore[arg-type]
    with ws.open_log() as log:
        log.append_drafts(drafts)
