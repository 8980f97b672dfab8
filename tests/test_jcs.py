"""Payload canonical JSON is RFC 8785 (JCS), checked against two other implementations.

The expected bytes come from ``conformance/reference.py`` (written from the README and the
RFC, sharing no code with nerve) and from the ``rfc8785`` package, never from nerve itself.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.canonical import MAX_NESTING, canonical_json, legacy_json, parse_canonical
from nerve.errors import EventError

REFERENCE = Path(__file__).resolve().parent.parent / "conformance" / "reference.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jcs_reference", REFERENCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load()

# RFC 8785 Appendix B: IEEE 754 bit patterns and their ECMAScript text.
RFC_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]

# RFC 8785 §3.2.2 and §3.2.3: the worked example and the key-sorting example.
RFC_INPUT = (
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
    ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
    ' "literals": [null, true, false]}'
)
RFC_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)
RFC_SORT_INPUT = (
    '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet'
    ' With Dagesh", "1": "One", "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080":'
    ' "Control", "\\u00f6": "Latin Small Letter O With Diaeresis"}'
)
RFC_SORT_ORDER = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def _three(value: Any) -> tuple[bytes, bytes]:
    """nerve's bytes and the reference's; they must be equal."""
    return canonical_json(value), ref.canonical_json(value)


@pytest.mark.parametrize(("bits", "text"), RFC_NUMBERS)
def test_rfc_number_examples(bits: str, text: str) -> None:
    (value,) = struct.unpack(">d", bytes.fromhex(bits))
    assert canonical_json(value) == text.encode()
    assert ref.jcs_number(value) == text
    assert rfc8785.dumps(value) == text.encode()


def test_rfc_worked_example_and_key_order() -> None:
    assert canonical_json(json.loads(RFC_INPUT)) == RFC_OUTPUT.encode()
    assert ref.jcs(json.loads(RFC_INPUT)) == RFC_OUTPUT
    sorted_keys = list(json.loads(canonical_json(json.loads(RFC_SORT_INPUT))))
    assert sorted_keys == RFC_SORT_ORDER


def test_the_cases_the_issue_names() -> None:
    assert canonical_json(1e-7) == b"1e-7"  # Python writes 1e-07
    assert canonical_json(1e21) == b"1e+21"
    assert canonical_json(1e20) == b"100000000000000000000"
    assert canonical_json(-0.0) == b"0"
    assert canonical_json(0.1 + 0.2) == b"0.30000000000000004"
    assert canonical_json({"a": 1.0}) == b'{"a":1}'
    # U+E000 (private use) sorts after U+1F600 by code point, before it by UTF-16 units
    keys = {"\ue000": 1, "\U0001f600": 2, "z": 3}
    assert canonical_json(keys) == '{"z":3,"\U0001f600":2,"\ue000":1}'.encode()
    assert legacy_json(keys) == '{"z":3,"\ue000":1,"\U0001f600":2}'.encode()
    assert canonical_json('\x00\x1f\x7f\u2028"\\/') == b'"\\u0000\\u001f\x7f\xe2\x80\xa8\\"\\\\/"'
    deep: Any = 1.5
    for _ in range(MAX_NESTING - 1):  # {"k": [1.5]} is 2 levels, each list one more: 64
        deep = {"k": [deep]} if isinstance(deep, float) else [deep]
    assert canonical_json(deep) == ref.canonical_json(deep)
    with pytest.raises(EventError, match="nests 65 levels"):
        canonical_json([deep])


def test_integers_beyond_2_53_are_exact() -> None:
    big = 1_700_000_000_000_000_001  # a nanosecond stamp: JCS's doubles would round it
    assert canonical_json({"t": big}) == b'{"t":1700000000000000001}'
    assert canonical_json({"t": big, "x": 0.5}) == b'{"t":1700000000000000001,"x":0.5}'
    with pytest.raises(rfc8785.IntegerDomainError):
        rfc8785.dumps(big)


def test_non_finite_and_bad_text_are_refused() -> None:
    for bad in (float("nan"), float("inf"), {"x": [float("-inf")]}):
        with pytest.raises(EventError, match="not JSON-serialisable"):
            canonical_json(bad)
    with pytest.raises(EventError, match="not valid Unicode"):
        canonical_json({"x": 0.5, "y": "\ud800"})


_SAFE = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
_KEYS = st.text(st.characters(codec="utf-8"), max_size=6) | st.sampled_from(
    ["\ue000", "\uffff", "\U0001f600", "\U0010fffd", "\ufb33", "a"]
)


def _values(ints: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    scalar = (
        st.none()
        | st.booleans()
        | ints
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(st.characters(codec="utf-8"), max_size=8)
    )
    return st.recursive(
        scalar,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
        max_leaves=12,
    )


@settings(max_examples=300)
@given(_values(_SAFE))
def test_nerve_matches_the_reference_and_rfc8785(value: Any) -> None:
    mine, theirs = _three(value)
    assert mine == theirs == rfc8785.dumps(value)


@settings(max_examples=200)
@given(_values(st.integers()))
def test_stored_bytes_read_back_as_canonical(value: Any) -> None:
    data, theirs = _three(value)
    assert data == theirs
    parsed = parse_canonical(data)
    assert parsed is not None and canonical_json(parsed[0]) == data


# --- a log written before JCS keeps verifying -------------------------------------------------

# What nerve wrote before RFC 8785: keys by code point, Python float text (1e-07, -0.0).
OLD_PAYLOADS = [
    b'{"ratio":1e-07,"zero":-0.0}',
    '{"z":3,"\ue000":1,"\U0001f600":2}'.encode(),
    b'{"big":1e+21,"sum":0.30000000000000004,"whole":1.0}',
]


def _old_log(ws_root: Path) -> list[str]:
    """A workspace whose log holds payloads in the first canonical form, sealed and not."""
    from nerve.events import SourceClass
    from nerve.log.store import EventLog
    from nerve.workspace import WorkspaceDir

    ids = []
    with EventLog(WorkspaceDir(ws_root).log_root, node="old-node") as log:
        for index, data in enumerate(OLD_PAYLOADS):
            event = log.append(source=int(SourceClass.SHELL), line=f"old {index}", payload=data)
            assert event.payload == data  # stored as written, never re-encoded
            ids.append(event.id.hex())
            if index == 1:
                log.seal()
    return ids


def test_an_old_log_verifies_and_round_trips(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    assert all(parse_canonical(data) is None for data in OLD_PAYLOADS)  # not JCS
    assert [legacy_json(json.loads(d)) for d in OLD_PAYLOADS] == OLD_PAYLOADS
    run_cli("init", str(tmp_path / "old"))
    ids = _old_log(tmp_path / "old")
    ws = ("--workspace", str(tmp_path / "old"))
    before = json.loads(run_cli(*ws, "replay", "--verify", "--json").stdout)
    assert before["ok"] and before["events"] == 3
    dump = run_cli(*ws, "tail", "--all", "--json").stdout
    rows = [json.loads(line) for line in dump.splitlines()]
    assert [r["id"] for r in rows] == ids and all("payload_b64" in r for r in rows)
    run_cli("init", str(tmp_path / "copy"))
    run_cli("--workspace", str(tmp_path / "copy"), "import", "-", input=dump)
    after = json.loads(
        run_cli("--workspace", str(tmp_path / "copy"), "replay", "--verify", "--json").stdout
    )
    assert after["ok"] and after["digest"] == before["digest"]


def test_an_export_written_before_jcs_imports_with_its_ids(tmp_path: Path) -> None:
    """A line an older nerve printed (``"payload": value``, the address of the old bytes)."""
    from nerve.events import Event, SourceClass
    from nerve.log.wire import event_from_json

    old = Event(
        hlc=(1_700_000_000_000_000_000, 0),
        node="old-node",
        kind="observation",
        source=int(SourceClass.SHELL),
        payload=OLD_PAYLOADS[0],
        line="old",
    )
    line = {
        "hlc": [old.hlc.physical_ns, 0],
        "node": "old-node",
        "kind": "observation",
        "subject": "",
        "source": "shell",
        "trust": "Untrusted",
        "valid_time_ns": None,
        "line": "old",
        "payload": json.loads(OLD_PAYLOADS[0]),
        "payload_cid": old.payload_cid.hex(),
        "id": old.id.hex(),
    }
    again = event_from_json(line)
    assert again.id == old.id and again.payload == OLD_PAYLOADS[0]
    fresh = event_from_json({k: v for k, v in line.items() if k not in ("id", "payload_cid")})
    assert fresh.payload == b'{"ratio":1e-7,"zero":0}' and fresh.id != old.id
    with pytest.raises(EventError, match=r"payload_cid \S+ does not match"):
        event_from_json({**line, "payload": {"ratio": 2e-07, "zero": -0.0}})
