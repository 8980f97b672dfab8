"""The shared digest the daemon keeps across rounds (``OwnKeys``: only new events decoded)
is the digest computed afresh, whatever happens to the log between rounds: appends, a seal
and compaction, old segments archived, an erasure."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc

from nerve.clock import Hlc
from nerve.log.drafts import Draft
from nerve.sync.group import Group, Transport
from nerve.sync.history import OwnKeys, digest_of, shared_digest
from nerve.sync.ops import engine_for
from nerve.workspace import WorkspaceDir
from tests.sync.conftest import device, emit


def _fresh(ws: WorkspaceDir) -> tuple[str, int]:
    engine = engine_for(ws, Group.new("g", Transport("nats", "nats://x"), "d"))
    found = shared_digest(ws.log_root, ws.node, engine.sharing, engine.folder)
    return found.digest, found.events


def _kept(ws: WorkspaceDir, keys: OwnKeys) -> tuple[str, int]:
    found = digest_of(keys.read(), ws.data / "sync")
    return found.digest, found.events


def test_the_kept_digest_is_the_fresh_one_through_appends_imports_and_erasures(
    tmp_path: Path,
) -> None:
    ws = device(tmp_path, "alpha")
    engine = engine_for(ws, Group.new("g", Transport("nats", "nats://x"), "d"))
    keys = OwnKeys(ws.log_root, ws.node, engine.sharing)
    assert _kept(ws, keys) == _fresh(ws) and _fresh(ws)[1] == 0
    emit(ws, 30, "first")
    assert _kept(ws, keys) == _fresh(ws) and _fresh(ws)[1] == 30
    emit(ws, 5, "second")
    with ws.open_log() as log:
        log.seal()
        log.compact(target_rows=1000)
    assert _kept(ws, keys) == _fresh(ws) and _fresh(ws)[1] == 35
    with ws.open_log() as log:
        log.erase(lambda t: pc.equal(t.column("line"), "first 3"), reason="test", selection={})
    assert _kept(ws, keys) == _fresh(ws) and _fresh(ws)[1] == 34
    with ws.open_log() as log:
        log.append_drafts([Draft.of("observation", line="third")])
        log.seal()
        log.archive(Hlc(2**62, 0), tmp_path / "archive", vacuum=True)
    assert _kept(ws, keys) == _fresh(ws) and _fresh(ws)[1] == 0
    emit(ws, 2, "fourth")
    assert _kept(ws, keys) == _fresh(ws) and _fresh(ws)[1] == 2
