"""The batch path of attention: the same highlights, decisions and state as one at a time."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerve.attention import batch
from nerve.attention import pipeline as pipeline_module
from nerve.attention import service as service_module
from nerve.attention import values as values_module
from nerve.attention.detector import DetectorParams
from nerve.attention.gate import GateConfig, UserContext
from nerve.attention.pipeline import Attention, PipelineConfig
from nerve.attention.service import Attender, Obs
from nerve.attention.settings import parse_attention
from nerve.attention.values import ValueDetector, ValueParams
from nerve.canonical import canonical_json, det_cbor_decode
from nerve.chain import Keyring
from nerve.errors import EventError
from nerve.events import source_name

CONTEXTS = (
    UserContext(),
    UserContext(engagement_milli=300, active_modality="visual"),
    UserContext(engagement_milli=1000, active_modality="audio"),
)

configs = st.builds(
    lambda window, warmup, debounce, alpha, k, floor, refill: PipelineConfig(
        window=window,
        detector=DetectorParams(
            warmup=warmup,
            debounce=debounce,
            alpha_num=alpha[0],
            alpha_den=alpha[1],
            k_milli=k,
            floor_milli=floor,
        ),
        gate=GateConfig(surface_cost_uj=100, budget_capacity_uj=300, refill_uj_per_s=refill),
    ),
    st.integers(1, 12),
    st.integers(0, 6),
    st.integers(0, 5),
    st.sampled_from([(1, 8), (1, 2), (3, 7), (1, 1)]),
    st.integers(0, 4000),
    st.integers(0, 900),
    st.integers(0, 50),
)
observations = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 2, 3, 5, 7, 1024, 1025, 2**32 - 1]),
        st.integers(0, 3),
        st.integers(0, 3_000_000_000),  # gap to the previous observation, ns
        st.integers(0, 2),  # which context
        st.sampled_from([None, {}, {"load": 5}, {"load": 900, "temp": -3}, {"temp": 40}]),
    ),
    min_size=1,
    max_size=260,
)


def _columns(rows: list[tuple[Any, ...]]) -> dict[str, list[Any]]:
    t = 1_750_000_000_000_000_000
    names = ("ids", "sources", "trusts", "times", "ctx", "subjects", "readings")
    out: dict[str, list[Any]] = {k: [] for k in names}
    for i, (source, trust, gap, ctx, readings) in enumerate(rows):
        t += gap
        out["ids"].append(i.to_bytes(32, "big"))
        out["sources"].append(source)
        out["trusts"].append(trust)
        out["times"].append(t)
        out["ctx"].append(CONTEXTS[ctx])
        out["subjects"].append(source_name(source) if readings is not None else "")
        out["readings"].append(readings)
    return out


def _scalar(config: PipelineConfig, cols: dict[str, list[Any]]) -> tuple[list[Any], str]:
    att, out = Attention(config), []
    for i, event_id in enumerate(cols["ids"]):
        args = (cols["sources"][i], cols["trusts"][i], cols["times"][i], cols["ctx"][i])
        for h, d in att.observe(event_id, *args, cols["subjects"][i], cols["readings"][i]):
            out.append((i, h, d))
    return out, canonical_json(att.snapshot())


def _batched(
    config: PipelineConfig, cols: dict[str, list[Any]], cuts: list[int]
) -> tuple[list[Any], str]:
    att, out = Attention(config), []
    bounds = sorted({0, len(cols["ids"]), *(c % (len(cols["ids"]) + 1) for c in cuts)})
    for start, stop in itertools.pairwise(bounds):
        part = {k: v[start:stop] for k, v in cols.items()}
        got = att.observe_batch(
            part["ids"],
            part["sources"],
            part["trusts"],
            part["times"],
            part["ctx"].__getitem__,
            part["subjects"],
            part["readings"],
        )
        out += [(start + i, h, d) for i, h, d in got]
    return out, canonical_json(att.snapshot())


@pytest.fixture
def every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send even the smallest batch through the batch path (the same for every example)."""
    monkeypatch.setattr(pipeline_module, "BATCH_MIN", 1)
    monkeypatch.setattr(service_module, "BATCH_MIN", 1)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(configs, observations, st.lists(st.integers(0, 300), max_size=4))
def test_batches_decide_exactly_as_one_at_a_time(
    every_batch: None, config: PipelineConfig, rows: list[tuple[Any, ...]], cuts: list[int]
) -> None:
    cols = _columns(rows)
    assert _batched(config, cols, cuts) == _scalar(config, cols)


def test_a_long_default_stream_fires_and_matches(every_batch: None) -> None:
    """A stream long enough that every probe fires more than once (a short window)."""

    def row(i: int) -> tuple[Any, ...]:
        phase = i % 500
        source = 5 if 200 <= phase < 260 else (1024 + i % 997 if i % 97 == 96 else i % 8)
        trust = 3 if 300 <= phase < 360 else 1  # a storm of one source, then of low trust
        return source, trust, 400_000_000, i % 3, None

    cols, config = _columns([row(i) for i in range(3000)]), PipelineConfig(window=3)
    expected = _scalar(config, cols)
    assert {h.probe for _, h, _ in expected[0]} == {"salience", "novelty", "uncertainty"}
    assert _batched(config, cols, [700, 701, 2000]) == expected


def test_a_baseline_beyond_the_checked_range_goes_one_at_a_time(every_batch: None) -> None:
    cols = _columns([(i % 4, 1, 10**9, 0, None) for i in range(200)])
    snap = Attention().snapshot()
    snap["detector"]["probes"]["novelty"]["var"] = 2**70  # fine for Python integers only
    scalar, batched = Attention(), Attention()
    scalar.restore(snap)
    batched.restore(snap)
    expected = [
        (i, *hd)
        for i, e in enumerate(cols["ids"])
        for hd in scalar.observe(
            e, cols["sources"][i], cols["trusts"][i], cols["times"][i], cols["ctx"][i]
        )
    ]
    got = batched.observe_batch(
        cols["ids"], cols["sources"], cols["trusts"], cols["times"], cols["ctx"].__getitem__
    )
    assert got == expected
    assert canonical_json(batched.snapshot()) == canonical_json(scalar.snapshot())


def _obs(n: int, bad_at: int | None = None, named: bool = True) -> list[Obs]:
    out = []
    for i in range(n):
        source = 9 if i % 53 == 52 else (i % 4) * 2
        trust = 7 if i == bad_at else (2 if i % 37 > 30 else 1)
        subject = source_name(source) if named else ""
        t = 1_750_000_000_000_000_000 + i * 300_000_000
        out.append(Obs(i.to_bytes(32, "big"), source, trust, t, 0, f"line {i}", subject))
    return out


def _cores(links: tuple[bytes, ...]) -> list[dict[str, Any]]:
    """What each link seals, without what differs by the chain's random nonce."""
    cores = [det_cbor_decode(det_cbor_decode(raw)["core"]) for raw in links]
    return [
        {k: v for k, v in c.items() if k not in ("log", "prev", "nonce", "head", "root")}
        for c in cores
    ]


def _attend(rows: list[Obs], batch_min: int, monkeypatch: pytest.MonkeyPatch) -> Attender:
    monkeypatch.setattr(service_module, "BATCH_MIN", batch_min)
    monkeypatch.setattr(pipeline_module, "BATCH_MIN", batch_min)
    att = Attender(parse_attention({}), Keyring.ephemeral(bytes(32)))
    for start in range(0, len(rows), 700):
        att.observe(rows[start : start + 700])
    return att


@pytest.mark.parametrize("named", [False, True])
def test_the_attender_seals_the_same_chain_in_batches(
    named: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _obs(2500, named=named)
    batched = _attend(rows, 1, monkeypatch)
    one_by_one = _attend(rows, 10**9, monkeypatch)
    assert batched.decisions == one_by_one.decisions and batched.decisions
    assert batched.chain is not None and one_by_one.chain is not None
    assert _cores(batched.chain.links) == _cores(one_by_one.chain.links)
    assert canonical_json(batched.snapshot()) == canonical_json(one_by_one.snapshot())


def test_a_refused_row_stops_the_attender_where_it_stood(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch holding a row the pipeline refuses goes row by row: the rows before it are
    attended, the cursor stands before it, exactly as without batches."""
    rows = _obs(300, bad_at=250)
    states = []
    for batch_min in (1, 10**9):
        monkeypatch.setattr(service_module, "BATCH_MIN", batch_min)
        att = Attender(parse_attention({}), None)
        with pytest.raises(EventError, match="trust 7"):
            att.observe(rows)
        states.append((att.observed, att.cursor, canonical_json(att.snapshot())))
    assert states[0] == states[1]
    assert states[0][0] == 250


# -- value probes --------------------------------------------------------------------------

value_params = st.builds(
    ValueParams,
    warmup=st.integers(0, 4),
    k_milli=st.sampled_from([0, 500, 3000]),
    peak_ratio_milli=st.sampled_from([0, 1500]),
    peak_shift=st.sampled_from([1, 3, 11]),  # a peak, a climb that decay at rest
    trend_k_milli=st.sampled_from([0, 1, 3000]),
    debounce=st.integers(0, 3),
    season_min=st.integers(1, 3),
    sustain=st.integers(1, 3),
    range_bins=st.sampled_from([0, 4, 32]),
    novel_warmup_s=st.sampled_from([0, 60]),
    novel_quiet_s=st.sampled_from([0, 60]),
    novel_quiet=st.integers(0, 3),
    novel_hold=st.integers(0, 5),
    max_probes=st.sampled_from([2, 5, 4096]),
)
value_rows = st.lists(
    st.tuples(
        st.sampled_from(["cpu", "cpu", "net", ""]),
        st.sampled_from(  # mostly at rest, now and then both readings jump at once
            [{"a": 0, "b": 0}] * 6
            + [{"a": 5, "b": 3}, {"a": 10**6, "b": 10**6}, {"a": 40}, {"b": -7, "per_min": 2}, {}]
        ),
        st.sampled_from([1, 1, 10, 600, 4000]),  # seconds since the previous observation
    ),
    min_size=1,
    max_size=200,
)


def _stepped(det: ValueDetector, rows: list[tuple[Any, ...]]) -> list[Any]:
    """Each observation through :meth:`ValueDetector.observe`: its fires, its readings by
    probe, every followed probe's level afterwards and what each probe it read expects."""
    out, t = [], 1_767_225_600_000_000_000
    for i, (subject, readings, gap) in enumerate(rows):
        t += gap * 1_000_000_000
        fires = det.observe(subject, readings, i, t)
        expects = {p: det.expected(p, t) for p in det.latest}
        out.append((fires, det.latest, {p: det.level(p) for p in det._probes}, expects))
    return out


def _batched_values(det: ValueDetector, rows: list[tuple[Any, ...]], cut: int) -> list[Any]:
    """The same through :func:`batch.value_batch`, in two batches (one at a time where it
    declines), with each level and expectation asked of the batch as the gate rules ask it."""
    out, t, times = [], 1_767_225_600_000_000_000, []
    for _, _, gap in rows:
        t += gap * 1_000_000_000
        times.append(t)
    for start, stop in ((0, cut), (cut, len(rows))):
        part = rows[start:stop]
        found = batch.value_batch(det, [r[0] for r in part], [r[1] for r in part],
                                  range(start, stop), times[start:stop])  # fmt: skip
        for j in range(len(part)):
            i = start + j
            if found is None:
                fires = det.observe(rows[i][0], rows[i][1], i, times[i])
                expects = {p: det.expected(p, times[i]) for p in det.latest}
                out.append((fires, det.latest, {p: det.level(p) for p in det._probes}, expects))
                continue
            level, known = found.level(j), {p for r in out for p in r[2]} | set(found.latest[j])
            levels = {p: level(p) for p in known | set().union(*found.latest[: j + 1])}
            expects = {p: found.expected(j)(p) for p in found.latest[j]}
            out.append((found.fires.get(j, []), found.latest[j], levels, expects))
    return out


@settings(max_examples=200, deadline=None)
@given(value_params, value_rows, st.integers(0, 200))
def test_value_probes_in_a_batch_fire_as_one_at_a_time(
    params: ValueParams, rows: list[tuple[Any, ...]], cut: int
) -> None:
    """Probe by probe, a reading at rest counted rather than stepped: the same fires (the
    strongest of an observation's), readings, levels, expectations, recency and state as one
    at a time."""
    _same_as_one_at_a_time(params, rows, cut % (len(rows) + 1))


def _same_as_one_at_a_time(params: ValueParams, rows: list[tuple[Any, ...]], cut: int) -> None:
    one, many = ValueDetector(params), ValueDetector(params)
    expected = _stepped(one, rows)
    got = _batched_values(many, rows, cut)
    for (fires, latest, levels, expects), (want_fires, want_latest, want_levels, want) in zip(
        got, expected, strict=True
    ):
        assert (fires, latest, expects) == (want_fires, want_latest, want)
        assert {p: levels[p] for p in want_levels} == want_levels
    assert canonical_json(many.snapshot()) == canonical_json(one.snapshot())


def test_a_reading_at_rest_after_a_spike_is_counted_while_its_peak_decays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a spike the probe's peak decays at every reading for a long while; readings at
    rest then are counted, the peak worn down as a step would wear it (not below the
    reading's own surprise), and decide as one at a time."""
    rest = ("cpu", {"a": 100}, 10)
    decayed = []
    counted = values_module._rest

    def wear(*worn: int) -> tuple[int, int, int]:  # one reading at a time, seen
        peak, held, climb, surprise, shift, times = worn
        for _ in range(times):
            decayed.append(peak >> shift)
            peak, held, climb = counted(peak, held, climb, surprise, shift, 1)
        return peak, held, climb

    monkeypatch.setattr(values_module, "_rest", wear)
    _same_as_one_at_a_time(ValueParams(peak_shift=1), [rest] * 40 + [("cpu", {"a": 5000}, 10)]
                           + [rest] * 900, 0)  # fmt: skip
    assert sum(1 for d in decayed if d) > 10, "readings at rest counted while a peak decays"


def test_a_reading_at_rest_after_a_climb_is_stepped_while_a_trend_could_fire() -> None:
    """After a climb the slope stays a few thousandths off 0; with a trend bar below that
    the decaying climb would let the trend fire again, so those readings are stepped."""
    ramp = [("cpu", {"a": 100 + 20 * k}, 10) for k in range(30)]
    rows = [ramp[0]] * 40 + ramp + [ramp[-1]] * 900
    _same_as_one_at_a_time(ValueParams(peak_shift=1, trend_k_milli=1), rows, 0)


def _remapped(mask: int, lo: int, hi: int, new_lo: int, new_hi: int, bins: int) -> int:
    """The bins of ``[new_lo, new_hi]`` that the integers of each marked bin of ``[lo, hi]``
    stretch over, bin by bin."""
    span, width, top, out = max(hi - lo, 1), max(new_hi - new_lo, 1), bins - 1, 0
    for b in range(bins):
        first = lo + (b * span + top) // bins
        last = hi if b == top else lo + ((b + 1) * span - 1) // bins
        if mask >> b & 1 and first <= last:
            start = min(top, (first - new_lo) * bins // width)
            end = min(top, (last - new_lo) * bins // width)
            out |= sum(1 << c for c in range(start, end + 1))
    return out


_SPANS = st.integers(0, 40) | st.integers(0, 10**6)


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 64), st.integers(-50, 50), _SPANS, _SPANS, _SPANS, st.data())
def test_a_widened_range_keeps_the_bins_visited_as_bin_by_bin(
    bins: int, lo: int, span: int, below: int, above: int, data: st.DataObject
) -> None:
    """A run of visited bins mapped at once marks what each bin mapped alone marks, also
    when the new bins are narrower than an integer."""
    full = (1 << bins) - 1
    mask = data.draw(st.integers(0, full) | st.just(full) | st.just(full & ~(1 << bins // 2)))
    hi, new_lo = lo + span, lo - below
    got = values_module._remap(mask, lo, hi, new_lo, hi + above, bins)
    assert got == _remapped(mask, lo, hi, new_lo, hi + above, bins)


@settings(max_examples=300, deadline=None)
@given(*[st.integers(0, 10**7)] * 4, st.integers(1, 30), st.integers(0, 3000))
def test_readings_at_rest_wear_the_peaks_down_as_one_at_a_time(
    peak: int, held: int, climb: int, surprise: int, shift: int, times: int
) -> None:
    """Counted at once, ``times`` readings at rest leave the peak, the sustained surprise
    and the climb where as many steps would."""
    want = (peak, held, climb)
    for _ in range(times):
        p, h, c = want
        want = (max(surprise, p - (p >> shift)), h - (h >> shift), c - (c >> shift))
    assert values_module._rest(peak, held, climb, surprise, shift, times) == want
