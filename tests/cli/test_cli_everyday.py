"""What a person meets first: help, version, licence, batch echo."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import nerve
from nerve.workspace import WorkspaceDir
from tests.conftest import ROOT, run_cli


def test_help_shows_flags_without_a_type_and_lists_exit_codes() -> None:
    out = run_cli("attend", "--help", env={"COLUMNS": "100"}).stdout
    assert "--json" in out and "<bool>" not in out
    top = run_cli("--help", env={"COLUMNS": "100"}).stdout
    assert "Exit codes" in top and "--install-completion" in top and "--version" in top


def test_version_is_the_package_version_and_the_licence_matches() -> None:
    from importlib.metadata import metadata

    assert run_cli("--version").stdout == f"nerve {nerve.__version__}\n"
    meta = metadata("nerve")
    assert meta["Version"] == nerve.__version__
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" == meta["License-Expression"]
    assert "Apache License" in (ROOT / "LICENSE").read_text().splitlines()[0]
    assert any(
        c.startswith("Programming Language :: Python :: 3.11") for c in project["classifiers"]
    )
    assert {"jupyter", "nbconvert"} <= {
        d.split(">")[0] for d in project["optional-dependencies"]["notebooks"]
    }


def test_a_batch_prints_a_count_unless_asked_to_echo(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    batch = tmp_path / "b.jsonl"
    batch.write_text("".join(f'{{"source": "shell", "line": "n{i}"}}\n' for i in range(50)))
    ws = ["--workspace", str(workspace.root)]
    plain = run_cli(*ws, "emit", "--jsonl", str(batch))
    assert plain.stdout == "" and plain.stderr == "stored 50 events\n"
    echoed = run_cli(*ws, "emit", "--jsonl", str(batch), "--echo")
    assert len(echoed.stdout.splitlines()) == 50
    as_json = run_cli(*ws, "emit", "--jsonl", str(batch), "--json")
    assert [json.loads(x)["line"] for x in as_json.stdout.splitlines()][-1] == "n49"
    quiet = run_cli(*ws, "emit", "-q", "--source", "shell", "--line", "hush")
    assert quiet.stdout == quiet.stderr == ""


def test_shell_completion_completes_commands(tmp_path: Path) -> None:
    env = {"_NERVE_COMPLETE": "complete_bash", "COMP_WORDS": "nerve ta", "COMP_CWORD": "1"}
    assert run_cli(cwd=tmp_path, env=env).stdout.split() == ["tail"]
    script = run_cli("--show-completion", "bash", cwd=tmp_path).stdout
    assert "_nerve_completion" in script
