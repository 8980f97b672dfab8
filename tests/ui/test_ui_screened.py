"""The rows ``nerve ui`` reads: which ones the privacy rules may change is decided in DuckDB,
and that test must find every row the built-in detectors would change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nerve
from nerve import api
from nerve.canonical import canonical_json
from nerve.privacy.detectors import detector_names
from nerve.privacy.scan import Redactor
from nerve.ui.screened import MAY_MATCH, PAYLOAD_TEXT

SAMPLES = ["ghp_" + "A1b2C3d4E5" * 4, "AKIAIOSFODNN7EXAMPLE", "4111 1111 1111 1111",
           "4111-1111-1111-1111", "5500000000000004", "glpat-abcdefghij0123456789",
           "xoxb-1234567890-abc", "sk-abc123def456ghi789jkl0", "eyJhbGciOi.eyJzdWIiOi.sig",
           "https://bob:hunter2@example.org", "-----BEGIN RSA PRIVATE KEY-----",
           "github_pat_" + "a1" * 12, "aws_secret_access_key=" + "a/B+" * 10]  # fmt: skip
PIECES = [*SAMPLES, "password=", "PassWord: ", "--token ", "api_key=", "Secret", "TOKEN=",
          "\u212aey=", "\u017fecret=", "1234567", "89", " ", "x", "é", '"', "\\", "-", "=", ":",
          "_", "gh", "@"]  # fmt: skip
CONN = duckdb.connect()
REDACTOR = Redactor(detector_names())


def _door(ws: Any) -> api.Workspace:
    """The front door over a workspace the test made as a folder."""
    return nerve.open(ws.root)


def flagged(line: str, payload: bytes) -> bool:
    one = "SELECT ? AS line, ?::BLOB AS payload, '' AS subject"
    rows = f"(SELECT *, {PAYLOAD_TEXT} AS t FROM ({one}))"
    row = CONN.execute(f"SELECT ({MAY_MATCH}) FROM {rows}", [line, payload]).fetchone()
    return bool(row and row[0])


def changed(line: str, payload: bytes) -> bool:
    return bool(REDACTOR.event(line, payload)[2])


@settings(max_examples=400)
@given(
    st.lists(st.sampled_from(PIECES), max_size=6),
    st.lists(st.sampled_from(PIECES), max_size=6),
    st.sampled_from(["text", "json", "key"]),
)
def test_every_row_a_detector_changes_is_screened(
    line: list[str], data: list[str], as_: str
) -> None:
    text = "".join(data)
    payload = {"text": text.encode(), "json": canonical_json({"v": text})}.get(
        as_, canonical_json({text or "k": 1})
    )
    if changed("".join(line), payload):
        assert flagged("".join(line), payload), (line, payload)


def test_each_sample_is_changed_and_flagged_and_plain_rows_are_not() -> None:
    for sample in SAMPLES:
        assert changed(f"x {sample} y", b"") and flagged(f"x {sample} y", b""), sample
        body = canonical_json({"note": f"x {sample} y"})
        assert changed("", body) and flagged("", body), sample
    hidden = b'{"v":"\\u0041KIAIOSFODNN7EXAMPLE"}'  # an escape hides the token's prefix
    assert changed("", hidden) and flagged("", hidden)
    assert not flagged("cpu sample 12", b'{"v":12}')
    assert not flagged("cpu detail 123456", b"")


def test_the_timeline_counts_sealed_and_unsealed_rows_as_the_rules_leave_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nerve import logops
    from nerve.log.drafts import Draft
    from nerve.ui import data
    from nerve.workspace import WorkspaceDir, init_workspace

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    init_workspace(tmp_path / "ws")
    ws = WorkspaceDir(tmp_path / "ws")
    (ws.root / "nerve.yaml").write_text("senses: {}\nlog:\n  durability: os\n")
    ws = WorkspaceDir(ws.root)
    logops.emit(ws, [Draft.of(source=5, line=f"sealed {i}") for i in range(6)])
    logops.emit(ws, [Draft.of(source=5, line="payroll sealed")])
    with ws.open_log() as log:
        log.seal()
    logops.emit(ws, [Draft.of(source=5, line=f"tail {i}") for i in range(3)])
    logops.emit(ws, [Draft.of(source=5, line="payroll tail")])
    win = data.window("1h", None)

    def counted() -> tuple[int, int]:
        view = data.timeline(_door(ws), win)
        return sum(view["counts"]), sum(view["erased"])

    assert counted() == (11, 0)
    (ws.root / "nerve.yaml").write_text(
        "senses: {}\nlog:\n  durability: os\n"
        "privacy:\n  rules:\n    - {name: payroll, regex: 'payroll', action: drop}\n"
    )
    assert counted() == (9, 0)  # withheld in the sealed segment and in the tail
    data.forget(_door(ws), match="sealed 3", kinds=[], sources=[], before=None, after=None,
                reason="test", dry_run=False)  # fmt: skip
    total, erased = counted()
    assert erased == 1 and total >= 9  # the rewritten segment is summarised anew


def test_a_search_is_for_the_text_as_typed_in_any_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nerve import logops
    from nerve.log.drafts import Draft
    from nerve.ui import data
    from nerve.workspace import WorkspaceDir, init_workspace

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = init_workspace(tmp_path / "ws")
    lines = ["build_50%_done", "buildX50%Xdone", "BUILD_50%_DONE", "other"]
    logops.emit(ws, [Draft.of(source=5, line=x, payload={"n": i}) for i, x in enumerate(lines)])
    ws = WorkspaceDir(ws.root)

    def found(text: str) -> list[str]:
        got = data.events(_door(ws), data.Filters(text=text), data.window("1h", None))
        return sorted(e["line"] for e in got["events"])

    assert found("build_50%_done") == ["BUILD_50%_DONE", "build_50%_done"]  # no wildcards
    assert found("\\") == [] and found('"n":3') == ["other"]  # the payload's JSON text
