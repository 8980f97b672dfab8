"""The attacker with root and the live seal state at time T (epoch 4) against what was
sealed before: every attempt is reported by ``nerve audit verify --seed``, naming the first
failing epoch (docs/sealing.md, issue 46)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import blake3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nerve.canonical import canonical_json
from nerve.log.manifest import ZERO_HASH
from nerve.log.paths import LogPaths
from nerve.seal import SealDir, Sealer, setup
from nerve.seal.note import Seal, parse, sign
from nerve.seal.scheme import epoch_key
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.seal.sealed import EPOCH_S, Sealed, build


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sealed")


@pytest.fixture(scope="module")
def history(folder: Path) -> Sealed:
    return build(folder / "ws", old_copy=folder / "after-epoch-1")


@pytest.fixture
def sealed(history: Sealed, tmp_path: Path) -> Sealed:
    """A copy of the sealed workspace for one attack."""
    root = tmp_path / "ws"
    shutil.copytree(history.ws.root, root, symlinks=True)
    return Sealed(WorkspaceDir(root), history.seed, history.records)


def verdict(sealed: Sealed) -> dict[str, Any]:
    """``nerve audit verify --seed SEED --json`` on the workspace; it must exit 1 or 0."""
    proc = run_cli(
        "--workspace", str(sealed.ws.root), "audit", "verify", "--seed", sealed.seed.text(),
        "--json", check=False,
    )  # fmt: skip
    data: dict[str, Any] = json.loads(proc.stdout)
    assert proc.returncode == (0 if data["ok"] else 1), proc.stderr
    return data


def failure(sealed: Sealed) -> tuple[int, str]:
    data = verdict(sealed)
    assert not data["ok"], "the attack was not noticed"
    return data["failure"]["epoch"], data["failure"]["kind"]


# -- the attacker's tools ----------------------------------------------------------------


def manifest_lines(ws: WorkspaceDir) -> list[bytes]:
    return LogPaths(ws.log_root).manifest.read_bytes().split(b"\n")[:-1]


def write_rechained(ws: WorkspaceDir, records: list[dict[str, Any]]) -> None:
    """Write the manifest anew, every ``prev`` recomputed: it verifies as a whole chain."""
    prev, lines = ZERO_HASH, []
    for rec in records:
        line = canonical_json({**rec, "prev": prev})
        lines.append(line)
        prev = blake3.blake3(line).hexdigest()
    LogPaths(ws.log_root).manifest.write_bytes(b"".join(line + b"\n" for line in lines))


def first_segment(ws: WorkspaceDir, epoch_records: int) -> tuple[int, str]:
    """The first manifest record (below ``epoch_records``) adding a segment, and its name."""
    for index, line in enumerate(manifest_lines(ws)[:epoch_records]):
        added = json.loads(line).get("add", [])
        if added:
            return index, str(added[0]["segment"])
    raise AssertionError("no segment sealed")


def edited_segment(path: Path, kind: str | None) -> bytes:
    """The segment's Parquet bytes with one row's line changed (of ``kind`` if given)."""
    table = pq.read_table(path)
    kinds = table.column("kind").to_pylist()
    row = kinds.index(kind) if kind else 0
    lines = table.column("line").to_pylist()
    lines[row] = "yesterday read differently"
    table = table.set_column(table.schema.get_field_index("line"), "line", pa.array(lines))
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def rewrite_in_place(sealed: Sealed, kind: str | None = None) -> int:
    """Edit a row of the first segment, keeping its file name; the record that added it."""
    index, name = first_segment(sealed.ws, sealed.records[0])
    path = LogPaths(sealed.ws.log_root).segment(name)
    data = edited_segment(path, kind)
    path.chmod(0o600)
    path.write_bytes(data)
    return index


def rewrite_and_rechain(sealed: Sealed, kind: str | None = None) -> int:
    """Edit a row, store the segment under its new hash and re-chain the whole manifest
    (what a careful attacker with root does: the log's own verify sees nothing wrong)."""
    index, name = first_segment(sealed.ws, sealed.records[0])
    paths = LogPaths(sealed.ws.log_root)
    data = edited_segment(paths.segment(name), kind)
    new = blake3.blake3(data).hexdigest()
    paths.segment(new).write_bytes(data)
    paths.segment(name).unlink()
    records = [
        json.loads(line.replace(name.encode(), new.encode())) for line in manifest_lines(sealed.ws)
    ]
    write_rechained(sealed.ws, records)
    return index


# -- the attacks -------------------------------------------------------------------------


def test_the_untouched_history_verifies(sealed: Sealed) -> None:
    data = verdict(sealed)
    assert data["ok"] and data["epochs_verified"] == 4, data


def test_an_event_rewritten_in_place_is_named_at_its_epoch(sealed: Sealed) -> None:
    index = rewrite_in_place(sealed, "observation")
    assert failure(sealed) == (sealed.first_covering(index), "segment")


def test_an_event_rewritten_and_the_manifest_rechained_is_named_at_its_epoch(
    sealed: Sealed,
) -> None:
    index = rewrite_and_rechain(sealed, "observation")
    assert failure(sealed) == (sealed.first_covering(index), "manifest")


def test_a_decision_rewritten_is_named_at_its_epoch(sealed: Sealed) -> None:
    index = rewrite_and_rechain(sealed, "attention.decision")
    assert failure(sealed) == (sealed.first_covering(index), "manifest")


def test_a_manifest_record_edited_and_rechained_is_named_at_its_epoch(sealed: Sealed) -> None:
    records = [json.loads(line) for line in manifest_lines(sealed.ws)]
    records[1]["time_ns"] = records[1].get("time_ns", 0) + 1
    write_rechained(sealed.ws, records)
    assert failure(sealed) == (sealed.first_covering(1), "manifest")


def test_a_segment_replaced_is_named_at_its_epoch(sealed: Sealed) -> None:
    index, name = first_segment(sealed.ws, sealed.records[3])
    path = LogPaths(sealed.ws.log_root).segment(name)
    path.write_bytes(path.read_bytes()[:-7] + b"garbage")
    assert failure(sealed) == (sealed.first_covering(index), "segment")


def test_a_log_truncated_at_an_epoch_boundary_is_named(sealed: Sealed) -> None:
    keep = sealed.records[2]  # what epoch 2 sealed: epoch 3's records cut off
    lines = manifest_lines(sealed.ws)[:keep]
    LogPaths(sealed.ws.log_root).manifest.write_bytes(b"".join(line + b"\n" for line in lines))
    assert failure(sealed) == (3, "manifest")


def test_truncated_with_its_seals_is_named_where_the_seals_stop(sealed: Sealed) -> None:
    lines = manifest_lines(sealed.ws)[: sealed.records[1]]
    LogPaths(sealed.ws.log_root).manifest.write_bytes(b"".join(line + b"\n" for line in lines))
    drop_seals_after(sealed, 1)
    assert failure(sealed) == (2, "stale")


def drop_seals_after(sealed: Sealed, epoch: int) -> None:
    store = SealDir(sealed.ws.data / "seals")
    kept = [n for n in store.notes() if parse(n)[0].epoch <= epoch]
    store.notes_path(0).write_text("".join(n + "\n" for n in kept))


def test_the_newest_seals_deleted_are_named(sealed: Sealed) -> None:
    drop_seals_after(sealed, 2)
    assert failure(sealed) == (3, "stale")


def test_a_quiet_epoch_dropped_is_named(sealed: Sealed) -> None:
    store = SealDir(sealed.ws.data / "seals")
    kept = [n for n in store.notes() if parse(n)[0].epoch != 1]
    store.notes_path(0).write_text("".join(n + "\n" for n in kept))
    assert failure(sealed) == (1, "missing")


def test_an_old_copy_of_the_workspace_put_back_is_named(sealed: Sealed, folder: Path) -> None:
    """The whole data folder as it was after epoch 1, its own seals and state with it."""
    shutil.rmtree(sealed.ws.data)
    shutil.copytree(folder / "after-epoch-1" / "data", sealed.ws.data, symlinks=True)
    assert failure(sealed) == (2, "stale")


def live_key_seal(sealed: Sealed, epoch: int, time_ns: int, **changes: Any) -> str:
    """A seal of ``epoch`` made with the live state (epoch 4's, all the attacker has)."""
    store = SealDir(sealed.ws.data / "seals")
    live_epoch, state = store.read_state()
    assert live_epoch == 4
    key = epoch_key(bytes(state))
    old, _ = parse(store.notes()[min(epoch, 3)])
    from nerve.seal.scheme import KeyTree

    tree = KeyTree(store.public_keys())
    fields = {**old.__dict__, "epoch": epoch, "time_ns": time_ns, "key": bytes(key.verify_key)}
    fields["proof"] = tuple(tree.proof(live_epoch))
    return sign(Seal(**{**fields, **changes}), key)


def test_an_old_epoch_resealed_with_the_live_key_is_named(sealed: Sealed) -> None:
    """CVE-2023-31439: each seal is checked against its own epoch's key."""
    rewrite_and_rechain(sealed, "observation")
    store = SealDir(sealed.ws.data / "seals")
    notes = store.notes()
    forged = live_key_seal(sealed, 0, sealed.at(0), manifest_head=bytes(32))
    store.notes_path(0).write_text("".join(n + "\n" for n in [forged, *notes[1:]]))
    assert failure(sealed) == (0, "wrong-key")


def test_the_clock_rolled_back_seals_nothing_and_a_backdated_seal_is_named(
    sealed: Sealed,
) -> None:
    store = SealDir(sealed.ws.data / "seals")
    sealer = Sealer(store.folder, lambda: pytest.fail("nothing may be sealed"))
    assert sealer.seal_due(sealed.at(1)) == []  # the state is past epoch 1: no key for it
    backdated = live_key_seal(sealed, 4, sealed.at(2))  # the live key, a time in epoch 2
    with store.notes_path(0).open("a") as f:
        f.write(backdated + "\n")
    assert failure(sealed) == (4, "clock")


def test_a_new_setup_swapped_in_is_named_at_the_first_epoch(sealed: Sealed) -> None:
    """Seed and key swapped: a fresh set-up re-seals the whole history; the verifier
    holds the seed printed at the first set-up."""
    folder = sealed.ws.data / "seals"
    shutil.rmtree(folder)
    setup(folder, EPOCH_S, bits=4, now_ns=sealed.seed.starts_ns(0))
    from nerve.runtime.sealing import heads_now

    Sealer(folder, lambda: heads_now(sealed.ws.log_root)).seal_due(sealed.at(3))
    assert failure(sealed) == (0, "wrong-key")


def test_the_state_moves_on_and_the_old_one_is_overwritten_in_place(sealed: Sealed) -> None:
    """Forward security: after sealing epoch 4 the state file (same inode, owner-only)
    holds epoch 5's secret and no longer epoch 4's."""
    from nerve.runtime.sealing import heads_now

    store = SealDir(sealed.ws.data / "seals")
    before, old = store.read_state()
    inode = store.state_path.stat().st_ino
    assert Sealer(store.folder, lambda: heads_now(sealed.ws.log_root)).seal_due() == [4]
    after, new = store.read_state()
    assert (before, after) == (4, 5) and store.state_path.stat().st_ino == inode
    assert bytes(old) not in store.state_path.read_bytes() and new != old
    assert store.state_path.stat().st_mode & 0o077 == 0
    assert verdict(sealed)["epochs_verified"] == 5
