"""A few rows take a pure-Python path through ``build_table``; it must build exactly the
table (types, ids, payload addresses) and refuse exactly what the columnar path does."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.clock import Hlc
from nerve.log import codec
from nerve.log.fields import EventFields

_rows = st.lists(
    st.tuples(
        st.sampled_from(["observation", "sense.state", "signal"]),
        st.text(max_size=6),
        st.sampled_from([0, 5, 1024, 2**32 - 1]),
        st.integers(0, 3),
        st.none() | st.integers(-(2**63), 2**63 - 1),
        st.binary(max_size=40),
        st.text(max_size=20),
    ),
    min_size=1,
    max_size=codec.SMALL_BATCH,
)


def _build(rows: list[tuple[object, ...]], stamps: object, small: bool) -> pa.Table:
    kind, subject, source, trust, vt, payload, line = (list(c) for c in zip(*rows, strict=True))
    saved = codec.SMALL_BATCH
    codec.SMALL_BATCH = saved if small else 0
    try:
        return codec.build_table(
            stamps,
            node="nöde",
            fields=EventFields(
                kind=kind,
                subject=subject,
                source=source,
                trust=trust,
                valid_time_ns=vt,
                payload=payload,
                line=line,
            ),
        )
    finally:
        codec.SMALL_BATCH = saved


@given(_rows, st.booleans())
@settings(max_examples=200)
def test_the_small_path_builds_the_same_table(rows: list[tuple[object, ...]], run: bool) -> None:
    stamps = (123, 7, len(rows)) if run else [Hlc(100 + i, 3 * i) for i in range(len(rows))]
    small, wide = _build(rows, stamps, True), _build(rows, stamps, False)
    assert small.schema.equals(codec.SCHEMA)
    assert small.equals(wide)
    assert codec.ids_of(small) == codec.fixed_bytes(small.column("id"))


@pytest.mark.parametrize(
    ("column", "value"), [("source", 2**32), ("source", -1), ("trust", 256), ("trust", -1)]
)
def test_the_small_path_refuses_what_the_wide_one_does(column: str, value: int) -> None:
    row = {"kind": "k", "subject": "", "source": 0, "trust": 0, "vt": None}
    row[column] = value
    rows = [(row["kind"], row["subject"], row["source"], row["trust"], row["vt"], b"", "")]
    errors = []
    for small in (True, False):
        with pytest.raises((pa.ArrowInvalid, OverflowError)) as caught:
            _build(rows, (1, 0, 1), small)
        errors.append(caught.type)
    assert errors[0] is errors[1]


def test_nerve_s_own_records_take_the_plain_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's records (sense states, errors, runs) carry plain ints, so a group commit of
    them is hashed row by row, never sent down the Arrow path as an enum would send it."""
    from nerve.log.drafts import Draft
    from nerve.runtime.committer import Columns

    columns = Columns()
    columns.record("sense.state", "cpu", "cpu: state", b"{}")
    columns.add(Draft.control("sense.error", "cpu", "cpu: error", {"e": 1}))

    def refused(*args: object, **kw: object) -> pa.Table:
        raise AssertionError("the Arrow path was taken")

    monkeypatch.setattr(codec, "_bulk_table", refused)
    rows = codec.small_rows((5, 0, 2), node="n", fields=columns.fields())
    assert [type(r[6]) for r in rows] == [int, int]


@given(_rows, st.integers(0, 5), st.booleans())
@settings(max_examples=150)
def test_batch_preimages_match_the_reference_on_any_slice(
    rows: list[tuple[object, ...]], cut: int, twice: bool
) -> None:
    """The packed column-wise preimages equal ``events.id_preimage`` row by row: any mix of
    valid times, a slice (an offset into each column), two chunks, and with the line left
    out (what an erased row still holds)."""
    from nerve.events import id_preimage

    table = _build(rows, (2**40, 9, len(rows)), False).slice(min(cut, len(rows) - 1))
    if twice:
        table = pa.concat_tables([table, table])
    expected = [
        id_preimage(
            Hlc(r["physical_ns"], r["logical"]),
            r["node"],
            r["kind"],
            r["subject"],
            r["source"],
            r["trust"],
            r["valid_time_ns"],
            r["payload_cid"],
            r["line"],
        )
        for r in table.to_pylist()
    ]
    assert codec.preimages(table).to_pylist() == expected
    # the line is the last field: its u32 length, then its UTF-8
    lines = [line.encode() for line in table.column("line").to_pylist()]
    without = [pre[: len(pre) - 4 - len(line)] for pre, line in zip(expected, lines, strict=True)]
    assert codec.preimages(table, line=False).to_pylist() == without
