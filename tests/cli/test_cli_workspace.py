"""Which workspace a command uses, found like git finds a repository; nothing written elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nerve.cli.main import command, hoist_workspace, run
from nerve.errors import UsageError
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli

WRITES = [
    ["emit", "--source", "shell", "--line", "x"],
    ["import", "-"],
    ["seal"],
    ["compact"],
    ["start"],
    ["daemon", "run"],
]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("argv", WRITES, ids=lambda a: " ".join(a[:2]))
def test_a_write_outside_any_workspace_refuses_and_creates_nothing(
    tmp_path: Path, argv: list[str]
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "notes.txt").write_text("mine")
    env = {"NERVE_WORKSPACE": ""}
    proc = run_cli(*argv, cwd=bare, check=False, input="", env=env)
    assert proc.returncode == 2, proc.stderr
    first, hint = proc.stderr.splitlines()
    assert first.startswith("UsageError: not in a nerve workspace") and "nerve init" in hint
    assert _tree(bare) == ["notes.txt"]
    named = run_cli("--workspace", str(bare), *argv, check=False, input="", env=env)
    assert named.returncode == 2 and "no nerve.yaml" in named.stderr
    assert _tree(bare) == ["notes.txt"]


def test_a_subfolder_uses_the_workspace_above_it(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    deep = ws.root / "notes" / "deeper"
    deep.mkdir(parents=True)
    env = {"NERVE_WORKSPACE": ""}
    run_cli("emit", "--source", "shell", "--line", "from below", cwd=deep, env=env)
    assert _tree(deep) == []
    out = run_cli("tail", "--json", cwd=deep, env=env).stdout
    assert json.loads(out.splitlines()[-1])["line"] == "from below"
    assert (
        run_cli("replay", "--json", cwd=ws.root, env=env).stdout
        == run_cli("replay", "--json", cwd=deep, env=env).stdout
    )


def test_workspace_flag_before_or_after_the_command_and_from_the_environment(
    tmp_path: Path,
) -> None:
    ws = init_workspace(tmp_path / "ws")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_cli("emit", "-s", "shell", "-l", "-w", "--workspace", str(ws.root), cwd=elsewhere)
    run_cli("emit", "-s", "shell", "-l", "two", f"--workspace={ws.root}", cwd=elsewhere)
    run_cli(
        "emit", "-s", "shell", "-l", "three", cwd=elsewhere, env={"NERVE_WORKSPACE": str(ws.root)}
    )
    for argv in (["--workspace", str(ws.root), "tail"], ["tail", "-w", str(ws.root)]):
        lines = [
            json.loads(x)["line"]
            for x in run_cli(*argv, "--json", cwd=elsewhere).stdout.splitlines()
        ]
        assert lines == ["-w", "two", "three"]
    assert _tree(elsewhere) == []


def test_a_log_without_nerve_yaml_is_readable_but_not_writable(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    run_cli("--workspace", str(ws.root), "emit", "-s", "shell", "-l", "kept")
    (ws.root / "nerve.yaml").unlink()
    assert "kept" in run_cli("--workspace", str(ws.root), "tail").stdout
    proc = run_cli("--workspace", str(ws.root), "emit", "-s", "shell", "-l", "x", check=False)
    assert proc.returncode == 2 and "writes to one" in proc.stderr


def test_find_walks_up_and_names_the_start_when_it_finds_nothing(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    (ws.root / "a" / "b").mkdir(parents=True)
    assert WorkspaceDir.find(cwd=ws.root / "a" / "b", env={}).root == ws.root
    with pytest.raises(UsageError, match=str(tmp_path)):
        WorkspaceDir.find(cwd=tmp_path, env={})
    assert WorkspaceDir.find(cwd=tmp_path, env={"NERVE_WORKSPACE": str(ws.root)}).root == ws.root


def test_hoisting_moves_only_the_workspace_flag() -> None:
    run_ready = command()
    cases = {
        ("tail", "-n", "5", "-w", "W"): ["-w", "W", "tail", "-n", "5"],
        ("tail", "--workspace=W"): ["--workspace=W", "tail"],
        ("emit", "--line", "-w", "-s", "shell"): ["emit", "--line", "-w", "-s", "shell"],
        ("query", "SELECT 1", "--", "-w"): ["query", "SELECT 1", "--", "-w"],
        ("sense", "list", "--workspace", "W"): ["--workspace", "W", "sense", "list"],
    }
    for argv, expected in cases.items():
        assert hoist_workspace(run_ready, list(argv)) == expected, argv


def test_version_and_exit_codes_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    run(["--version"])  # answered before the command tree is built
    assert capsys.readouterr().out.startswith("nerve ")
    with pytest.raises(SystemExit) as done:  # the same answer through the tree
        run(["--workspace", ".", "--version"])
    assert done.value.code in (0, None) and capsys.readouterr().out.startswith("nerve ")
    proc = run_cli("--help", env={"COLUMNS": "100"})
    assert "Exit codes" in proc.stdout and "130" in proc.stdout
