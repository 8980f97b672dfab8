"""Hostile pass: ``nerve forget --match TEXT`` leaves no hash of TEXT behind. The
``payload.erased`` record stays in the log for good (and is shown by every reader); a bare
blake3 of a short secret there is found by hashing each guess (a 4-digit PIN: 10,000)."""

from __future__ import annotations

import json

import blake3

from nerve.log.drafts import Draft
from nerve.log.erasure import ERASED_KIND
from nerve.log.reader import snapshot, table_since
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli

PIN = "4921"


def test_a_forgotten_pin_is_not_found_by_hashing_every_guess(workspace: WorkspaceDir) -> None:
    with workspace.open_log() as log:
        log.append_drafts(
            [Draft.of(source=5, line=f"bank pin {PIN}"), Draft.of(source=5, line="x")]
        )
        log.seal()
    run_cli("--workspace", str(workspace.root), "forget", "--match", PIN)
    rows = table_since(snapshot(workspace.log_root)).to_pylist()
    (erased,) = [r for r in rows if r["kind"] == ERASED_KIND]
    text = bytes(erased["payload"]).decode() + erased["line"] + erased["subject"]
    guesses = {blake3.blake3(f"{n:04d}".encode()).hexdigest(): f"{n:04d}" for n in range(10_000)}
    found = [guesses[h] for h in guesses if h in text]
    assert found == []
    assert json.loads(bytes(erased["payload"]))["selection"]["match_text"] is True
