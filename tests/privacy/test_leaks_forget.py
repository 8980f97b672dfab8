"""Hostile pass: ``nerve forget --match TEXT`` leaves no hash of TEXT behind. The
``payload.erased`` record stays in the log for good (and is shown by every reader); a bare
blake3 of a short secret there is found by hashing each guess (a 4-digit PIN: 10,000)."""

from __future__ import annotations

import json
from pathlib import Path

import blake3
import pytest

import nerve
from nerve import logops
from nerve.clock import Hlc
from nerve.events import Event, Trust
from nerve.log.drafts import Draft
from nerve.log.erasure import ERASED_KIND
from nerve.log.reader import snapshot, table_since
from nerve.ui import data
from nerve.ui.select import Filters
from nerve.workspace import WorkspaceDir, init_workspace
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


def _ids_of_guesses(row: dict[str, object]) -> dict[str, str]:
    """The id each guess of an erased row's line would give it (every other field shown)."""
    out = {}
    for n in range(10_000):
        event = Event(
            hlc=Hlc(int(str(row["physical_ns"])), int(str(row["logical"]))),
            node=str(row["node"]), kind=str(row["kind"]), subject=str(row["subject"]),
            source=int(str(row["source"])), trust=Trust(int(str(row["trust"]))),
            valid_time_ns=None, payload=b"", line=f"bank pin {n:04d}",
        )  # fmt: skip
        out[event.id.hex()] = f"{n:04d}"
    return out


def test_an_erased_rows_id_does_not_check_a_guess_of_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the SQL box (MCP's sandbox) and the events page: the stored id of an erased
    row is blake3 over fields all shown but the line, so it would name the PIN."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    init_workspace(tmp_path / "ws")
    (tmp_path / "ws" / "nerve.yaml").write_text("senses: {}\nlog:\n  durability: os\n")
    ws = WorkspaceDir(tmp_path / "ws")
    logops.emit(ws, [Draft.of(source=5, line=f"bank pin {PIN}"), Draft.of(source=5, line="x")])
    door = nerve.open(ws.root)
    data.forget(door, match=PIN, kinds=[], sources=[], before=None, after=None,
                reason="t", dry_run=False)  # fmt: skip
    cols = "physical_ns, logical, node, kind, subject, source, trust, lower(hex(id)) AS id"
    out = data.sql(nerve.open(ws.root), f"SELECT {cols} FROM events WHERE line IS NULL")
    (row,) = [dict(zip(out["columns"], r, strict=True)) for r in out["rows"]]
    guesses = _ids_of_guesses(row)
    page = data.events(nerve.open(ws.root), Filters(), data.window("1h", None))
    shown = json.dumps([out, page], default=str)
    assert [pin for h, pin in guesses.items() if h in shown] == []
