from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.clock import Hlc
from nerve.errors import EventError
from nerve.events import Event, SourceClass, Trust, parse_source, parse_trust, source_name
from nerve.log.codec import fixed_bytes, table_from_events
from nerve.log.wire import draft_from_json, event_from_json, event_to_json

texts = st.text(max_size=40)
sources = st.one_of(st.sampled_from([int(s) for s in SourceClass]), st.integers(1024, 2**32 - 1))
payloads = st.one_of(
    st.binary(max_size=64),
    st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=4).map(
        lambda d: __import__("nerve.canonical", fromlist=["x"]).canonical_json(d)
    ),
)
events = st.builds(
    Event,
    hlc=st.builds(Hlc, st.integers(0, 2**63 - 1), st.integers(0, 2**32 - 1)),
    node=st.text(min_size=1, max_size=20),
    kind=st.sampled_from(["observation", "sense.state", "workflow.message", "x-y.z_1"]),
    subject=texts,
    source=sources,
    trust=st.sampled_from(list(Trust)),
    valid_time_ns=st.none() | st.integers(-(2**63), 2**63 - 1),
    payload=payloads,
    line=texts,
)


@given(st.lists(events, min_size=1, max_size=20))
@settings(max_examples=60)
def test_batch_ids_equal_reference_ids(evs: list[Event]) -> None:
    table = table_from_events(evs)
    assert fixed_bytes(table.column("id")) == b"".join(e.id for e in evs)


@given(events)
def test_wire_form_round_trips_exactly(ev: Event) -> None:
    back = event_from_json(event_to_json(ev))
    assert back == ev and back.id == ev.id and back.payload == ev.payload


@given(events, sources, st.sampled_from(list(Trust)))
def test_retagging_source_or_trust_changes_the_id(ev: Event, src: int, trust: Trust) -> None:
    def with_(**kw: object) -> Event:
        fields = dict(
            hlc=ev.hlc,
            node=ev.node,
            kind=ev.kind,
            subject=ev.subject,
            source=ev.source,
            trust=ev.trust,
            valid_time_ns=ev.valid_time_ns,
            payload=ev.payload,
            line=ev.line,
        )
        fields.update(kw)
        return Event(**fields)  # type: ignore[arg-type]

    assert (with_(source=src).id == ev.id) == (src == ev.source)
    assert (with_(trust=trust).id == ev.id) == (trust == ev.trust)


def test_names_and_codes() -> None:
    assert parse_source("shell") == 5
    assert parse_source("vendor:1024") == 1024
    assert source_name(2048) == "vendor:2048"
    assert parse_trust("firstparty") == Trust.FIRST_PARTY
    for bad in ("vendor:5", "nonsense", "12"):
        with pytest.raises(EventError):
            parse_source(bad)
    with pytest.raises(EventError, match="unknown trust"):
        parse_trust("trusted")


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"line": "x"}, "missing field: source"),
        ({"source": "shell", "bogus": 1}, "unknown field"),
        ({"source": "shell", "valid_time_ns": "soon"}, "valid_time_ns"),
        ({"source": "shell", "kind": "Bad Kind"}, "kind"),
        ({"source": "shell", "payload_b64": "!!"}, "base64"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_bad_drafts_name_the_field(obj: object, message: str) -> None:
    with pytest.raises(EventError, match=message):
        draft_from_json(obj)


def test_a_claimed_id_that_does_not_match_is_refused() -> None:
    ev = Event(hlc=Hlc(1, 0), node="n", kind="observation", line="x")
    wire = event_to_json(ev)
    wire["line"] = "y"
    with pytest.raises(EventError, match="does not match"):
        event_from_json(wire)
