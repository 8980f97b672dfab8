"""Set-up through the CLI, then a real daemon sealing 2 s epochs, quiet ones included:
``audit verify --seed`` passes while it runs, ``status`` shows it, and a seed whose root is
another set-up's fails at epoch 0."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.daemon_util import started

EPOCH = "2s"


def seal_setup(ws: WorkspaceDir, *extra: str) -> str:
    """`nerve audit seal-setup`: its seed line (and a QR code drawn after it)."""
    proc = run_cli(
        "--workspace", str(ws.root), "audit", "seal-setup", "--epoch", EPOCH,
        "--horizon-bits", "6", *extra,
    )  # fmt: skip
    lines = proc.stdout.splitlines()
    found = re.fullmatch(r"seed: (nerve-seal1-[0-9a-f]{64}-\d+-2-6)", lines[0])
    assert found, proc.stdout
    assert len(lines) > 20 and all(set(line) <= set(" █▀▄") for line in lines[1:])  # the QR
    assert "not shown again" in proc.stderr
    return found.group(1)


def verify(ws: WorkspaceDir, seed: str) -> tuple[int, dict[str, object]]:
    proc = run_cli(
        "--workspace", str(ws.root), "audit", "verify", "--seed", seed, "--json", check=False
    )
    return proc.returncode, json.loads(proc.stdout)


def test_a_daemon_seals_every_epoch_and_verify_seed_passes(workspace: WorkspaceDir) -> None:
    seed = seal_setup(workspace)
    again = run_cli("--workspace", str(workspace.root), "audit", "seal-setup", check=False)
    assert again.returncode == 1 and "already set up" in again.stderr  # shown once
    with started(workspace.root) as daemon:
        status = daemon.wait_for(
            lambda: (
                (s := daemon.request({"type": "status"})["status"]["sealing"])
                and (s["last_epoch"] or 0) >= 2
                and s
            ),
            timeout=30,
            what="three epochs sealed",
        )
        assert status["sealing"] and status["why"] is None
        code, report = verify(workspace, seed)
        assert code == 0 and report["ok"] and report["epochs_verified"] >= 3, report
        text = run_cli("--workspace", str(workspace.root), "status").stdout
        assert re.search(r"^sealing  epoch \d+ sealed$", text, re.M), text
    other = seed.replace(seed[12:20], "00000000")
    code, report = verify(workspace, other)
    assert code == 1 and report["failure"]["epoch"] == 0  # type: ignore[index]
    assert report["failure"]["kind"] == "wrong-key"  # type: ignore[index]


def test_verify_seed_refuses_a_seed_that_is_not_one(workspace: WorkspaceDir) -> None:
    proc = run_cli(
        "--workspace", str(workspace.root), "audit", "verify", "--seed", "abc", check=False
    )
    assert proc.returncode == 2 and "is not a verification seed" in proc.stderr


def test_verify_seed_without_a_setup_names_epoch_0(workspace: WorkspaceDir) -> None:
    seed = "nerve-seal1-" + "ab" * 32 + "-1700000000-900-16"
    code, report = verify(workspace, seed)
    assert code == 1 and report["failure"] == {  # type: ignore[comparison-overlap]
        "epoch": 0,
        "kind": "missing",
        "message": "no seals at all (sealing never ran, or every seal dropped)",
    }


def test_audit_verify_without_seed_is_unchanged(workspace: WorkspaceDir, tmp_path: Path) -> None:
    seal_setup(workspace)
    proc = run_cli("--workspace", str(workspace.root), "audit", "verify")
    assert proc.stdout.startswith("ok: no links yet")


def test_seal_setup_takes_the_epoch_from_nerve_yaml(workspace: WorkspaceDir) -> None:
    config = workspace.root / "nerve.yaml"
    config.write_text(config.read_text() + "\naudit:\n  seal:\n    epoch: 3s\n")
    proc = run_cli("--workspace", str(workspace.root), "audit", "seal-setup", "--horizon-bits", "2")
    assert re.fullmatch(r"seed: nerve-seal1-[0-9a-f]{64}-\d+-3-2", proc.stdout.splitlines()[0])
    bad = run_cli(
        "--workspace", str(workspace.root), "audit", "seal-setup", "--epoch", "1500ms",
        check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and "whole seconds" in bad.stderr


def test_audit_seal_enabled_false_leaves_the_daemon_unsealed(workspace: WorkspaceDir) -> None:
    import asyncio
    from types import SimpleNamespace
    from typing import Any, cast

    from nerve.config.models import NerveConfig
    from nerve.runtime.sealing import Sealing

    seal_setup(workspace)
    for enabled, spawned in ((False, False), (True, True)):
        config = NerveConfig.model_validate({"audit": {"seal": {"enabled": enabled}}})
        host = SimpleNamespace(ws=workspace, config=config)
        sealing = Sealing()

        async def started(sealing: Sealing = sealing, host: Any = host) -> bool:
            await sealing.start(cast(Any, host))
            running = sealing._task is not None
            await sealing.stop(host)
            return running

        assert asyncio.run(started()) is spawned


def test_an_encrypted_workspace_seals_and_verifies_and_a_seal_holds_no_plaintext(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seals cover an encrypted log as they cover a plain one: the daemon (unlocked by its
    key) seals each epoch, `audit verify --seed` passes with the key, and no seal file holds
    the events' text (a seal names segment hashes and counts, never a line)."""
    key, root = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(root))
    (root / "nerve.yaml").write_text(
        "senses: {}\nlog:\n  encryption:\n    key: file\n  seal_max_events: 4\n"
    )
    env = {"NERVE_KEY_FILE": str(key)}
    monkeypatch.setenv("NERVE_KEY_FILE", str(key))  # the daemon's key too
    ws = WorkspaceDir(root)
    proc = run_cli(
        "--workspace", str(root), "audit", "seal-setup", "--epoch", EPOCH, "--horizon-bits",
        "6", env=env,
    )  # fmt: skip
    seed = proc.stdout.splitlines()[0].removeprefix("seed: ")
    secret = "zebra-passport-4417"
    with started(root) as daemon:
        for n in range(6):
            run_cli("--workspace", str(root), "emit", "-s", "shell", "--line", f"{secret} {n}",
                    env=env)  # fmt: skip
        daemon.wait_for(
            lambda: (
                (s := daemon.request({"type": "status"})["status"]["sealing"])
                and (s["last_epoch"] or 0) >= 2
            ),
            timeout=30,
            what="three epochs sealed",
        )
        code, report = _verify_with(ws, seed, env)
        assert code == 0 and report["ok"] and report["epochs_verified"] >= 3, report
    for path in (root / "data" / "seals").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def _verify_with(ws: WorkspaceDir, seed: str, env: dict[str, str]) -> tuple[int, dict[str, object]]:
    proc = run_cli(
        "--workspace", str(ws.root), "audit", "verify", "--seed", seed, "--json", check=False,
        env=env,
    )  # fmt: skip
    return proc.returncode, json.loads(proc.stdout)
