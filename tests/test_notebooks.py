"""The analyst notebooks run against a real log in a temp workspace (CONTRIBUTING.md §16)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import ipykernel.kernelspec
import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from nerve.clock import Hlc
from nerve.events import NERVE_SOURCE, Event, SourceClass, Trust, payload_bytes
from nerve.log.drafts import Draft
from nerve.log.reader import replay_digest
from nerve.workspace import WorkspaceDir, init_workspace

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
HISTORY = NOTEBOOKS / "history.ipynb"
MINUTE_NS = 60 * 10**9
DIGEST_LINE = re.compile(r"^digest: ([0-9a-f]{64})$", re.MULTILINE)


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Quiet jupyter's path-migration warning; make a ``python3`` kernelspec if none is found."""
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    if "python3" not in KernelSpecManager().find_kernel_specs():
        prefix = tmp_path / "jupyter"
        ipykernel.kernelspec.install(prefix=str(prefix))
        monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))


def _run_history(
    ws: WorkspaceDir, monkeypatch: pytest.MonkeyPatch, cwd: Path
) -> nbformat.NotebookNode:
    """Execute the notebook on ``ws`` in a fresh kernel (which inherits the environment),
    working in ``cwd``: a temporary folder, never the repository (a watched workspace)."""
    monkeypatch.setenv("NERVE_WORKSPACE", str(ws.root))
    cwd.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(HISTORY, as_version=4)
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    client.execute()
    return nb


def _outputs(nb: nbformat.NotebookNode) -> list[Any]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]


def _stdout(nb: nbformat.NotebookNode) -> str:
    return "".join(o.text for o in _outputs(nb) if o.output_type == "stream" and o.name == "stdout")


def _tables(nb: nbformat.NotebookNode) -> str:
    rich = [o for o in _outputs(nb) if o.output_type in ("execute_result", "display_data")]
    return "\n".join(o.data.get("text/html", "") for o in rich)


def _assert_ran_cleanly(nb: nbformat.NotebookNode) -> None:
    problems = [o for o in _outputs(nb) if o.output_type == "error" or o.get("name") == "stderr"]
    assert problems == []


def _write_history(ws: WorkspaceDir) -> None:
    """File changes and shell commands spread over four past minutes, then two focus events
    and a question put to ``nerve ask`` now."""
    start = (time.time_ns() // MINUTE_NS - 10) * MINUTE_NS
    paths = ["src/app.py", "README.md", "src/app.py", "src/util.py"]
    imported = []
    for i in range(12):
        shell = i % 3 == 2
        path = paths[i % len(paths)]
        imported.append(
            Event(
                hlc=Hlc(start + i * 20 * 10**9, 0),
                node="n",
                kind="observation",
                source=SourceClass.SHELL if shell else SourceClass.FILE_CHANGE,
                trust=Trust.FIRST_PARTY,
                payload=payload_bytes({"argv": ["make", "test"]} if shell else {"path": path}),
                line="ran make test" if shell else f"changed {path}",
            )
        )
    focus = [
        Draft.of(
            "observation",
            source=SourceClass.APP_FOCUS,
            trust=Trust.FIRST_PARTY,
            line=f"focused {app}",
            payload={"app": app},
            subject=app,
        )
        for app in ("editor", "terminal")
    ]
    asked = Draft.of("ask.question", source=NERVE_SOURCE, line="ask: did make test pass?",
                     payload={"question": "did make test pass?"})  # fmt: skip
    with ws.open_log() as log:
        log.import_events(imported)
        log.append_drafts([*focus, asked])


def test_history_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(HISTORY, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


@pytest.mark.usefixtures("kernel_env")
def test_history_notebook_runs_on_a_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = init_workspace(tmp_path / "ws")
    _write_history(ws)

    nb = _run_history(ws, monkeypatch, tmp_path / "run")

    _assert_ran_cleanly(nb)
    expected = replay_digest(ws.log_root)
    assert expected.events == 15
    assert DIGEST_LINE.findall(_stdout(nb)) == [expected.digest]
    assert any("image/png" in o.get("data", {}) for o in _outputs(nb))
    tables = _tables(nb)
    for source in ("file_change", "shell", "app_focus"):
        assert source in tables
    assert "src/util.py" in tables and "README.md" in tables
    assert "ask.question" not in tables and "nerve:" not in tables  # bookkeeping left out


@pytest.mark.usefixtures("kernel_env")
def test_history_notebook_runs_on_an_empty_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = init_workspace(tmp_path / "ws")

    nb = _run_history(ws, monkeypatch, tmp_path / "run")

    _assert_ran_cleanly(nb)
    stdout = _stdout(nb)
    assert "The log is empty" in stdout
    assert DIGEST_LINE.findall(stdout) == [replay_digest(ws.log_root).digest]
    assert not any("image/png" in o.get("data", {}) for o in _outputs(nb))
