"""Usage errors in one line, and what a person meets on a fresh clone (init, README, ignores)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import ROOT, run_cli


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["tail", "--since", "junk"], "UsageError: invalid value for '--since': 'junk' is not"),
        (["tail", "--source", "shel"], "UsageError: invalid value for '--source': 'shel' is not"),
        (["tail", "--bogus"], "UsageError: no such option: --bogus"),
        (["query"], "UsageError: missing argument 'sql'"),
        (["tail", "-n", "x"], "UsageError: invalid value for '-n': "),
    ],
)
def test_a_bad_flag_is_one_line_and_a_hint(
    workspace: WorkspaceDir, args: list[str], start: str
) -> None:
    proc = run_cli("--workspace", str(workspace.root), *args, check=False)
    first, hint = proc.stderr.splitlines()
    assert proc.returncode == 2 and proc.stdout == ""
    assert first.startswith(start) and "Usage:" not in proc.stderr
    assert hint == f"hint: see nerve {args[0]} --help"


def test_a_group_without_a_command_still_shows_its_help() -> None:
    proc = run_cli("audit")
    assert proc.stdout.startswith("Usage: nerve audit") and proc.stderr == ""


def test_init_without_a_folder_means_this_one(tmp_path: Path) -> None:
    proc = run_cli("init", cwd=tmp_path)
    assert proc.stdout == f"created workspace {tmp_path.resolve()}\n"
    header = (tmp_path / "nerve.yaml").read_text().splitlines()[0]
    assert header.startswith("#") and "bundled" not in header
    again = run_cli("init", cwd=tmp_path, check=False)
    assert again.returncode == 2 and again.stderr.startswith("UsageError: ")


def test_the_readme_says_how_to_put_nerve_on_path() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    first_bare = next(i for i, line in enumerate(lines) if line.startswith("nerve "))
    onboarding = next(i for i, line in enumerate(lines) if "source .venv/bin/activate" in line)
    assert 3 < onboarding < first_bare


def test_notebook_outputs_are_ignored() -> None:
    assert "notebooks/*.nbconvert.ipynb" in (ROOT / ".gitignore").read_text().splitlines()


def test_audit_reads_since_as_tail_does(tmp_path: Path) -> None:
    root = str(init_workspace(tmp_path / "ws").root)
    for since in ("yesterday", "5 min", "10m", "2026-01-01T00:00", "this morning"):
        for what in ("held", "access"):
            run_cli("-w", root, "audit", what, "--since", since)  # none is refused
    junk = run_cli("-w", root, "audit", "held", "--since", "junk", check=False)
    assert junk.returncode == 2 and "--since: 'junk' is not a duration" in junk.stderr
