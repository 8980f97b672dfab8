"""The audit notebook walks the held highlights of a real, sealed log (CONTRIBUTING.md §16).

The log is built the way the daemon would build it: a deterministic observation stream is
imported, then attention is caught up in-process (what ``nerve attend --replay`` runs), so the
decisions, highlights and chain links are real and signed.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import ipykernel.kernelspec
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from nerve.attention import audit
from nerve.workspace import init_workspace
from tests.helpers.attended import attended_workspace
from tests.helpers.day import Day

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
AUDIT = NOTEBOOKS / "audit.ipynb"
REASON_ROW = re.compile(r"^\d+\s+(hold:\w+)\s+(\d+)\s", re.MULTILINE)


@pytest.fixture
def notebook_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private verifier state folder (returned) and a ``python3`` kernelspec."""
    state = tmp_path / "verifier-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    if "python3" not in KernelSpecManager().find_kernel_specs():
        prefix = tmp_path / "jupyter"
        ipykernel.kernelspec.install(prefix=str(prefix))
        monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    return state


def _run_audit(root: Path, monkeypatch: pytest.MonkeyPatch, cwd: Path) -> nbformat.NotebookNode:
    """Execute the notebook on the workspace at ``root``, its kernel working in ``cwd`` (a
    temporary folder: never the repository, which is itself a watched workspace)."""
    monkeypatch.setenv("NERVE_WORKSPACE", str(root))
    cwd.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(AUDIT, as_version=4)
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    client.execute()
    return nb


def _outputs(nb: nbformat.NotebookNode) -> list[Any]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def _cell_outputs(nb: nbformat.NotebookNode, cell_id: str) -> list[Any]:
    (cell,) = [c for c in nb.cells if c.get("id") == cell_id]
    return list(cell.outputs)


def _stdout(outputs: list[Any]) -> str:
    return "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stdout")


def _has_png(nb: nbformat.NotebookNode) -> bool:
    return any("image/png" in o.get("data", {}) for o in _outputs(nb))


def _assert_ran_cleanly(nb: nbformat.NotebookNode) -> None:
    problems = [o for o in _outputs(nb) if o.output_type == "error" or o.get("name") == "stderr"]
    assert problems == []


def _held_by_reason(nb: nbformat.NotebookNode) -> dict[str, int]:
    """The counts table of the ``by-reason`` cell, parsed from its plain-text rendering."""
    (table,) = [o for o in _cell_outputs(nb, "by-reason") if o.output_type == "display_data"]
    return {reason: int(n) for reason, n in REASON_ROW.findall(table.data["text/plain"])}


def test_audit_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(AUDIT, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def test_audit_notebook_walks_held_decisions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notebook_env: Path
) -> None:
    ws = attended_workspace(tmp_path / "ws")
    held = audit.held(ws.log_root)
    reasons = Counter(h["outcome"] for h in held)
    assert reasons["hold:value"] > 0 and reasons["hold:budget"] > 0, reasons
    links = len(audit.chain_links(ws.log_root))

    nb = _run_audit(ws.root, monkeypatch, tmp_path / "run")

    _assert_ran_cleanly(nb)
    assert _has_png(nb)
    assert _held_by_reason(nb) == dict(reasons)
    integrity = _stdout(_cell_outputs(nb, "integrity"))
    assert "chain:          ok" in integrity
    assert f"links verified: {links} of {links}" in integrity
    assert "first break:    none" in integrity
    assert not notebook_env.exists(), "the notebook must not write a trust record"
    stdout = _stdout(_outputs(nb))
    assert f"ws.audit.held() lists {len(held)} held decisions" in stdout
    assert f"{reasons['hold:value']} held for value" in stdout
    assert f"{reasons['hold:budget']} held for budget" in stdout
    assert f"chain seq {held[-1]['chain_seq']}: {held[-1]['outcome']}" in stdout
    assert "agree, and the chain verifies through it" in stdout
    assert "it matches the" in stdout


def test_audit_notebook_runs_on_an_empty_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notebook_env: Path
) -> None:
    ws = init_workspace(tmp_path / "ws")

    nb = _run_audit(ws.root, monkeypatch, tmp_path / "run")

    _assert_ran_cleanly(nb)
    assert not _has_png(nb)
    stdout = _stdout(_outputs(nb))
    assert "The chain is empty" in stdout
    assert "The log holds no attention decisions yet" in stdout
    assert "ws.audit.held() lists 0 held decisions; the SQL above counts 0 (agrees)" in stdout
    assert "No held decision to inspect." in stdout
    assert not notebook_env.exists()


def test_audit_notebook_runs_on_the_recorded_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notebook_env: Path, recorded_day: Day
) -> None:
    nb = _run_audit(recorded_day.root, monkeypatch, tmp_path / "run")

    _assert_ran_cleanly(nb)
    held = audit.held(recorded_day.root / "data" / "log")
    assert f"ws.audit.held() lists {len(held)} held decisions" in _stdout(_outputs(nb))
