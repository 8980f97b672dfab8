"""``snapshot(root, previous)``: a snapshot taken after an earlier one reads only the WAL
frames added since, and is the same as a snapshot taken afresh whatever happened in between
(appends by one writer or by writers opened one after another, seals, torn tails cut on
open, a WAL file rewritten); and ``table_since`` with columns reads a whole segment for
those alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerve.log import reader, wal
from nerve.log.drafts import Draft
from nerve.log.reader import Snapshot, snapshot, table_since
from nerve.log.store import EventLog
from tests.helpers.crypt import encrypt_log


def _same(after: Snapshot, fresh: Snapshot) -> None:
    assert after.head == fresh.head and after.count == fresh.count
    assert table_since(after).equals(table_since(fresh))


def _append(log: EventLog, count: int, tag: str) -> None:
    log.append_drafts([Draft.of(source=1, line=f"{tag} {i}") for i in range(count)])


@pytest.fixture(params=["plain", "encrypted"])
def root(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "log"
    return encrypt_log(path, monkeypatch) if request.param == "encrypted" else path


def test_a_later_snapshot_decodes_only_the_new_frames(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = EventLog(root, node="n", durability="os")
    for k in range(20):
        _append(log, 3, f"first {k}")
    before = snapshot(root)
    _append(log, 2, "second")
    starts: list[int] = []
    real = wal.scan

    def counted(path: Path, *, strict: bool = True, start: int = 0, decode: bool = True):  # type: ignore[no-untyped-def]
        starts.append(start)
        return real(path, strict=strict, start=start, decode=decode)

    monkeypatch.setattr(reader, "scan", counted)
    after = snapshot(root, before)
    assert len(starts) == 1 and starts[0] == before.wal[0].scan.good_end > 0
    assert after.count == before.count + 2
    monkeypatch.undo()
    _same(after, snapshot(root))
    log.close()


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["append", "reopen", "seal", "torn", "rewrite"]), max_size=12))
def test_a_snapshot_after_another_is_the_same_as_one_taken_afresh(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    root = tmp_path_factory.mktemp("log") / "log"
    log = EventLog(root, node="n", durability="os")
    _append(log, 2, "start")
    last = snapshot(root)
    for k, step in enumerate(steps):
        if step == "append":
            _append(log, 1 + k % 3, f"step {k}")
        elif step == "reopen":
            log.close()
            log = EventLog(root, node="n", durability="os")
        elif step == "seal":
            log.seal()
        else:
            log.close()
            _damage(root, step)
            log = EventLog(root, node="n", durability="os")  # cuts a torn tail
            _append(log, 1, f"after {step} {k}")
        last = snapshot(root, last)
        _same(last, snapshot(root))
    log.close()


def _damage(root: Path, how: str) -> None:
    """A torn frame at the end of the newest WAL file, or that file written again with the
    same frames (a new file in its place)."""
    files = sorted((root / "wal").iterdir())
    if not files:
        return
    path = files[-1]
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data + bytes(3) if how == "torn" else data)
    path.chmod(0o600)


def test_table_since_with_columns_recomputes_no_payload_address(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nerve.log import codec

    log = EventLog(root, node="n", durability="os")
    _append(log, 50, "sealed")
    log.seal()
    _append(log, 5, "tail")
    log.close()
    snap = snapshot(root)
    whole = table_since(snap)
    hashed: list[int] = []
    real = codec.hash_each

    def counted(values):  # type: ignore[no-untyped-def]
        hashed.append(len(values))
        return real(values)

    monkeypatch.setattr(codec, "hash_each", counted)
    columns = ["id", "node", "physical_ns", "payload"]
    assert table_since(snap, columns=columns).equals(whole.select(columns))
    assert hashed == []
