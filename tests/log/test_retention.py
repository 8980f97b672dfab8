"""`log.retention`: payload age limits, applied on demand and by a running daemon; and
forget/archive through a running daemon while appends race it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from nerve.config import validate_config
from nerve.log.erasure import ERASED_KIND
from nerve.log.reader import replay_digest, snapshot, table_since
from nerve.log.verify import verify
from nerve.runtime import ipc
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.daemon_util import started

DAY_NS = 86_400 * 10**9
RETENTION = """
log:
  retention:
    default: 90d
    sources: {shell: 7d}
    kinds: {note: 1d}
    every: 1s
"""


def _aged(ws: WorkspaceDir, tmp_path: Path) -> None:
    """Import events stamped 100, 10 and 2 days ago, then store some now."""
    now = time.time_ns()
    lines = []
    for index, (days, source, kind, text) in enumerate(
        [
            (100, "file_change", "observation", "very old edit"),
            (10, "shell", "observation", "old command"),
            (10, "file_change", "observation", "old edit"),
            (2, "endpoint", "note", "old note"),
            (2, "shell", "observation", "recent command"),
        ]
    ):
        stamp = now - days * DAY_NS + index  # strictly increasing
        lines.append(
            {
                "hlc": [stamp, 0],
                "node": "past",
                "kind": kind,
                "source": source,
                "line": text,
                "payload": {"text": text},
            }
        )
    dump = tmp_path / "aged.jsonl"
    dump.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run_cli("--workspace", str(ws.root), "import", str(dump))
    run_cli("--workspace", str(ws.root), "emit", "--source", "shell", "--line", "now", "-q")


def _erased_lines(ws: WorkspaceDir, original: list[dict]) -> set[str]:
    before = {r["id"]: r["line"] for r in original}
    rows = table_since(snapshot(ws.log_root)).to_pylist()
    return {before[r["id"]] for r in rows if r["line"] is None}


def test_retention_on_demand_erases_by_kind_then_source_then_default(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    (workspace.root / "nerve.yaml").write_text("senses: {}\n" + RETENTION)
    _aged(workspace, tmp_path)
    original = table_since(snapshot(workspace.log_root)).to_pylist()
    dry = run_cli("--workspace", str(workspace.root), "forget", "--retention", "--dry-run")
    assert dry.stdout.startswith("would erase the payload and line of 3 events")
    out = run_cli("--workspace", str(workspace.root), "forget", "--retention", "--json").stdout
    assert json.loads(out)["reason"] == "retention"
    assert _erased_lines(workspace, original) == {"very old edit", "old command", "old note"}
    event = next(
        r for r in table_since(snapshot(workspace.log_root)).to_pylist() if r["kind"] == ERASED_KIND
    )
    body = json.loads(event["payload"])
    assert body["reason"] == "retention"
    limits = body["selection"]["retention"]
    assert limits["default"] == "2160h" and limits["sources"] == {"shell": "168h"}
    assert verify(workspace.log_root).ok


def test_retention_off_unless_configured(workspace: WorkspaceDir) -> None:
    proc = run_cli("--workspace", str(workspace.root), "forget", "--retention", check=False)
    assert proc.returncode == 2 and "no retention is configured" in proc.stderr


def test_bad_retention_is_named_with_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "nerve.yaml"
    path.write_text("log:\n  retention:\n    sources:\n      shel: 7d\n    default: soon\n")
    issues = [str(i) for i in validate_config(path)]
    assert any(
        i.startswith(f"{path}:4:7: log.retention.sources.shel: unknown source") for i in issues
    )
    assert any(f"{path}:5:5: log.retention.default: invalid duration 'soon'" in i for i in issues)


def test_the_daemon_applies_retention_on_its_timer(workspace: WorkspaceDir, tmp_path: Path) -> None:
    (workspace.root / "nerve.yaml").write_text("senses: {}\n" + RETENTION)
    _aged(workspace, tmp_path)
    original = table_since(snapshot(workspace.log_root)).to_pylist()
    with started(workspace.root) as daemon:
        daemon.wait_for(lambda: daemon.events(ERASED_KIND), timeout=60, what="a retention erasure")
    assert _erased_lines(workspace, original) == {"very old edit", "old command", "old note"}
    erasures = [
        r for r in table_since(snapshot(workspace.log_root)).to_pylist() if r["kind"] == ERASED_KIND
    ]
    assert [r["subject"] for r in erasures] == ["retention"]  # later runs found nothing new
    assert verify(workspace.log_root).ok


def test_forget_through_a_running_daemon_while_appends_race_it(workspace: WorkspaceDir) -> None:
    (workspace.root / "nerve.yaml").write_text("senses: {}\n")
    acked: list[str] = []
    stop = threading.Event()
    with started(workspace.root) as daemon:

        def append() -> None:
            n = 0
            while not stop.is_set():
                batch = [
                    {"source": "shell", "line": f"cmd {n + i}", "payload": {"n": n + i}}
                    for i in range(20)
                ]
                reply = ipc.request(daemon.socket, {"type": "emit", "events": batch}, timeout=30)
                assert reply["ok"], reply
                acked.extend(e["id"] for e in reply["events"])
                n += 20

        writer = threading.Thread(target=append)
        writer.start()
        try:
            daemon.wait_for(lambda: len(acked) > 200, what="appends")
            out = run_cli(
                "--workspace", str(workspace.root), "forget", "--source", "shell", "--json"
            ).stdout
            daemon.wait_for(lambda: len(acked) > 400, what="appends after the forget")
        finally:
            stop.set()
            writer.join()
        result = json.loads(out)
        assert result["erased"] >= 200
        folder = workspace.root.parent / "old"
        archived = run_cli(
            "--workspace",
            str(workspace.root),
            "archive",
            "--before",
            "0s",
            "--to",
            str(folder),
            "--json",
        ).stdout
        assert json.loads(archived)["segments"] >= 1
    rows = table_since(snapshot(workspace.log_root)).to_pylist()
    stored = [r["id"].hex() for r in rows]
    assert len(stored) == len(set(stored))
    assert not set(acked) - set(stored) - _archived_ids(folder)  # nothing acknowledged lost
    assert verify(workspace.log_root, [folder]).ok
    assert replay_digest(workspace.log_root, [folder]).coverage.whole
    report = verify(folder / "data" / "log")  # the erased rows went with the archive
    assert report.ok and report.notes, report.problems
    erased = sum(r["line"] is None for r in rows)
    assert erased + _archived_erased(folder) == result["erased"]


def _archived_ids(folder: Path) -> set[str]:
    return {r["id"].hex() for r in table_since(snapshot(folder / "data" / "log")).to_pylist()}


def _archived_erased(folder: Path) -> int:
    table = table_since(snapshot(folder / "data" / "log"))
    return int(table.column("line").null_count)
