"""`nerve forget` on a real log: what goes, what stays, and how every reader shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.compute as pc
import pytest

from nerve.events import ErasedEvent, SourceClass
from nerve.log.drafts import Draft
from nerve.log.erasure import ERASED_KIND
from nerve.log.reader import events_since, replay_digest, snapshot, table_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli

SHELL, FILES = int(SourceClass.SHELL), int(SourceClass.FILE_CHANGE)


def _fill(log: EventLog, segments: int = 3, per: int = 6) -> None:
    """Sealed segments of shell commands (a secret in every third) and file edits."""
    for s in range(segments):
        drafts = []
        for i in range(per):
            n = s * per + i
            secret = f"TOKEN=s3cret{n}" if n % 3 == 0 else f"ls {n}"
            drafts.append(Draft.of(source=SHELL, line=f"$ {secret}", payload={"command": secret}))
            drafts.append(Draft.of(source=FILES, line=f"edited f{n}.py", payload={"path": f"f{n}"}))
        log.append_drafts(drafts)
        log.seal()


def _cli(ws: WorkspaceDir, *args: str, check: bool = True) -> tuple[int, str, str]:
    proc = run_cli("--workspace", str(ws.root), *args, check=check)
    return proc.returncode, proc.stdout, proc.stderr


def _rows(ws: WorkspaceDir) -> list[dict]:
    return table_since(snapshot(ws.log_root)).to_pylist()


def test_forget_erases_payload_and_line_and_keeps_ids_order_and_digest(
    workspace: WorkspaceDir,
) -> None:
    with workspace.open_log() as log:
        _fill(log)
        log.append_drafts([Draft.of(source=SHELL, line="$ TOKEN=tail", payload={"c": "t"})])
    before = replay_digest(workspace.log_root)
    rows_before = _rows(workspace)
    _, out, _ = _cli(workspace, "forget", "--source", "shell", "--match", "TOKEN", "--json")
    result = json.loads(out)
    assert result["erased"] == 7  # six sealed secrets and the one in the tail (sealed first)
    rows = _rows(workspace)
    assert [r["id"] for r in rows[:-1]] == [r["id"] for r in rows_before]  # ids and order kept
    assert rows[-1]["kind"] == ERASED_KIND and rows[-1]["id"].hex() == result["erasures"][0]
    for old, new in zip(rows_before, rows, strict=False):
        secret = old["source"] == SHELL and "TOKEN" in old["line"]
        if secret:
            assert new["payload"] is None and new["line"] is None
            kept = {k: v for k, v in old.items() if k not in ("payload", "line")}
            assert {k: new[k] for k in kept} == kept  # every other column kept
        else:
            assert new == old
    after = replay_digest(workspace.log_root)
    assert after.checkpoints[0].digest == before.digest  # the digest before the erasure
    assert after.checkpoints[0].events == before.events
    _, out, _ = _cli(workspace, "replay")
    assert (
        f"before payload.erased {result['erasures'][0][:12]}: {before.events} events, "
        f"digest {before.digest}" in out
    )


def test_the_secret_is_nowhere_in_the_log_once_the_grace_has_passed(
    workspace: WorkspaceDir,
) -> None:
    with workspace.open_log() as log:
        _fill(log)
    _cli(workspace, "forget", "--match", "s3cret")
    with EventLog(workspace.log_root, node="n", retire_grace_ns=0) as log:
        log.maybe_seal()  # a writer's upkeep deletes retired files past the grace
    stored = b"".join(p.read_bytes() for p in workspace.log_root.rglob("*") if p.is_file())
    assert b"s3cret" not in stored
    event = next(r for r in _rows(workspace) if r["kind"] == ERASED_KIND)
    body = json.loads(event["payload"])
    assert "match" not in body["selection"] and body["selection"]["match_text"] is True


def test_dry_run_counts_per_segment_and_source_and_changes_nothing(
    workspace: WorkspaceDir,
) -> None:
    with workspace.open_log() as log:
        _fill(log)
    manifest = (workspace.log_root / "manifest.jsonl").read_bytes()
    _, out, _ = _cli(workspace, "forget", "--match", "s3cret", "--dry-run", "--json")
    result = json.loads(out)
    assert result["dry_run"] and result["erased"] == 6 and result["erasures"] == []
    assert [s["events"] for s in result["segments"]] == [2, 2, 2]
    assert result["sources"] == {"shell": 6}
    assert (workspace.log_root / "manifest.jsonl").read_bytes() == manifest
    _, out, _ = _cli(workspace, "forget", "--match", "s3cret", "--dry-run")
    assert out.startswith("would erase the payload and line of 6 events in 3 segment(s)")
    assert all(r["payload"] is not None for r in _rows(workspace))


def test_selectors_combine_with_and_repeats_with_or(workspace: WorkspaceDir) -> None:
    with workspace.open_log() as log:
        _fill(log, segments=1, per=6)
        cut = log.newest
        _fill(log, segments=1, per=6)

    def count(*args: str) -> int:
        return int(json.loads(_cli(workspace, "forget", *args, "--dry-run", "--json")[1])["erased"])

    assert count("--source", "shell") == 12
    assert count("--source", "shell", "--source", "file_change") == 24
    assert count("--source", "shell", "--match", "s3cret") == 4
    assert count("--before", f"{cut.physical_ns}.{cut.logical}") == 11
    assert count("--after", f"{cut.physical_ns}.{cut.logical}", "--kind", "observation") == 12
    assert count("--before", "1d") == 0 and count("--after", "2000-01-01") == 24
    # time in words, as `tail --since` reads it: the start of the period
    assert count("--before", "yesterday") == 0 and count("--after", "yesterday") == 24
    assert count("--before", "last 10 minutes") == 0
    assert count("--after", "last 10 minutes", "--source", "shell") == 12
    cid = next(r for r in _rows(workspace) if r["source"] == FILES)["payload_cid"].hex()
    assert count("--cid", cid) == 2  # both events that carry those bytes


def test_overlapping_forgets_erase_each_event_once(workspace: WorkspaceDir) -> None:
    with workspace.open_log() as log:
        _fill(log)
    first = json.loads(_cli(workspace, "forget", "--match", "s3cret", "--json")[1])
    second = json.loads(_cli(workspace, "forget", "--source", "shell", "--json")[1])
    assert first["erased"] == 6
    assert second["erased"] == 12 and second["already_erased"] == 6  # only the new ones
    third = json.loads(_cli(workspace, "forget", "--source", "shell", "--json")[1])
    assert third["erased"] == 0 and third["erasures"] == []  # nothing new: no event
    assert third["already_erased"] == 18 and third["protected"] == 0
    erasures = [r for r in _rows(workspace) if r["kind"] == ERASED_KIND]
    assert len(erasures) == 2
    named = [e for r in erasures for e in json.loads(r["payload"])["events"]]
    assert len(named) == len(set(named)) == 18
    report = verify(workspace.log_root)
    assert report.ok and len(report.notes) == 2 and not report.warnings


def test_records_nerve_needs_are_never_erased(workspace: WorkspaceDir) -> None:
    with workspace.open_log() as log:
        _fill(log, segments=1)
    _cli(workspace, "forget", "--match", "s3cret")
    code, _, err = _cli(workspace, "forget", "--kind", ERASED_KIND, check=False)
    assert code == 2 and "never erased" in err
    result = json.loads(_cli(workspace, "forget", "--after", "2000-01-01", "--json")[1])
    assert result["protected"] == 1  # the payload.erased event matched, and was kept
    assert all(r["payload"] is not None for r in _rows(workspace) if r["kind"] == ERASED_KIND)
    assert verify(workspace.log_root).ok


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "say what to forget"),
        (("--before", "someday"), "--before 'someday' is not a time"),
        (("--cid", "abc"), "not a 64-hex-digit payload address"),
        (("--source", "nosuch"), "--source 'nosuch'"),
        (("--match", ""), "--match must not be empty"),
        (("--retention", "--source", "shell"), "without selectors"),
        (("--source", "shell", "--reason", ""), "--reason must be"),
    ],
)
def test_bad_input_is_a_usage_error_and_changes_nothing(
    workspace: WorkspaceDir, args: tuple[str, ...], message: str
) -> None:
    with workspace.open_log() as log:
        _fill(log, segments=1)
    manifest = (workspace.log_root / "manifest.jsonl").read_bytes()
    code, _, err = _cli(workspace, "forget", *args, check=False)
    assert code == 2 and message in err, err
    assert (workspace.log_root / "manifest.jsonl").read_bytes() == manifest


def test_readers_show_erased_values_as_erased(workspace: WorkspaceDir) -> None:
    with workspace.open_log() as log:
        _fill(log, segments=1)
    rows = _rows(workspace)
    secret = next(r for r in rows if "s3cret" in r["line"])
    _cli(workspace, "forget", "--cid", secret["payload_cid"].hex())
    _, out, _ = _cli(workspace, "tail", "--json", "--all")
    wire = [json.loads(line) for line in out.splitlines()]
    erased = next(w for w in wire if w["id"] == secret["id"].hex())
    assert erased["erased"] is True and "line" not in erased and "payload" not in erased
    assert all("erased" not in w for w in wire if w["id"] != secret["id"].hex())
    _, out, _ = _cli(workspace, "tail", "--all")  # not a terminal: tab-separated
    assert any(line.endswith("\t<erased>") for line in out.splitlines())
    _, out, _ = _cli(
        workspace, "query", "--json", "SELECT id, erased, line, data FROM events ORDER BY ALL"
    )
    flags = {json.loads(line)["id"]: json.loads(line) for line in out.splitlines()}
    assert flags[secret["id"].hex()] == {
        "id": secret["id"].hex(),
        "erased": True,
        "line": None,
        "data": None,
    }
    assert sum(f["erased"] for f in flags.values()) == 1
    code, _, err = _cli(workspace, "payload", secret["payload_cid"].hex(), check=False)
    assert code == 1 and "was erased by payload.erased" in err and "reason: user" in err
    erased_event = next(e for e in events_since(workspace.log_root) if e.erased)
    assert isinstance(erased_event, ErasedEvent) and erased_event.id == secret["id"]


def test_ask_shows_an_erased_command_as_erased(workspace: WorkspaceDir) -> None:
    with workspace.open_log() as log:
        log.append_drafts([Draft.of(source=SHELL, line="$ export TOKEN=abc", payload={})])
    _cli(workspace, "forget", "--match", "TOKEN=abc")
    _, out, _ = _cli(workspace, "ask", "What was the last command I ran?", "--json")
    answer = json.loads(out.splitlines()[-1])
    assert "<erased>" in json.dumps(answer) and "TOKEN=abc" not in out


def test_a_copy_of_a_log_with_erasures_imports_verifies_and_keeps_its_digest(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    """`nerve tail --all --json | nerve --workspace OTHER import -` after a forget: the
    erased events and the payload.erased naming them come along as they are."""
    with workspace.open_log() as log:
        _fill(log, segments=2)
        log.append_drafts([Draft.of(source=SHELL, line="$ TOKEN=s3cret-tail", payload={})])
    _cli(workspace, "forget", "--match", "s3cret")
    with workspace.open_log() as log:  # whole events after the erasure, in the tail
        log.append_drafts([Draft.of(source=FILES, line="edited after.py", payload={})])
    _, out, _ = _cli(workspace, "tail", "--json", "--all")
    assert '"erased":true' in out and f'"kind":"{ERASED_KIND}"' in out
    run_cli("init", str(tmp_path / "b"))
    other = WorkspaceDir(tmp_path / "b")
    proc = run_cli("--workspace", str(other.root), "import", "-", input=out)
    assert proc.returncode == 0, proc.stderr
    assert replay_digest(other.log_root).digest == replay_digest(workspace.log_root).digest
    report = json.loads(_cli(other, "replay", "--verify", "--json")[1])
    assert report["ok"] and not report["warnings"], report
    copied = {r["id"]: r for r in _rows(other)}
    for row in _rows(workspace):  # same ids; the erased ones erased, with their address
        twin = copied[row["id"]]
        assert (twin["payload"], twin["line"], twin["payload_cid"]) == (
            row["payload"],
            row["line"],
            row["payload_cid"],
        )
    assert sum(r["payload"] is None for r in copied.values()) == 5
    gone = next(r for r in copied.values() if r["payload"] is None)
    code, _, err = _cli(other, "payload", gone["payload_cid"].hex(), check=False)
    assert code == 1 and "was erased by payload.erased" in err  # the copy says so too
    # a later forget in the copy finds the erased ones erased, and nothing pending
    result = json.loads(_cli(other, "forget", "--match", "s3cret", "--json")[1])
    assert result["erased"] == 0


def test_an_imported_erasure_must_come_with_what_it_erased(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    """A payload.erased naming events the import does not carry is refused: it would have
    the next forget erase the importing log's own events."""
    with workspace.open_log() as log:
        _fill(log, segments=1)
    _cli(workspace, "forget", "--match", "s3cret")
    _, out, _ = _cli(workspace, "tail", "--json", "--all")
    lines = [line for line in out.splitlines() if '"erased":true' not in line]
    run_cli("init", str(tmp_path / "b"))
    other = WorkspaceDir(tmp_path / "b")
    proc = run_cli(
        "--workspace", str(other.root), "import", "-", input="\n".join(lines) + "\n", check=False
    )
    assert proc.returncode == 1 and "cannot be sent without every event it erased" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 2  # the error and its hint, no traceback
    assert not other.log_root.exists() or replay_digest(other.log_root).events == 0


def test_compaction_keeps_erasures_verifiable(workspace: WorkspaceDir) -> None:
    with workspace.open_log() as log:
        _fill(log, segments=4)
        before = replay_digest(workspace.log_root).digest
        log.erase(lambda t: pc.equal(t.column("source"), SHELL), reason="test", selection={})
        assert log.compact(target_rows=1000).merged == 4
    report = verify(workspace.log_root)
    assert report.ok and report.notes and report.checkpoints[0].digest == before
    assert sum(r["payload"] is None for r in _rows(workspace)) == 24


def test_an_interrupted_erasure_is_pending_then_finished(workspace: WorkspaceDir) -> None:
    """The event was stored, the swap was not (a crash between): verify is clean and warns;
    the next forget carries it out before its own."""
    with workspace.open_log() as log:
        _fill(log)
        picked = lambda t: pc.match_substring(t.column("line"), "s3cret")  # noqa: E731
        record = log._record_rewrite
        log._record_rewrite = _fail  # type: ignore[method-assign]
        with pytest.raises(Exception, match="the erasure is recorded"):
            log.erase(picked, reason="crash", selection={})
        log._record_rewrite = record  # type: ignore[method-assign]
    assert all(r["payload"] is not None for r in _rows(workspace) if r["kind"] != ERASED_KIND)
    report = verify(workspace.log_root)
    assert report.ok and any("not erased yet" in str(w) for w in report.warnings)
    result = json.loads(_cli(workspace, "forget", "--kind", "nothing.here", "--json")[1])
    assert result["erased"] == 0
    rows = _rows(workspace)
    assert sum(r["payload"] is None for r in rows) == 6
    assert sum(r["kind"] == ERASED_KIND for r in rows) == 1  # the pending one, not a new one
    report = verify(workspace.log_root)
    assert report.ok and not report.warnings and report.notes


def _fail(*args: object) -> None:
    raise OSError(28, "No space left on device (test)")


def test_payload_erased_cannot_be_sent_from_outside(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    """Only an erasure writes one: an emitted one would name events for the next forget."""
    code, _, err = _cli(
        workspace,
        "emit",
        "--source",
        "shell",
        "--kind",
        ERASED_KIND,
        "--payload",
        '{"events": [], "kept": [], "reason": "x"}',
        check=False,
    )
    assert code == 1 and "kind 'payload.erased' cannot be sent" in err
    line = {"hlc": [1, 0], "node": "n", "kind": ERASED_KIND, "source": "shell"}
    (tmp_path / "e.jsonl").write_text(json.dumps(line) + "\n")
    code, _, err = _cli(workspace, "import", str(tmp_path / "e.jsonl"), check=False)
    assert code == 1 and "cannot be sent" in err
