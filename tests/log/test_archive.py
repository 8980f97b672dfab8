"""`nerve archive`: old segments moved into a folder that is a verifiable read-only log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nerve.errors import LogError
from nerve.events import SourceClass
from nerve.log.drafts import Draft
from nerve.log.reader import replay_digest
from nerve.log.store import EventLog
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli

SHELL = int(SourceClass.SHELL)


def _fill(ws: WorkspaceDir, segments: int = 4) -> list[str]:
    """Sealed segments; the stamp after each (as ``P.L`` text), to archive before."""
    cuts = []
    with ws.open_log() as log:
        for s in range(segments):
            log.append_drafts(
                [Draft.of(source=SHELL, line=f"cmd {s}.{i}", payload={"i": i}) for i in range(5)]
            )
            log.seal()
            cuts.append(f"{log.newest.physical_ns}.{log.newest.logical + 1}")
        log.append_drafts([Draft.of(source=SHELL, line="unsealed", payload={})])
    return cuts


def _cli(ws: Path, *args: str, check: bool = True) -> tuple[int, str, str]:
    proc = run_cli("--workspace", str(ws), *args, check=check)
    return proc.returncode, proc.stdout, proc.stderr


_BLOCK_KEYS = ("events", "segments", "digest", "covers", "verify")


def _digest(out: str) -> str:
    return next(line.split()[-1] for line in out.splitlines() if line.startswith("digest"))


def test_archive_moves_old_segments_into_a_verifiable_log(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    cuts = _fill(workspace)
    whole = replay_digest(workspace.log_root)
    folder = tmp_path / "old"
    _, out, _ = _cli(workspace.root, "archive", "--before", cuts[1], "--to", str(folder), "--json")
    moved = json.loads(out)
    assert moved["segments"] == 2 and moved["events"] == 10 and moved["to"] == str(folder)
    assert len(list((workspace.log_root / "segments").glob("*.parquet"))) == 4  # in grace
    assert not (folder / "nerve.yaml").exists()
    _, out, err = _cli(folder, "replay", "--verify")
    assert "events   10" in out and "verify   ok" in out, err
    _, out, _ = _cli(workspace.root, "replay")
    assert _digest(out) == whole.digest and f"events   {whole.events}" in out
    assert "covers   the whole history: 10 archived events" in out
    _, out, _ = _cli(workspace.root, "replay", "--verify")
    assert _digest(out) == whole.digest and "verify   ok" in out
    block = [line for line in out.splitlines() if line.split()[0] in _BLOCK_KEYS]
    columns = {len(line) - len(line.split(maxsplit=1)[1]) for line in block}
    assert len(block) == len(_BLOCK_KEYS) and len(columns) == 1, block  # one value column
    manifest = [json.loads(x) for x in (workspace.log_root / "manifest.jsonl").read_text().split()]
    record = manifest[-1]
    assert record["op"] == "archive" and len(record["archived"]) == 2
    assert record["archive_head"] and record["to"] == str(folder)


def test_a_second_archive_extends_the_same_folder(workspace: WorkspaceDir, tmp_path: Path) -> None:
    cuts = _fill(workspace)
    whole = replay_digest(workspace.log_root).digest
    folder = tmp_path / "old"
    _cli(workspace.root, "archive", "--before", cuts[0], "--to", str(folder))
    _cli(workspace.root, "archive", "--before", cuts[2], "--to", str(folder), "--vacuum")
    assert len(list((workspace.log_root / "segments").glob("*.parquet"))) == 1  # vacuumed
    _, out, _ = _cli(folder, "replay", "--verify")
    assert "events   15" in out and "verify   ok" in out
    _, out, _ = _cli(workspace.root, "replay", "--verify")
    assert _digest(out) == whole


def test_a_missing_archive_is_said_plainly_and_log_archives_finds_it_moved(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    cuts = _fill(workspace)
    whole = replay_digest(workspace.log_root).digest
    folder = tmp_path / "old"
    _cli(workspace.root, "archive", "--before", cuts[1], "--to", str(folder))
    folder.rename(tmp_path / "moved")
    code, out, err = _cli(workspace.root, "replay")
    assert code == 0 and _digest(out) != whole
    assert (
        "covers   only the live log (11 events); the 10 older events archived in 2 segments "
        "are not included" in out
    )
    assert f"{folder}: not found" in out
    code, out, err = _cli(workspace.root, "replay", "--verify")
    assert code == 0 and "verify   ok" in out and "not found" in err  # a warning, not damage
    config = workspace.root / "nerve.yaml"
    config.write_text(config.read_text().replace("\nlog:\n", "\nlog:\n  archives: [../moved]\n"))
    _, out, _ = _cli(workspace.root, "replay")
    assert _digest(out) == whole and "read from " + str(tmp_path / "moved") in out


def test_an_altered_archive_is_damage_named_where(workspace: WorkspaceDir, tmp_path: Path) -> None:
    cuts = _fill(workspace)
    folder = tmp_path / "old"
    _cli(workspace.root, "archive", "--before", cuts[1], "--to", str(folder))
    segment = next((folder / "data" / "log" / "segments").glob("*.parquet"))
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    code, _, err = _cli(folder, "replay", "--verify", check=False)
    assert code == 1 and f"segments/{segment.name}" in err
    code, _out, err = _cli(workspace.root, "replay", "--verify", check=False)
    assert code == 1 and str(folder) in err and "archive of manifest record" in err


def test_an_archive_whose_manifest_was_rewritten_is_not_taken(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    cuts = _fill(workspace)
    folder = tmp_path / "old"
    _cli(workspace.root, "archive", "--before", cuts[1], "--to", str(folder))
    manifest = folder / "data" / "log" / "manifest.jsonl"
    rec = json.loads(manifest.read_text())
    rec["time_ns"] += 1
    manifest.write_text(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
    code, _, err = _cli(workspace.root, "replay", check=False)
    assert code == 1 and "does not hold the head the live log recorded" in err


def test_bad_archive_targets_are_refused_and_move_nothing(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    cuts = _fill(workspace)
    manifest = (workspace.log_root / "manifest.jsonl").read_bytes()
    other = tmp_path / "other"
    run_cli("init", str(other))
    for target, message in [
        (workspace.root, "is the live workspace"),
        (workspace.log_root / "x", "inside the live log"),
        (other, "holds a nerve.yaml"),
    ]:
        code, _, err = _cli(
            workspace.root, "archive", "--before", cuts[1], "--to", str(target), check=False
        )
        assert code == 2 and message in err, err
    (other / "nerve.yaml").unlink()
    code, _, err = _cli(workspace.root, "archive", "--before", "x", "--to", str(other), check=False)
    assert code == 2 and "--before 'x'" in err
    assert (workspace.log_root / "manifest.jsonl").read_bytes() == manifest


def test_an_archive_of_another_log_is_refused(workspace: WorkspaceDir, tmp_path: Path) -> None:
    cuts = _fill(workspace)
    folder = tmp_path / "old"
    _cli(workspace.root, "archive", "--before", cuts[0], "--to", str(folder))
    run_cli("init", str(tmp_path / "b"))
    second = WorkspaceDir(tmp_path / "b")
    more = _fill(second)
    code, _, err = _cli(
        second.root, "archive", "--before", more[0], "--to", str(folder), check=False
    )
    assert code == 2 and "archives another log" in err


def test_an_archive_is_read_only(workspace: WorkspaceDir, tmp_path: Path) -> None:
    cuts = _fill(workspace)
    folder = tmp_path / "old"
    _cli(workspace.root, "archive", "--before", cuts[0], "--to", str(folder))
    with pytest.raises(LogError, match="is an archive"):
        EventLog(folder / "data" / "log", node="n")
    code, _, err = _cli(folder, "emit", "--source", "shell", check=False)
    assert code == 2 and "no nerve.yaml" in err
    _, out, _ = _cli(folder, "query", "--json", "SELECT count(*) AS n FROM events")
    assert json.loads(out) == {"n": 5}


def test_archived_erasures_verify_in_the_archive(workspace: WorkspaceDir, tmp_path: Path) -> None:
    cuts = _fill(workspace)
    _cli(workspace.root, "forget", "--match", "cmd 0.")
    folder = tmp_path / "old"
    _cli(workspace.root, "archive", "--before", cuts[1], "--to", str(folder))
    _, out, err = _cli(folder, "replay", "--verify")
    assert "verify   ok" in out and "erased: payload.erased" in err and "5 events'" in err
    _, out, _ = _cli(workspace.root, "replay", "--verify")
    assert "verify   ok" in out
    shutil.rmtree(folder)


def test_payload_of_an_erased_then_archived_event_says_it_was_erased(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    with workspace.open_log() as log:
        log.append_drafts([Draft.of(source=SHELL, line="secret", payload={"only": "here"})])
        log.seal()
        cut = f"{log.newest.physical_ns}.{log.newest.logical + 1}"
    _fill(workspace, segments=1)
    sql = "SELECT hex(payload_cid) FROM events WHERE line = 'secret'"
    _, out, _ = _cli(workspace.root, "query", sql)
    cid = out.splitlines()[1].lower()
    _cli(workspace.root, "forget", "--match", "secret")
    _cli(workspace.root, "archive", "--before", cut, "--to", str(tmp_path / "old"))
    code, out, err = _cli(workspace.root, "payload", cid, check=False)
    assert code == 1 and out == ""
    assert err.startswith(f"LogError: payload {cid} was erased by payload.erased ")
    assert "no payload with address" not in err
    code, _, err = _cli(workspace.root, "payload", "ab" * 32, check=False)
    assert code == 2 and err.startswith("UsageError: no payload with address")
