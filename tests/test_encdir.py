"""Working folders in memory, kept encrypted under data/: what roles and checks write in an
encrypted workspace, and a gate that fires on the plain working copy."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from nerve.checks.manifest import parse_manifest
from nerve.encdir import EncryptedDir, memory_base, read_kept
from nerve.errors import LogError
from nerve.flow.judge import evaluate, run_folder
from nerve.log import crypt
from nerve.log.drafts import Draft
from tests.helpers.crypt import encrypt_log
from tests.helpers.workflows import write_checks

SECRET = "the heron files at dawn"


def _encrypted_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    (root / "data").mkdir(parents=True)
    encrypt_log(root / "data" / "log", monkeypatch, key=tmp_path / "ws.key")  # not in data/
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(_memory(tmp_path)))
    return root


def _memory(tmp_path: Path) -> Path:
    folder = tmp_path / "run-user"  # stands for a tmpfs: where the working folder goes
    folder.mkdir(exist_ok=True)
    return folder


def test_a_working_folder_is_encrypted_on_leaving_and_restored_on_entering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _encrypted_workspace(tmp_path, monkeypatch)
    folder = run_folder(root, "w-1")
    assert folder.encrypted and folder.work.is_relative_to(_memory(tmp_path))
    with folder.working() as work:
        (work / "a.md").write_text(SECRET)
        (work / "sub").mkdir()
        (work / "sub" / "b.txt").write_text(SECRET * 2)
        (work / "gone.txt").write_text("x")
        (work / "link.md").symlink_to(root / "nowhere")
    assert not folder.work.exists()  # the plaintext left memory with the last user
    stored = root / "data" / "runs" / "w-1"
    assert sorted(p.name for p in stored.rglob("*") if p.is_file()) == ["a.md", "b.txt", "gone.txt"]
    for path in (stored / "a.md", stored / "sub" / "b.txt"):
        assert crypt.encrypted_file(path) and SECRET.encode() not in path.read_bytes()
    assert read_kept(root / "data", "runs/w-1/sub/b.txt") == (SECRET * 2).encode()

    before = (stored / "a.md").stat().st_ino
    with folder.working() as work:  # restored from the encrypted copies
        assert (work / "a.md").read_text() == SECRET
        (work / "gone.txt").unlink()
    assert (stored / "a.md").stat().st_ino == before  # unchanged: not rewritten
    assert not (stored / "gone.txt").exists()

    monkeypatch.delenv(crypt.ENV_KEY_FILE)
    crypt.forget_keys()
    with pytest.raises(crypt.KeyMissing, match="no key was given"):
        read_kept(root / "data", "runs/w-1/a.md")
    with pytest.raises(crypt.KeyMissing):
        run_folder(root, "w-1")


def test_a_plain_workspace_works_in_place(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "data" / "log").mkdir(parents=True)
    folder = run_folder(root, "w-1")
    folder.stored.mkdir(parents=True)  # as the run manager does when a run opens
    with folder.working() as work:
        assert work == root / "data" / "runs" / "w-1"
        (work / "a.md").write_text(SECRET)
    assert (work / "a.md").read_text() == SECRET


def test_with_no_memory_folder_the_refusal_says_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="XDG_RUNTIME_DIR") as caught:
        memory_base({"XDG_RUNTIME_DIR": str(tmp_path / "missing")}, fallback=tmp_path / "none")
    assert "tmpfs" in str(caught.value.hint)


class _Log:
    def __init__(self) -> None:
        self.drafts: list[Draft] = []

    async def __call__(self, drafts: Any) -> None:
        self.drafts.extend(drafts)


def test_the_gate_fires_on_the_working_copy_and_keeps_findings_encrypted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _encrypted_workspace(tmp_path, monkeypatch)
    spec = {"fire_on": "gate", "matches": "**/*.md", "timeout": 10}
    write_checks(root, {"sections": {**spec, "severity": "blocking"}})
    (root / "elsewhere.md").write_text("## Summary\n## Details\n")
    with run_folder(root, "w-1").working() as work:
        (work / "good.md").write_text("## Summary\n## Details\n")
        (work / "bad.md").write_text(f"## Summary\n{SECRET}\n")
    manifests = [parse_manifest(root / "workflows" / "checks" / "sections.md")]
    log = _Log()
    outputs = ["good.md", "bad.md", "../../../elsewhere.md"]
    reasons = asyncio.run(
        evaluate(log, root=root, run="w-1", workflow="w", outputs=outputs, manifests=manifests)
    )
    assert [r["reason"] for r in reasons] == ["path-refused", "failed"], reasons
    verdicts = [d for d in log.drafts if d.kind == "check.verdict"]
    assert [v.line.split(":")[1].strip() for v in verdicts] == ["passed", "failed"]
    detail = reasons[1]["detail_path"]
    assert detail.startswith("data/runs/w-1/.checks/sections-") and detail.endswith(".md")
    assert crypt.encrypted_file(root / detail)
    assert "bad.md" in read_kept(root / "data", detail.removeprefix("data/")).decode()
    assert not run_folder(root, "w-1").work.exists()
    assert not any(SECRET.encode() in p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_two_users_of_one_folder_share_it_until_the_last_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _encrypted_workspace(tmp_path, monkeypatch)
    first = EncryptedDir.under(root / "data", "checks")
    second = EncryptedDir.under(root / "data", "checks")
    work = first.enter()
    (work / "one.md").write_text("1")
    assert second.enter() == work
    first.leave()
    assert work.is_dir() and (root / "data" / "checks" / "one.md").is_file()
    (work / "two.md").write_text("2")
    second.leave()
    assert not work.exists()
    assert sorted(p.name for p in (root / "data" / "checks").iterdir()) == ["one.md", "two.md"]


def test_queries_on_an_encrypted_log_never_spill_to_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nerve.query import connect

    root = _encrypted_workspace(tmp_path, monkeypatch)
    conn = connect(root / "data" / "log")
    assert conn.execute("SELECT current_setting('temp_directory')").fetchone() == ("",)


def test_a_key_unlocked_once_encrypts_after_its_key_file_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key file on removable media, unplugged once the daemon unlocked: steps still encrypt."""
    import os

    root = _encrypted_workspace(tmp_path, monkeypatch)
    crypt.cipher_for(root / "data" / "log")
    os.unlink(os.environ[crypt.ENV_KEY_FILE])
    with run_folder(root, "w-1").working() as work:
        (work / "a.md").write_text(SECRET)
    assert read_kept(root / "data", "runs/w-1/a.md") == SECRET.encode()
