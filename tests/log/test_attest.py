"""Trust ``Attested`` only with an Ed25519 attestation by a key the workspace pins."""

from __future__ import annotations

import json
from pathlib import Path

import blake3
import pytest
from nacl.signing import SigningKey

from nerve.contract import Observation
from nerve.errors import SenseError, TrustError
from nerve.events import NERVE_SOURCE, SourceClass, Trust
from nerve.log.attest import ATTEST_KIND, DOMAIN, check_batch, claim, sign
from nerve.log.drafts import Draft
from nerve.log.reader import snapshot, table_since
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.daemon_util import Daemon

SEED = bytes(range(32))  # a published test key, never a real one
DEVICE = SigningKey(SEED)
PUBLIC = DEVICE.verify_key.encode().hex()
RULE = "rule: Attested needs an Ed25519 signature over the event's claim by a key pinned"


def _workspace(root: Path, keys: list[str], senses: bool = True) -> WorkspaceDir:
    init_workspace(root)
    text = "" if senses else "senses: {}\n"
    listed = "".join(f"    - {key}\n" for key in keys)
    text += f"attestation:\n  keys:\n{listed}" if keys else ""
    if not senses or keys:
        base = (root / "nerve.yaml").read_text() if senses else ""
        (root / "nerve.yaml").write_text(base + "\n" + text)
    return WorkspaceDir(root)


def _event(**change: object) -> dict[str, object]:
    base: dict[str, object] = {
        "source": "system_log",
        "trust": "Attested",
        "line": "sandbox run 7 exited 0",
        "payload": {"run": 7, "exit": 0, "ratio": 1e-7},
        "subject": "sandbox",
        "valid_time_ns": 1_700_000_000_000_000_000,
    }
    return {**base, **change}


def _signed(obj: dict[str, object], seed: bytes = SEED) -> dict[str, object]:
    from nerve.logops import draft_of

    return {**obj, "attestation": sign(seed, draft_of(obj))}


def _emit(ws: WorkspaceDir, *objs: dict[str, object], check: bool = True) -> object:
    text = "".join(json.dumps(o) + "\n" for o in objs)
    return run_cli("--workspace", str(ws.root), "emit", "--jsonl", "-", input=text, check=check)


def _rows(ws: WorkspaceDir) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = table_since(snapshot(ws.log_root)).to_pylist()
    return rows


def test_the_claim_is_the_documented_bytes() -> None:
    draft = Draft.of(source=2, trust=0, line="x", payload=b"", subject="s", valid_time_ns=-1)
    want = DOMAIN + b"".join(
        len(f).to_bytes(4, "big") + f
        for f in (
            b"observation", b"s", (2).to_bytes(4, "big"), b"\x00",
            (2**64 - 1).to_bytes(8, "big"), blake3.blake3(b"").digest(), b"x",
        )
    )  # fmt: skip
    assert claim(draft) == want and DOMAIN == b"nerve.attest.v1\x00"


def test_emit_without_an_attestation_is_refused_naming_the_rule(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", [PUBLIC])
    args = ("--workspace", str(ws.root), "emit", "--source", "shell", "--trust", "Attested")
    proc = run_cli(*args, "--line", "trust me", check=False)
    first = proc.stderr.splitlines()[0]
    assert proc.returncode == 1 and first.startswith("TrustError: ")
    assert "no trust.attestation event follows it" in first and RULE in first
    assert _rows(ws) == []


def test_a_signed_event_is_stored_with_its_attestation(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", [PUBLIC])
    _emit(ws, _event(trust="FirstParty"), _signed(_event()))
    rows = _rows(ws)
    assert [r["kind"] for r in rows] == ["observation", "observation", ATTEST_KIND]
    assert [r["trust"] for r in rows] == [1, 0, 1] and rows[2]["source"] == NERVE_SOURCE
    body = json.loads(rows[2]["payload"])  # type: ignore[arg-type]
    assert body["key"] == PUBLIC and set(body) == {"claim", "key", "sig"}
    DEVICE.verify_key.verify(claim(_as_draft(rows[1])), bytes.fromhex(body["sig"]))
    # the pair exports and imports into a log that pins the same key, and only there
    dump = run_cli("--workspace", str(ws.root), "tail", "--all", "--json").stdout
    copy = _workspace(tmp_path / "copy", [PUBLIC])
    run_cli("--workspace", str(copy.root), "import", "-", input=dump)
    assert [r["id"] for r in _rows(copy)] == [r["id"] for r in rows]
    stranger = _workspace(tmp_path / "stranger", [])
    proc = run_cli("--workspace", str(stranger.root), "import", "-", input=dump, check=False)
    assert proc.returncode == 1 and "the workspace pins no key" in proc.stderr
    alone = "\n".join(line for line in dump.splitlines() if ATTEST_KIND not in line)
    proc = run_cli("--workspace", str(copy.root), "import", "-", input=alone, check=False)
    assert "no trust.attestation event follows it" in proc.stderr


def _as_draft(row: dict[str, object]) -> Draft:
    return Draft(
        str(row["kind"]), int(row["source"]), int(row["trust"]), str(row["line"]),  # type: ignore[call-overload]
        bytes(row["payload"]), str(row["subject"]), row["valid_time_ns"],  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("attestation", "problem"),
    [
        ("other-key", "is not pinned"),
        ("edited", "the signature does not verify"),
        ("bad-sig", "the signature does not verify"),
        ("malformed", 'attestation must be {"key": <hex>, "sig": <hex>}'),
    ],
)
def test_what_is_refused(tmp_path: Path, attestation: str, problem: str) -> None:
    ws = _workspace(tmp_path / "ws", [PUBLIC])
    obj = _signed(_event())
    if attestation == "other-key":
        obj = _signed(_event(), seed=bytes(32))
    elif attestation == "edited":  # signed, then the line changed on the way
        obj = {**obj, "line": "sandbox run 7 exited 1"}
    elif attestation == "bad-sig":
        att = dict(obj["attestation"])  # type: ignore[call-overload]
        att["sig"] = ("00" if att["sig"][:2] != "00" else "01") + att["sig"][2:]
        obj = {**obj, "attestation": att}
    else:
        obj = {**obj, "attestation": {"key": PUBLIC}}
    proc = _emit(ws, obj, check=False)
    assert proc.returncode == 1 and problem in proc.stderr  # type: ignore[attr-defined]
    assert _rows(ws) == []


def test_check_batch_and_senses() -> None:
    draft = Draft.of(source=int(SourceClass.SHELL), trust=Trust.ATTESTED, line="x")
    with pytest.raises(TrustError, match=r"no trust\.attestation event follows it"):
        check_batch([draft], [PUBLIC])
    check_batch([Draft.of(trust=Trust.FIRST_PARTY)], [])  # other levels need nothing
    obs = Observation(source="shell", line="x", trust="Attested")
    with pytest.raises(SenseError, match="a sense cannot attest"):
        obs.normalised()


def test_the_daemon_applies_the_same_rule(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", [PUBLIC], senses=False)
    daemon = Daemon(ws.root)
    daemon.start()
    try:
        ok = daemon.request({"type": "emit", "events": [_signed(_event())]})
        assert ok["ok"] and [e["kind"] for e in ok["events"]] == ["observation", ATTEST_KIND]
        refused = daemon.request({"type": "emit", "events": [_event()]})
        assert not refused["ok"] and refused["error"]["type"] == "TrustError"
        assert RULE in refused["error"]["message"]
        proc = _emit(ws, _event(), check=False)  # the CLI through the daemon
        assert proc.returncode == 1 and "TrustError: " in proc.stderr  # type: ignore[attr-defined]
    finally:
        daemon.stop()
    assert [r["trust"] for r in _rows(ws) if r["kind"] == "observation"] == [0]
