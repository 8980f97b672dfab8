"""Processes that read and verify the log exit cleanly, hundreds of times over (issue 8, #11).

``nerve replay --verify`` printed "verify ok" and then, now and then under load, died with
"terminate called without an active exception" (exit 134): the parquet reader held Python
``bytes`` through a buffer that Arrow's worker threads could release after the read had
returned, and releasing it needs the GIL, which Python refuses to a thread once it has begun
to exit (see :mod:`nerve.log.buffers`). The race needs a worker held off the CPU at the
wrong instant, so many readers run in parallel, each pinned to one CPU, on a log whose
verification ends right after reading its last, one-event segment.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from nerve.events import SourceClass
from nerve.log.buffers import read_file
from nerve.log.drafts import Draft
from nerve.workspace import WorkspaceDir, init_workspace

HELPER = Path(__file__).parent.parent / "helpers" / "exit_stress.py"
RUNS, PARALLEL = 240, 6
SHELL = int(SourceClass.SHELL)


def test_file_bytes_for_the_parquet_reader_are_arrow_memory(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.write_bytes(bytes(range(256)) * 400)
    before = pa.total_allocated_bytes()
    buffer = read_file(path)
    assert pa.total_allocated_bytes() - before >= buffer.size == 102_400  # not a Python object
    assert buffer.to_pybytes() == path.read_bytes()


def _sealed_log(tmp_path: Path) -> Path:
    ws = init_workspace(tmp_path / "ws")
    with WorkspaceDir(ws.root).open_log() as log:
        for rows in (300, 300, 1):
            log.append_drafts(
                [Draft.of("observation", source=SHELL, line=f"cmd {i}") for i in range(rows)]
            )
            log.seal()
    return ws.log_root


def test_processes_that_read_and_verify_the_log_exit_cleanly(tmp_path: Path) -> None:
    root = _sealed_log(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(HELPER), str(root), str(RUNS), str(PARALLEL)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.stdout.split() == [f"0:{RUNS}"], (
        f"exit code:count over {RUNS} runs: {proc.stdout.strip()}\n{proc.stderr[-2000:]}"
    )
