"""Damage a person or a broken disk can do to a log, and what nerve must do about it.

Gone segments (repair keeps what is good and says what is lost), files that are not
regular files (refused at once, never waited on), an erasure record that lies, a manifest
chain rewritten wholesale, an archive stripped of its manifest, and inputs that used to end
in a traceback (huge integers, time bounds past 2262, a live segment gone under a reader).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nerve.canonical import canonical_json
from nerve.errors import LogCorrupt
from nerve.log import erasure
from nerve.log.drafts import Draft
from nerve.log.manifest import append_record, line_hash, read_manifest
from nerve.log.reader import events_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.crypt import encrypt_log
from tests.helpers.smallfs import fill, small_tmpfs

BIG = "1" * 5000


@pytest.fixture(params=["plain", "encrypted"])
def log_root(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Each test runs on a plain log and on an encrypted one (nerve.log.crypt)."""
    root = tmp_path / "log"
    return encrypt_log(root, monkeypatch) if request.param == "encrypted" else root


def _fill(root: Path, segments: int = 3, tail: bool = True) -> list[bytes]:
    ids: list[bytes] = []
    with EventLog(root, node="h") as log:
        for s in range(segments):
            drafts = [Draft.of(source=1, line=f"s{s}e{i}", payload={"i": i}) for i in range(4)]
            ids += [bytes(x) for x in log.append_drafts(drafts).column("id").to_pylist()]
            log.seal()
        if tail:
            ids += [bytes(log.append(source=1, line="tail").id)]
    return ids


def _stored(root: Path) -> list[bytes]:
    return [e.id for e in events_since(root) if e.kind != "log.recovered"]


def _live(root: Path) -> list[str]:
    return [s.name for s in read_manifest(root / "manifest.jsonl").segments()]


def _cli(
    ws: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli("--workspace", str(ws), *args, check=False, env=env, timeout=60)


# -- 3: a live segment gone --------------------------------------------------------------


def test_repair_rebuilds_a_gone_segment_from_the_files_it_replaced(tmp_path: Path) -> None:
    root = tmp_path / "log"
    ids = _fill(root)
    with EventLog(root, node="h") as log:
        log.compact(target_rows=1000)  # the inputs stay for the reader grace
    (merged,) = _live(root)
    (root / "segments" / f"{merged}.parquet").unlink()
    with pytest.raises(LogCorrupt, match="live segment is missing"):
        EventLog(root, node="h")
    with EventLog(root, node="h", repair=True) as log:
        notes = log.recovered
    assert any("rebuilt whole (12 events)" in n for n in notes), notes
    assert sorted(_stored(root)) == sorted(ids)
    report = verify(root)
    assert report.ok, report.problems


@pytest.mark.parametrize("how", ["deleted", "a folder", "a fifo"])
def test_repair_writes_off_a_gone_segment_and_keeps_the_rest(tmp_path: Path, how: str) -> None:
    root = tmp_path / "log"
    ids = _fill(root)
    state = read_manifest(root / "manifest.jsonl")
    gone = state.segments()[1]
    path = root / "segments" / f"{gone.name}.parquet"
    path.unlink()
    if how == "a folder":
        path.mkdir()
    elif how == "a fifo":
        os.mkfifo(path)
    with pytest.warns(UserWarning, match="live segment is missing or not a regular file"):
        shown = _stored(root)  # readers show the rest, and say what they cannot
    assert len(shown) == len(ids) - 4
    with EventLog(root, node="h", repair=True) as log:
        notes = log.recovered
    said = f"HLC {gone.min_hlc} to {gone.max_hlc}) was gone: 4 of its 4 events are lost"
    assert any(said in n for n in notes), notes
    assert _stored(root) == ids[:4] + ids[8:]  # every other event kept, in order
    report = verify(root)
    assert report.ok, report.problems
    assert any("4 of its 4 events written off as lost" in str(w) for w in report.warnings)
    with EventLog(root, node="h") as log:  # the writer takes the log again
        log.append(source=1, line="after")


def test_nerve_repair_and_readers_on_a_gone_segment_say_it_in_one_line(
    workspace: WorkspaceDir,
) -> None:
    _fill(workspace.log_root)
    first = _live(workspace.log_root)[0]
    (workspace.log_root / "segments" / f"{first}.parquet").unlink()
    for args in (["query", "SELECT count(*) AS n FROM events"], ["tail"]):
        done = _cli(workspace.root, *args)
        assert "Traceback" not in done.stderr, done.stderr
        assert "live segment is missing" in done.stderr
    done = _cli(workspace.root, "repair")
    assert done.returncode == 0, done.stderr
    assert "4 of its 4 events are lost" in done.stdout
    assert _cli(workspace.root, "replay", "--verify").returncode == 0


# -- 4: not a regular file ---------------------------------------------------------------

_PROBE = """
import sys, warnings
from pathlib import Path
from nerve.errors import NerveError
from nerve.log.store import EventLog
from nerve.log.reader import events_since
from nerve.log.verify import verify
root = Path(sys.argv[1])
warnings.simplefilter("ignore")
steps = (lambda: list(events_since(root)), lambda: verify(root), lambda: EventLog(root, node="h"))
for step in steps:
    try:
        step()
        print("ok")
    except NerveError as exc:
        print("refused:", exc)
"""


@pytest.mark.parametrize(
    "where", ["wal/0000000000000009.wal", "segments/stray.parquet", "live", "manifest.jsonl"]
)
def test_a_fifo_anywhere_in_the_log_is_refused_at_once_never_waited_on(
    tmp_path: Path, where: str
) -> None:
    root = tmp_path / "log"
    _fill(root)
    if where == "live":
        where = f"segments/{_live(root)[0]}.parquet"
    path = root / where
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(root)], capture_output=True, text=True, timeout=60
    )  # before the fix, the first open() of the FIFO waits forever and this times out
    assert done.returncode == 0, done.stderr
    outcomes = done.stdout.splitlines()
    assert len(outcomes) == 3
    assert outcomes[1] == "ok"  # verify reports, never raises
    assert path.exists() or (root / "quarantine" / path.name).exists()  # never deleted


# -- 5: an erasure record that lies; a manifest rewritten wholesale -----------------------


def _intact_erasure(root: Path) -> None:
    """Through nerve's own API: a payload.erased naming an intact event, and a rewrite
    record saying it was carried out, though no segment was swapped."""
    with EventLog(root, node="h") as log:
        log.seal()

        def one(table: object) -> object:
            import pyarrow.compute as pc

            return pc.equal(table.column("line"), "s0e1")  # type: ignore[attr-defined]

        plan = erasure.rewrite(log.paths.segments, log._live_files(), one, write=False)
        assert plan.count == 1
        stored = log.append_drafts(erasure.drafts(plan, "lie", {}))
        log.seal()
        ids = [bytes(i).hex() for i in stored.column("id").to_pylist()]
        append_record(
            log.paths.manifest,
            log.manifest,
            {"op": "rewrite", "remove": [], "add": [], "erasure": ids, "time_ns": 1},
        )


def test_an_erasure_record_naming_an_intact_event_is_caught(tmp_path: Path) -> None:
    root = tmp_path / "log"
    _fill(root)
    assert verify(root).ok
    _intact_erasure(root)
    report = verify(root)
    assert not report.ok
    assert "its payload and line are intact: the erasure record lies" in str(report.problems[0])


def _rechain(path: Path, edit: int) -> None:
    """Edit record ``edit`` and re-chain every record after it (seq and prev kept right)."""
    lines = path.read_bytes().split(b"\n")[:-1]
    out, prev = [], "0" * 64
    for number, raw in enumerate(lines):
        rec = json.loads(raw)
        if number == edit:
            rec["time_ns"] = int(rec.get("time_ns", 0)) + 1
        rec["prev"] = prev
        line = canonical_json(rec)
        out.append(line)
        prev = line_hash(line)
    path.write_bytes(b"\n".join(out) + b"\n")


def test_a_manifest_rewritten_and_rechained_is_caught_against_its_anchor(tmp_path: Path) -> None:
    from nerve.log.anchor import anchor_file  # here: the rest of the file runs without it

    root, trust = tmp_path / "log", tmp_path / "trust"
    _fill(root)
    anchor = anchor_file(trust, root)
    assert verify(root, anchor=anchor).ok and anchor.exists()
    _rechain(root / "manifest.jsonl", edit=1)
    assert verify(root).ok  # the chain alone cannot tell
    report = verify(root, anchor=anchor)
    assert not report.ok
    assert "record 2 is not the one a verify accepted before" in str(report.problems[-1])
    with EventLog(root, node="h") as log:  # appending keeps the accepted chain's prefix
        log.append(source=1, line="more")
        log.seal()
    assert not verify(root, anchor=anchor).ok  # still the rewritten chain


def test_replay_verify_anchors_the_manifest_outside_data(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    _fill(workspace.log_root)
    assert _cli(workspace.root, "replay", "--verify", env=env).returncode == 0
    assert list((tmp_path / "state" / "nerve" / "trust" / "manifests").iterdir())
    _rechain(workspace.log_root / "manifest.jsonl", edit=0)
    done = _cli(workspace.root, "replay", "--verify", env=env)
    assert done.returncode == 1 and "the chain was rewritten" in done.stderr


# -- 6: an archive whose manifest was deleted --------------------------------------------


def test_an_archive_stripped_of_its_manifest_is_damage_not_missing(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    _fill(workspace.log_root)
    folder = tmp_path / "old"
    with workspace.open_log() as log:
        log.archive(log.manifest.segments()[1].max_hlc, folder)
    assert verify(workspace.log_root).ok
    (folder / "data" / "log" / "manifest.jsonl").unlink()
    report = verify(workspace.log_root)
    assert not report.ok
    assert "its manifest.jsonl is missing" in str(report.problems[0])
    done = _cli(workspace.root, "replay", "--verify")
    assert done.returncode == 1 and "manifest.jsonl is missing" in done.stderr


# -- 6b: inputs that used to end in a traceback ------------------------------------------


@pytest.mark.parametrize(
    "args,stdin",
    [
        (["emit", "--source", "1", "--payload", '{"n": ' + BIG + "}"], None),
        (
            ["emit", "--jsonl", "-"],
            json.dumps({"line": "x", "source": 1})[:-1] + ', "payload": {"n": ' + BIG + "}}\n",
        ),
    ],
)
def test_an_integer_of_5000_digits_is_a_one_line_error(
    workspace: WorkspaceDir, args: list[str], stdin: str | None
) -> None:
    done = run_cli("--workspace", str(workspace.root), *args, input=stdin, check=False)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "integer of more than 4300 digits" in done.stderr
    assert _stored(workspace.log_root) == []  # nothing was stored


def test_an_import_with_a_huge_integer_names_its_line(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"kind": "observation", "payload": {"n": ' + BIG + "}}\n")
    done = _cli(workspace.root, "import", str(source))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "in.jsonl:1" in done.stderr and "4300 digits" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["tail", "--until", "2999-01-01"],
        ["tail", "--since", "2999-01-01"],
        ["forget", "--after", "2999-01-01", "--dry-run"],
        ["forget", "--before", "99999999999d", "--dry-run"],
    ],
)
def test_time_bounds_past_2262_select_all_or_nothing(
    workspace: WorkspaceDir, args: list[str]
) -> None:
    _fill(workspace.log_root, segments=1)
    done = _cli(workspace.root, *args)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0
    if args[:2] == ["tail", "--until"]:
        assert len(done.stdout.splitlines()) == 5  # everything


def test_an_export_onto_a_full_disk_is_a_one_line_error(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    _fill(workspace.log_root, segments=2)
    with small_tmpfs(tmp_path / "mnt") as disk:
        fill(disk, leave=8 * 1024)
        target = disk / "out.duckdb"
        done = _cli(workspace.root, "export", "--duckdb", str(target), "--copy")
        assert done.returncode == 1, done.stdout
        assert "Traceback" not in done.stderr, done.stderr
        assert "cannot write the export" in done.stderr
        assert not target.exists()
