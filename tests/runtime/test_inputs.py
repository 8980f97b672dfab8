"""Bad input at every capture path: refused with one line naming the field, never a traceback,
and nothing appended; and a log already holding a too-deep payload still reads everywhere."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.canonical import (
    MAX_NESTING,
    canonical_json,
    check_nesting,
    loads_bounded,
    nesting_depth,
)
from nerve.cli.output import dumps
from nerve.errors import DaemonError, EventError, LogError, OrderError, UsageError
from nerve.events import decode_payload
from nerve.log.codec import build_table, wire_lines
from nerve.log.fields import EventFields
from nerve.log.wire import row_to_json
from nerve.runtime.ipc import reply_error
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli

DEEP = 100_000


def nested(depth: int, leaf: object = 1) -> object:
    """``depth`` levels of one-element lists around ``leaf``, built without recursion."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def deep_text(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def cli(ws: WorkspaceDir, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_cli("--workspace", str(ws.root), *args, check=False, **kw)  # type: ignore[arg-type]


def count(ws: WorkspaceDir) -> int:
    return int(
        json.loads(run_cli("--workspace", str(ws.root), "replay", "--json").stdout)["events"]
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], name: str, *parts: str) -> None:
    """Exit 2 for a usage error, else 1; ``Name: message`` (and at most a ``hint:`` line) on
    stderr, no traceback."""
    assert proc.returncode == (2 if name == "UsageError" else 1), proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and lines[0].startswith(f"{name}: "), proc.stderr
    assert all(line.startswith("hint: ") for line in lines[1:]), proc.stderr
    assert "Traceback" not in proc.stderr
    for part in parts:
        assert part in lines[0], proc.stderr


# -- the limit and its checks -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [[1]]}', 3),
        ('{"a": "[[[{{{"}', 1),
        ('["\\"[[", "\\\\", ["]"]]', 2),
        (deep_text(DEEP), DEEP),
    ],
)
def test_nesting_depth_counts_containers_not_brackets_in_strings(text: str, depth: int) -> None:
    assert nesting_depth(text) == nesting_depth(text.encode()) == depth


_json_values = st.recursive(
    st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=3), inner, max_size=3)
    ),
)


@given(_json_values)
@settings(max_examples=200)
def test_nesting_depth_agrees_with_the_parsed_value(value: object) -> None:
    def depth(v: object) -> int:
        if isinstance(v, list):
            return 1 + max(map(depth, v), default=0)
        if isinstance(v, dict):
            return 1 + max(map(depth, v.values()), default=0)
        return 0

    assert nesting_depth(json.dumps(value, ensure_ascii=False)) == depth(value)


def test_payloads_may_nest_64_levels_and_no_more() -> None:
    assert canonical_json(nested(MAX_NESTING), field="payload")
    with pytest.raises(EventError, match="payload nests 65 levels of arrays/objects") as caught:
        canonical_json(nested(MAX_NESTING + 1), field="payload")
    assert caught.value.field == "payload"
    with pytest.raises(EventError, match="payload nests too many levels"):
        canonical_json(nested(DEEP), field="payload")  # past the encoder's recursion limit


def test_deep_text_is_refused_before_it_is_parsed_naming_the_field() -> None:
    line = '{"source":"shell","payload":' + deep_text(10 * DEEP) + "}"
    with pytest.raises(EventError, match=r"^payload nests 1000000 levels") as caught:
        loads_bounded(line, envelope=1)
    assert caught.value.field == "payload"
    request = '{"type":"emit","events":[{"source":"a"},{"payload":{"k":' + deep_text(70) + "}}]}"
    with pytest.raises(EventError, match=r"^events\[1\]\.payload nests 71 levels"):
        check_nesting(request, envelope=3)
    check_nesting('{"payload":' + deep_text(MAX_NESTING) + "}", envelope=1)  # within the limit


# -- what is already stored ------------------------------------------------------------

RAW_DEEP = b"[" * DEEP + b"]" * DEEP


def test_a_stored_deep_payload_decodes_as_raw_bytes() -> None:
    assert decode_payload(RAW_DEEP) is None
    assert decode_payload(deep_text(MAX_NESTING).encode()) is not None
    table = build_table(
        (1, 0, 2),
        node="n",
        fields=EventFields(
            kind=["observation"] * 2,
            subject=["", ""],
            source=[5, 5],
            trust=[3, 3],
            valid_time_ns=[None, None],
            payload=[RAW_DEEP, b'"\\ud800"'],
            line=["deep", "surrogate"],
        ),
    )
    rows = [row_to_json(r) for r in table.to_pylist()]
    assert all("payload_b64" in row and "payload" not in row for row in rows)


_payloads = st.one_of(
    st.binary(max_size=40),
    st.sampled_from(
        [b"", b"null", b"1e5", b'{"b":1,"a":2}', b'"\\u00e9"', b"NaN", deep_text(100).encode()]
    ),
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        ),
    ).map(canonical_json),
)


@given(
    st.lists(
        st.tuples(
            _payloads,
            st.text(max_size=12),
            st.sampled_from([0, 5, 9, 1024, 2**32 - 1]),
            st.none() | st.integers(-(2**63), 2**63 - 1),
        ),
        min_size=1,
        max_size=8,
    )
)
@settings(max_examples=150)
def test_wire_lines_are_exactly_the_wire_form(
    rows: list[tuple[bytes, str, int, int | None]],
) -> None:
    """`tail --json`'s fast path prints the value `json.dumps(row_to_json(row))` would, with a
    canonical payload spliced as stored (JCS number text, which Python's repr need not be)."""
    table = build_table(
        (123, 7, len(rows)),
        node="nödé",
        fields=EventFields(
            kind=["observation"] * len(rows),
            subject=[r[1][::-1] for r in rows],
            source=[r[2] for r in rows],
            trust=[i % 4 for i in range(len(rows))],
            valid_time_ns=[r[3] for r in rows],
            payload=[r[0] for r in rows],
            line=[r[1] for r in rows],
        ),
    )
    lines = wire_lines(table)
    rows_ = table.to_pylist()
    assert [json.loads(x) for x in lines] == [json.loads(dumps(row_to_json(r))) for r in rows_]
    for line, row in zip(lines, rows_, strict=True):
        stored = row["payload"].decode("utf-8", "replace")
        if '"payload":' in line and '"payload_b64"' not in line and stored:
            assert f'"payload":{stored},' in line  # the stored bytes, not a re-encoding


def test_a_log_holding_a_deep_payload_still_reads_in_every_format(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    with workspace.open_log() as log:
        log.append(source=5, line="deep", payload=RAW_DEEP)  # bytes are stored as given
        state = b'{"state":' + b"[" * 5000 + b"]" * 5000 + b"}"
        log.append("sense.state", source=1024, subject="cpu", line="deep state", payload=state)
        log.append(source=5, line="shallow", payload={"a": 1})
    tsv = cli(workspace, "tail", "--all", "--all-kinds")
    assert tsv.returncode == 0 and [r.split("\t")[-1] for r in tsv.stdout.splitlines()] == [
        "deep",
        "deep state",
        "shallow",
    ]
    dump = cli(workspace, "tail", "--all", "--json")
    rows = [json.loads(r) for r in dump.stdout.splitlines()]
    assert dump.returncode == 0 and "payload_b64" in rows[0] and rows[2]["payload"] == {"a": 1}
    copy = init_workspace(tmp_path / "copy")
    assert cli(copy, "import", "-", input=dump.stdout).returncode == 0
    assert (
        json.loads(cli(copy, "replay", "--json").stdout)["digest"]
        == json.loads(cli(workspace, "replay", "--json").stdout)["digest"]
    )
    for fmt in ("--json", "--csv", None):
        args = ["query", "SELECT kind, line, data FROM events", *([fmt] if fmt else [])]
        proc = cli(workspace, *args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr and "shallow" in proc.stdout
    raw = cli(workspace, "sense", "state", "cpu")
    assert raw.returncode == 0 and raw.stdout.startswith("[[[[") and "…" in raw.stdout
    assert "shown raw: state nests 5000 levels" in raw.stderr
    assert cli(workspace, "replay", "--verify").returncode == 0


# -- one-line errors at the CLI --------------------------------------------------------

_LONE = "\\ud800"  # a lone surrogate, as JSON text spells it


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"source": "shell", "kind": [1]}', "kind must be a string, got list"),
        ('{"source": "shell", "line": "a' + _LONE + '"}', "line is not valid Unicode"),
        ('{"source": "shell", "subject": "' + _LONE + '"}', "subject is not valid Unicode"),
        ('{"source": "shell", "payload": {"k": "' + _LONE + '"}}', "payload holds text that"),
        ('{"source": "shell", "valid_time_ns": 1e23}', "valid_time_ns 1e+23 must be"),
        ('{"source": "shell", "valid_time_ns": 100000000000000000000000}', "valid_time_ns 1"),
        ('{"source": "shell", "payload": ' + deep_text(1000) + "}", "payload nests 1000 levels"),
        ('{"source": "shell", "payload": ' + deep_text(DEEP) + "}", "payload nests 100000 levels"),
    ],
)
def test_bad_jsonl_fields_are_one_line_errors_and_append_nothing(
    workspace: WorkspaceDir, line: str, message: str
) -> None:
    before = count(workspace)
    proc = cli(workspace, "emit", "--jsonl", "-", input='{"source": "shell"}\n' + line + "\n")
    assert_one_line_error(proc, "EventError", "<stdin>:2: ", message)
    assert count(workspace) == before


def _argv_bytes(
    ws: WorkspaceDir, *args: bytes, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI with raw bytes in argv (invalid UTF-8 reaches Python as lone surrogates)."""
    cmd = [sys.executable.encode(), b"-m", b"nerve", b"--workspace", str(ws.root).encode(), *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1", **(env or {})}
    )


def test_bad_arguments_are_one_line_errors_and_append_nothing(workspace: WorkspaceDir) -> None:
    before = count(workspace)
    emit = [b"emit", b"--source", b"shell"]
    for extra, message in (
        ([b"--line", b"bad \xff"], "line is not valid Unicode"),
        ([b"--subject", b"\xfe"], "subject is not valid Unicode"),
        ([b"--payload", b'"\xff"'], "payload holds text that is not valid Unicode"),
        ([b"--valid-time", b"100000000000000000000000"], "valid_time_ns 1"),
        ([b"--payload", deep_text(MAX_NESTING + 1).encode()], "payload nests 65 levels"),
    ):
        assert_one_line_error(_argv_bytes(workspace, *emit, *extra), "EventError", message)
    proc = _argv_bytes(workspace, *emit, env={"NERVE_NODE": os.fsdecode(b"host\xff")})
    assert_one_line_error(proc, "EventError", "node is not valid Unicode")
    assert count(workspace) == before
    assert (
        _argv_bytes(workspace, *emit, b"--payload", deep_text(MAX_NESTING).encode()).returncode == 0
    )


def test_import_refuses_bad_fields_and_deep_payloads(workspace: WorkspaceDir) -> None:
    event = {"hlc": [1, 0], "node": "n", "kind": "observation", "source": "shell"}
    for bad, message in (
        ({"node": "x\ud800"}, "node is not valid Unicode"),  # json.dumps escapes it
        ({"payload": "PAYLOAD"}, "payload nests 1000 levels"),
        ({"kind": {"a": 1}}, "kind must be a string"),
    ):
        text = json.dumps({**event, **bad}).replace('"PAYLOAD"', deep_text(1000))
        proc = cli(workspace, "import", "-", input=text + "\n")
        assert_one_line_error(proc, "EventError", "<stdin>:1: ", message)
    assert count(workspace) == 0


def test_empty_query_and_deep_yaml_are_one_line_errors(workspace: WorkspaceDir) -> None:
    for sql in ("", " ; ", "/* only a comment */"):
        assert_one_line_error(cli(workspace, "query", sql), "UsageError", "holds no SQL statement")
    config = workspace.root / "nerve.yaml"
    config.write_text("senses: {}\nx: " + "[" * 5000 + "]" * 5000 + "\n")
    proc = cli(workspace, "validate")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "nested too deeply" in proc.stderr
    block = "x:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(5000))
    config.write_text(block)
    assert_one_line_error(cli(workspace, "emit", "--source", "shell"), "InvalidConfig")


def _limited(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # writes past it fail: EFBIG


def test_disk_full_is_a_one_line_log_error(workspace: WorkspaceDir) -> None:
    """A file-size limit makes the disk say no (EFBIG), as a full disk would (ENOSPC)."""
    for _ in range(3):  # each line its own noise: zstd would fold repeats of one
        noise = os.urandom(48_000).hex()  # 4 bits per character: the segment is ≥ 72 KB
        assert cli(workspace, "emit", "--source", "shell", "--line", noise).returncode == 0
    base = [sys.executable, "-m", "nerve", "--workspace", str(workspace.root)]
    env = {**os.environ, "NO_COLOR": "1"}
    for args in (["emit", "--source", "shell", "--line", noise], ["seal"]):  # the WAL is past it
        proc = subprocess.run(
            [*base, *args],
            capture_output=True,
            text=True,
            env=env,
            preexec_fn=lambda: _limited(64 * 1024),
        )
        assert_one_line_error(proc, "LogError", "File too large")
    assert count(workspace) == 3


def test_reply_error_reads_structured_and_plain_refusals() -> None:
    structured = {
        "ok": False,
        "error": {"type": "EventError", "message": "bad", "field": "events[0].kind", "hint": "h"},
    }
    err = reply_error(structured)
    assert type(err) is EventError and str(err) == "bad"
    assert (err.field, err.hint) == ("events[0].kind", "h")
    old = reply_error({"ok": False, "error": "order", "error_type": "OrderError"})
    assert type(old) is OrderError and str(old) == "order"
    plain = reply_error({"ok": False, "error": "TypeError: boom"})
    assert type(plain) is DaemonError and str(plain) == "TypeError: boom"
    odd = reply_error({"ok": False, "error": {"type": "Weird", "message": "m"}}, default=UsageError)
    assert type(odd) is UsageError and str(odd) == "Weird: m"
    assert type(reply_error({"ok": False, "error": {"type": "LogError"}})) is LogError
