"""Audit bundles and rollbacks through the real CLI: whose key is trusted, what is checked."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import blake3
import pytest
from nacl.signing import SigningKey

from nerve.canonical import det_cbor, det_cbor_decode
from nerve.chain import DOMAIN, MerkleAccumulator, link_id
from nerve.log.drafts import Draft
from nerve.workspace import WorkspaceDir, init_workspace
from tests.attention.test_attention_service import ATTENTION, cli, jcli, stream
from tests.conftest import run_cli


@pytest.fixture
def attended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WorkspaceDir:
    """A workspace whose log holds a sealed chain of decisions."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "owner-state"))
    workspace = init_workspace(tmp_path / "ws")
    (workspace.root / "nerve.yaml").write_text("senses: {}\n" + ATTENTION)
    with WorkspaceDir(workspace.root).open_log() as log:
        log.import_events(stream())
    ws = WorkspaceDir(workspace.root)
    cli(ws, "attend", "--replay")
    return ws


def _export(ws: WorkspaceDir, path: Path) -> dict[str, Any]:
    cli(ws, "audit", "export", "--out", str(path))
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _forge(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The bundle's chain re-signed link by link under a fresh key; and that key (hex)."""
    key = SigningKey.generate()
    pub = bytes(key.verify_key)
    cores = [det_cbor_decode(det_cbor_decode(bytes.fromhex(h))["core"]) for h in data["links"]]
    log = blake3.blake3(pub + cores[0]["nonce"]).digest()  # a new key makes a new log id
    acc, prev, links = MerkleAccumulator(), bytes(32), []
    for core in cores:
        assert core["kind"] != "rotate"
        core.update(log=log, prev=prev)
        if core["kind"] == "genesis":
            core["key"] = pub
        if core["kind"] == "checkpoint":
            core.update(head=prev, root=acc.root())
        raw = det_cbor(core)
        links.append(det_cbor({"core": raw, "sig": key.sign(DOMAIN + raw).signature}).hex())
        prev = link_id(raw)
        acc.append(prev)
    return {**data, "public_key": pub.hex(), "log_id": log.hex(), "links": links}, pub.hex()


def _verify(
    data: dict[str, Any], path: Path, *flags: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    path.write_text(json.dumps(data))
    return run_cli("audit", "verify", str(path), *flags, check=False, env=env)


def test_a_bundle_resigned_with_a_fresh_key_is_refused_without_a_trusted_key(
    attended: WorkspaceDir, tmp_path: Path
) -> None:
    data = _export(attended, tmp_path / "bundle.json")
    forged, forger = _forge(data)
    path, auditor = tmp_path / "forged.json", {"XDG_STATE_HOME": str(tmp_path / "auditor")}

    refused = _verify(forged, path, env=auditor)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    first, hint = refused.stderr.splitlines()
    assert first.startswith(f"ChainError: bundle for log {forged['log_id']}: no key is pinned")
    assert hint.startswith("hint: ") and "--key" in hint and "--trust-bundle-key" in hint

    taken = _verify(forged, path, "--trust-bundle-key", "--json", "--no-record", env=auditor)
    assert taken.returncode == 0 and json.loads(taken.stdout)["key_from"] == "bundle"
    assert f"warning: key {forger} was taken from the bundle itself" in taken.stderr

    given = _verify(forged, path, "--key", forger, "--json", "--no-record", env=auditor)
    assert given.returncode == 0 and json.loads(given.stdout)["key_from"] == "--key"
    assert _verify(forged, path, "--key", data["public_key"], env=auditor).returncode == 15


def test_a_key_pinned_for_the_log_id_is_used_and_a_forgery_still_refused(
    attended: WorkspaceDir, tmp_path: Path
) -> None:
    data = _export(attended, tmp_path / "bundle.json")
    path, auditor = tmp_path / "copy.json", {"XDG_STATE_HOME": str(tmp_path / "auditor")}
    assert _verify(data, path, "--key", data["public_key"], env=auditor).returncode == 0
    again = _verify(data, path, "--json", env=auditor)
    assert again.returncode == 0 and json.loads(again.stdout)["key_from"] == "trust record"
    forged, _ = _forge(data)
    assert _verify(forged, path, env=auditor).returncode == 1


def test_a_tampered_decisions_entry_is_caught(attended: WorkspaceDir, tmp_path: Path) -> None:
    data = _export(attended, tmp_path / "bundle.json")
    key, auditor = data["public_key"], {"XDG_STATE_HOME": str(tmp_path / "auditor")}
    entries = data["decisions"]
    k = next(i for i, e in enumerate(entries) if e["outcome"].startswith("hold:"))
    held = {(h["chain_seq"], h["source_line"]) for h in _held(attended)}
    assert (entries[k]["chain_seq"], entries[k]["source_line"]) in held
    fine = _verify(data, tmp_path / "fine.json", "--key", key, "--no-record", env=auditor)
    assert fine.returncode == 0

    changes = {
        "outcome": lambda e: e[k].update(outcome="surface"),
        "source_line": lambda e: e[k].update(source_line="nothing to see here"),
        "chain_seq": lambda e: e.pop(k),  # entry k now claims the next decision's seq
        "value_milli": lambda e: e[k].update(value_milli=e[k]["value_milli"] + 1),
    }
    for field, change in changes.items():
        tampered = copy.deepcopy(data)
        change(tampered["decisions"])
        proc = _verify(tampered, tmp_path / "t.json", "--key", key, "--json", "--no-record",
                       env=auditor)  # fmt: skip
        brk = json.loads(proc.stdout)["break"]
        assert (proc.returncode, brk["kind"], brk["seq"]) == (10, "edited", entries[k]["chain_seq"])
        assert brk["message"].startswith(f"decisions entry {k}: {field} is"), brk["message"]


def _held(ws: WorkspaceDir) -> list[dict[str, Any]]:
    out = cli(ws, "audit", "held", "--json").stdout  # type: ignore[attr-defined]
    return [json.loads(line) for line in out.splitlines()]


def _more(ws: WorkspaceDir, count: int, tag: str) -> None:
    """``count`` more observations, their lines marked with ``tag``, then attention."""
    drafts = [
        Draft.of("observation", source=e.source, trust=e.trust, line=f"{tag} {e.line}")
        for e in stream(count)
    ]
    with ws.open_log() as log:
        log.append_drafts(drafts)
    cli(ws, "attend", "--replay")


def test_a_rollback_is_reported_where_history_diverged(
    attended: WorkspaceDir, tmp_path: Path
) -> None:
    ws = attended
    backup = tmp_path / "backup"
    shutil.copytree(ws.data, backup)
    diverges_at = jcli(ws, "audit", "verify", "--no-record")["links"]
    _more(ws, 400, "first")
    accepted = jcli(ws, "audit", "verify")
    assert accepted["ok"] is True and accepted["checkpoint"] > diverges_at + 8

    shutil.rmtree(ws.data)  # the data folder is restored from the backup, then grows again
    shutil.copytree(backup, ws.data)
    _more(ws, 400, "second")
    elsewhere = {"XDG_STATE_HOME": str(tmp_path / "no-record-here")}
    regrown = json.loads(cli(ws, "audit", "verify", "--json", env=elsewhere).stdout)  # type: ignore[attr-defined]
    assert regrown["links"] >= accepted["checkpoint"]  # so the old checkpoint is passed too
    proc = cli(ws, "audit", "verify", "--json", check=False)
    brk = json.loads(proc.stdout)["break"]  # type: ignore[attr-defined]
    assert proc.returncode == 19  # type: ignore[attr-defined]
    assert (brk["kind"], brk["seq"]) == ("rolled-back", diverges_at)
