"""Attention throughput and audit verification speed, measured in one run.

    .venv/bin/python bench/attention_bench.py [--observations N] [--links M] [--quick]
                                              [--rounds R] [--no-cli]

**Pipeline** (N observations, default 1,000,000): one generated, bursty stream of
``(source, trust, HLC physical ns)`` — a background of system, process, network, thermal,
file, shell and focus observations, interrupted by storms of one source, runs of
low-trust observations and newly appearing vendor sources — goes through

* (a) the bare pipeline, ``Attention.observe_batch`` over chunks of 5,000 (user contexts
  precomputed outside the timing), and (a0) ``Attention.observe`` one observation at a
  time over the same stream: every highlight and decision must be the same
  (``batch_matches_one_by_one``);
* (b) the full ``Attender`` path: context tracker, pipeline, sealing every decision into a
  signed chain (Ed25519) and building the highlight / decision / link drafts; (b1) the same
  with each observation naming its sense, as observations in a log do, so each also steps
  that sense's ``per_min`` value probe (one at a time: value probes are not batched);
* (c) ``nerve.attention.service.replay`` over a real log holding the N observations (built
  with ``EventLog.append_columns`` in batches of 100k, ``durability="os"``): reading,
  attending and appending, end to end — what ``nerve attend --replay`` runs.
  ``append_columns`` stamps a whole batch at one physical time, so in (c) the gate sees no
  time pass within a batch: fewer highlights surface (the budget refills only between
  batches), and a sense's ``per_min`` value probe sees its whole batch in one minute, so it
  fires where (b1) does not. What the replay recorded must be what ``nerve attend --replay
  --recompute`` recomputes from scratch over the same log (``replay_decisions_match``).

**Audit** (M links, default 100,000): a chain of decisions with a checkpoint every 64 links,
sealed with ``ChainWriter``; ``verify_chain`` and ``nerve.attention.audit.verify`` against
PyNaCl's raw Ed25519 check (``crypto_sign_open``, the binding under ``VerifyKey.verify``, which
``verify_chain`` calls too) over the same M signatures in the same run. ``verify_chain``
parses, checks signatures and walks the chain on a pool of T threads (T = its own pool size,
``min(4, CPUs)``), 256 links per job, so the raw peer runs on T threads too, in chunks of 256
(goal: verify_chain ≥ 0.8× that); and ``verify_chain`` held to one thread (its pool swapped
for an inline executor) is compared with the raw peer on one thread. Then the ``nerve audit
verify`` CLI, in a subprocess, on a workspace whose log holds those links (wall time
including interpreter start), and on one holding only the first checkpoint (the fixed cost).
The verify
measurements run ``--rounds`` times (2; 1 with ``--quick``), interleaved; each keeps its best
rate, and the ratio within each round is reported too. If the ratio misses the goal, a
cProfile of ``verify_chain`` goes to stderr and into the result.

``nerve ask`` latency is measured by ``bench/ask_bench.py``. Progress goes to stderr; the last
stdout line is ``RESULT {json}``. The exit status is 1 when an internal check fails
(``batch_matches_one_by_one``, ``replay_decisions_match``,
``attender_highlights_match_bare``, ``chain_verifies``, ``replay_chain_verifies``,
``cli_verifies``).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import importlib
import io
import json
import os
import pstats
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from nacl.bindings import crypto_sign_open
from nacl.signing import VerifyKey

from nerve.attention import audit
from nerve.attention.detector import Highlight
from nerve.attention.gate import Decision, Gate, UserContext
from nerve.attention.pipeline import Attention
from nerve.attention.service import DECISION, LINK, Attender, Obs, recompute, replay
from nerve.attention.settings import AttentionConfig, ContextTracker, parse_attention
from nerve.canonical import det_cbor_decode
from nerve.chain import DOMAIN, ChainWriter, Keyring, verify_chain
from nerve.clock import HybridClock
from nerve.events import NERVE_SOURCE, Trust, source_name
from nerve.log.drafts import Draft
from nerve.log.fields import EventFields
from nerve.log.store import EventLog
from nerve.query import connect

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, workdir

QUICK = {"observations": 50_000, "links": 5_000}
DEFAULTS = {"observations": 1_000_000, "links": 100_000}
LOG_BATCH = 100_000
ATTEND_CHUNK = 5_000  # what replay hands the attender at a time
LINK_BATCH = 10_000
CHECKPOINT_EVERY = 64
GOAL_RATIO = 0.8
PROFILE_LINKS = 20_000
WARM_OBSERVATIONS = 2_000
SEED = 20_240_601
KEY_SEED = bytes(range(32))
NONCE = bytes(16)
WALL_BASE = 1_750_000_000_000_000_000
NERVE_CLI = Path(sys.executable).with_name("nerve")

# The stream: background sources by weight, background trust by weight, and bursts.
BACKGROUND = {2: 30, 3: 20, 7: 15, 4: 10, 0: 10, 5: 8, 1: 5, 6: 2}
TRUST_WEIGHTS = {Trust.ATTESTED: 5, Trust.FIRST_PARTY: 85, Trust.INFERRED: 7, Trust.UNTRUSTED: 3}
BURST_RATE = 0.01  # chance that a burst starts instead of a background observation
STORM_SOURCES = (0, 1, 5, 6, 7)  # file changes, focus, shell, accessibility, network
BACKGROUND_GAP_NS = 500_000_000
STORM_GAP_NS = 20_000_000
LOW_TRUST_GAP_NS = 200_000_000
NEWCOMER_GAP_NS = 300_000_000
VENDOR_FIRST = 1024


# -- the stream ----------------------------------------------------------------------------


@dataclass
class Stream:
    """Observations as parallel columns, generated once, outside every timing."""

    sources: list[int] = field(default_factory=list)
    trusts: list[int] = field(default_factory=list)
    times: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sources)

    def add(self, source: int, trust: int, t_ns: int) -> None:
        self.sources.append(source)
        self.trusts.append(int(trust))
        self.times.append(t_ns)

    def lines(self, start: int = 0, stop: int | None = None) -> list[str]:
        """Human lines as a sense would write them (``shell event 12``)."""
        stop = len(self) if stop is None else stop
        return [f"{source_name(self.sources[i])} event {i}" for i in range(start, stop)]


class _Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.stream = Stream()
        self.t = WALL_BASE
        self.vendor = VENDOR_FIRST
        self.bg_sources, self.bg_weights = list(BACKGROUND), list(BACKGROUND.values())
        self.trusts, self.trust_weights = list(TRUST_WEIGHTS), list(TRUST_WEIGHTS.values())

    def emit(self, source: int, trust: int, mean_gap_ns: int) -> None:
        self.t += 1 + int(self.rng.expovariate(1 / mean_gap_ns))
        self.stream.add(source, trust, self.t)

    def background(self) -> None:
        rng = self.rng
        source = rng.choices(self.bg_sources, self.bg_weights)[0]
        self.emit(source, rng.choices(self.trusts, self.trust_weights)[0], BACKGROUND_GAP_NS)

    def storm(self) -> None:
        """One source floods (a build touching files, a burst of shell commands, ...)."""
        source = self.rng.choice(STORM_SOURCES)
        for _ in range(self.rng.randint(40, 160)):
            trust = Trust.FIRST_PARTY if self.rng.random() < 0.9 else Trust.INFERRED
            self.emit(source, trust, STORM_GAP_NS)

    def low_trust(self) -> None:
        """A run of inferred or untrusted observations from the usual sources."""
        for _ in range(self.rng.randint(60, 200)):
            source = self.rng.choices(self.bg_sources, self.bg_weights)[0]
            self.emit(source, self.rng.choice((Trust.INFERRED, Trust.UNTRUSTED)), LOW_TRUST_GAP_NS)

    def newcomer(self) -> None:
        """A source never seen before (a new vendor sense) says a few things."""
        self.vendor += 1
        for _ in range(self.rng.randint(1, 5)):
            self.emit(self.vendor, Trust.UNTRUSTED, NEWCOMER_GAP_NS)

    def run(self, n: int) -> Stream:
        bursts = (self.storm, self.storm, self.low_trust, self.newcomer)
        while len(self.stream) < n:
            if self.rng.random() < BURST_RATE:
                self.rng.choice(bursts)()
            else:
                self.background()
        s = self.stream
        return Stream(s.sources[:n], s.trusts[:n], s.times[:n])


def make_stream(n: int, seed: int = SEED) -> Stream:
    return _Generator(seed).run(n)


def event_ids(n: int, seed: int = SEED) -> list[bytes]:
    rng = random.Random(seed + 1)
    return [rng.randbytes(32) for _ in range(n)]


def contexts(stream: Stream, settings: AttentionConfig) -> list[UserContext]:
    """The user context at each observation, as the Attender's tracker derives it."""
    tracker, seen = ContextTracker(settings.context), {}
    out = []
    for source, t in zip(stream.sources, stream.times, strict=True):
        ctx = tracker.update(source, t)
        out.append(seen.setdefault(ctx, ctx))
    return out


# -- pipeline paths ------------------------------------------------------------------------


@dataclass
class Tally:
    """What a path decided: highlights by probe, decisions by outcome."""

    probes: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    drafts: int = 0
    links: int = 0

    def count(self, hl: Highlight, dec: Decision) -> None:
        self.probes[hl.probe] += 1
        self.outcomes[dec.outcome] += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "highlights": sum(self.probes.values()),
            "by_probe": dict(sorted(self.probes.items())),
            "decisions": sum(self.outcomes.values()),
            "surfaced": self.outcomes["surface"],
            "by_outcome": dict(sorted(self.outcomes.items())),
            "drafts": self.drafts,
            "links": self.links,
        }


def bare_batches(
    stream: Stream, ids: Sequence[bytes], ctxs: Sequence[UserContext], settings: AttentionConfig
) -> list[tuple[Highlight, Decision]]:
    """(a) ``Attention.observe_batch`` over replay-sized chunks; every (highlight, decision)."""
    att, fired = Attention(settings.pipeline()), []
    cols = stream.sources, stream.trusts, stream.times
    for start in range(0, len(stream), ATTEND_CHUNK):
        cut = slice(start, start + ATTEND_CHUNK)
        got = att.observe_batch(ids[cut], *(c[cut] for c in cols), ctxs[cut].__getitem__)
        fired += [(hl, dec) for _, hl, dec in got]
    return fired


def bare_loop(
    stream: Stream, ids: Sequence[bytes], ctxs: Sequence[UserContext], settings: AttentionConfig
) -> list[tuple[Highlight, Decision]]:
    """(a0) ``Attention.observe`` per observation; returns every (highlight, decision)."""
    att, fired = Attention(settings.pipeline()), []
    observe, extend = att.observe, fired.extend
    cols = zip(stream.sources, stream.trusts, stream.times, strict=True)
    for i, (source, trust, t) in enumerate(cols):
        extend(observe(ids[i], source, trust, t, ctxs[i]))
    return fired


def observations(stream: Stream, ids: Sequence[bytes], named: bool = False) -> list[Obs]:
    """The stream as the Attender takes it; ``named``: each names its sense, as in the log
    (so each also feeds its sense's ``per_min`` value probe)."""
    lines = stream.lines()
    cols = zip(ids, stream.sources, stream.trusts, stream.times, lines, strict=True)
    if named:
        return [Obs(i, s, tr, t, 0, line, source_name(s)) for i, s, tr, t, line in cols]
    return [Obs(i, s, tr, t, 0, line) for i, s, tr, t, line in cols]


def attender_path(obs: Sequence[Obs], settings: AttentionConfig) -> Tally:
    """(b) The Attender with a signing keyring, fed in replay-sized chunks; drafts counted."""
    att, tally = Attender(settings, Keyring.ephemeral(KEY_SEED)), Tally()
    for start in range(0, len(obs), ATTEND_CHUNK):
        att.observe(obs[start : start + ATTEND_CHUNK])
        tally.drafts += len(att.take())
    for d in att.decisions:
        tally.probes[d["probe"]] += 1
        tally.outcomes[d["outcome"]] += 1
    tally.links = att.chain.size if att.chain is not None else 0
    return tally


class _SetWall:
    """A wall clock the builder sets before each batch, so stamps follow the stream."""

    def __init__(self) -> None:
        self.now = WALL_BASE

    def __call__(self) -> int:
        return self.now


def open_log(root: Path, wall: _SetWall | None = None) -> EventLog:
    clock = HybridClock(wall) if wall is not None else None
    return EventLog(root, node="bench", durability="os", clock=clock)


def build_log(root: Path, stream: Stream) -> None:
    """The observations, appended in batches of 100k; each batch stamped at its first time."""
    wall = _SetWall()
    with open_log(root, wall) as log:
        for start in range(0, len(stream), LOG_BATCH):
            stop = min(start + LOG_BATCH, len(stream))
            sources = stream.sources[start:stop]
            wall.now = stream.times[start]
            log.append_columns(
                EventFields(
                    kind=["observation"] * len(sources),
                    subject=[source_name(s) for s in sources],
                    source=sources,
                    trust=stream.trusts[start:stop],
                    valid_time_ns=[None] * len(sources),
                    payload=[b'{"i":%d}' % i for i in range(start, stop)],
                    line=stream.lines(start, stop),
                )
            )
        log.seal()


def replay_path(root: Path, keys: Path, settings: AttentionConfig) -> dict[str, int]:
    """(c) ``replay`` over the log: read, attend, seal and append, as ``attend --replay``."""
    with open_log(root) as log:
        return replay(log, settings, keys).to_json()


def recorded_outcomes(root: Path) -> dict[str, int]:
    """Decisions the replay recorded in the log, by outcome."""
    rows = connect(root).execute(
        f"SELECT data->>'outcome', count(*) FROM events WHERE kind = '{DECISION}' GROUP BY 1"
    )
    return {str(outcome): int(n) for outcome, n in sorted(rows.fetchall())}


# -- the chain -----------------------------------------------------------------------------


def fallback_pairs() -> list[tuple[Highlight, Decision]]:
    """One made-up decision, for a stream so short that nothing fired."""
    hl = Highlight("salience", 900, 200, 50, 800, 0)
    return [(hl, Gate().decide(hl, UserContext(), WALL_BASE))]


def build_chain(
    m: int, pairs: Sequence[tuple[Highlight, Decision]], ids: Sequence[bytes]
) -> list[bytes]:
    """``m`` links: genesis, decisions cycling through ``pairs``, a checkpoint every 64."""
    keyring = Keyring.ephemeral(KEY_SEED)
    writer = ChainWriter.create(keyring, nonce=NONCE, checkpoint_every=CHECKPOINT_EVERY)
    i = 0
    while writer.size < m:
        hl, dec = pairs[i % len(pairs)]
        writer.append_decision(ids[i % len(ids)], Trust.FIRST_PARTY, hl, dec, WALL_BASE + i)
        i += 1
    return list(writer.links[:m])


def signed_messages(links: Sequence[bytes]) -> list[bytes]:
    """PyNaCl's signed-message form (``sig + DOMAIN + core``) of every link's signature."""
    out = []
    for raw in links:
        env = det_cbor_decode(raw)
        out.append(env["sig"] + DOMAIN + env["core"])
    return out


def raw_verify(key: bytes, messages: Sequence[bytes]) -> int:
    """The raw peer on one thread: every signature, one after another, through the same
    PyNaCl binding ``verify_chain`` calls (``crypto_sign_open``, what ``VerifyKey.verify``
    calls after its checks), the key checked once as ``VerifyKey`` checks it."""
    VerifyKey(key)
    for sm in messages:
        crypto_sign_open(sm, key)
    return len(messages)


RAW_CHUNK = 256  # verify_chain hands its pool signatures in chunks of this size too


def raw_verify_threads(pool: ThreadPoolExecutor, key: bytes, messages: Sequence[bytes]) -> int:
    """The raw peer on a pool of threads (Ed25519 in C releases the GIL), chunk by chunk."""
    chunks = [messages[i : i + RAW_CHUNK] for i in range(0, len(messages), RAW_CHUNK)]
    return sum(pool.map(partial(raw_verify, key), chunks))


_VERIFY = importlib.import_module("nerve.chain.verify")


def verify_threads() -> int:
    """How many threads ``verify_chain`` checks signatures on (its pool, made on first use)."""
    workers = _VERIFY._pool()._max_workers
    assert isinstance(workers, int) and workers >= 1
    return workers


class _Inline(Executor):
    """An executor that runs each job at once, on the calling thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


@contextlib.contextmanager
def single_threaded_verify() -> Iterator[None]:
    """``verify_chain`` with its signature pool swapped for an inline executor: one thread."""
    saved = _VERIFY._pool()
    _VERIFY._POOL = _Inline()
    try:
        yield
    finally:
        _VERIFY._POOL = saved


def chain_verify_one_thread(links: Sequence[bytes], key: bytes) -> Any:
    with single_threaded_verify():
        return chain_verify(links, key)


def chain_verify(links: Sequence[bytes], key: bytes) -> Any:
    report = verify_chain(links, pinned_key=key)
    if not report.ok:
        raise SystemExit(f"bench chain does not verify: {report.to_json()}")
    return report


def audit_verify(links: list[bytes], key: bytes, trust_dir: Path) -> Any:
    verdict = audit.verify(
        links, origin="bench", key=key, key_from="--key", trust_dir=trust_dir, record=False
    )
    if not verdict.report.ok:
        raise SystemExit(f"bench chain does not verify: {verdict.to_json()}")
    return verdict


def link_drafts(links: Sequence[bytes], first_seq: int = 0) -> list[Draft]:
    """Links as the Attender's sink stores them (``chain.link`` events)."""
    return [
        Draft(LINK, NERVE_SOURCE, Trust.FIRST_PARTY, f"link {first_seq + i}", raw, "chain")
        for i, raw in enumerate(links)
    ]


def link_workspace(ws: Path, links: Sequence[bytes]) -> Path:
    """A workspace (default settings) whose log holds ``links`` as chain.link events."""
    with open_log(ws / "data" / "log") as log:
        for start in range(0, len(links), LINK_BATCH):
            log.append_drafts(link_drafts(links[start : start + LINK_BATCH], start))
        log.seal()
    return ws


def cli_verify(ws: Path, state: Path) -> tuple[float, dict[str, Any]]:
    """Wall time of ``nerve audit verify --json --no-record`` on ``ws``, and its output."""
    env = {**os.environ, "XDG_STATE_HOME": str(state), "NO_COLOR": "1"}
    argv = [str(NERVE_CLI), "-w", str(ws), "audit", "verify", "--json", "--no-record"]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"nerve audit verify exited {done.returncode}: {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)


# -- the run -------------------------------------------------------------------------------


def timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


@dataclass
class Bench:
    """One run: a temp folder, the sizes, and every figure measured."""

    work: Path
    observations: int
    links: int
    rounds: int = 1
    cli: bool = True
    err: TextIO = sys.stderr
    rates: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    tallies: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    profile: list[dict[str, Any]] = field(default_factory=list)
    load: list[float] = field(default_factory=list)  # 1-minute load average, start and end
    last: dict[str, float] = field(default_factory=dict)  # the latest rate of each key
    round_ratios: list[float] = field(default_factory=list)  # verify_chain ÷ raw, per round
    threads: int = 1  # verify_chain's signature threads; the raw peer gets as many

    def say(self, text: str) -> None:
        print(f"[bench] {text}", file=self.err, flush=True)

    def keep(self, key: str, count: int, fn: Callable[..., Any], *args: Any) -> Any:
        """Time one call; keep the best ``count / seconds`` under ``key``; return its result."""
        seconds, out = timed(fn, *args)
        rate = count / seconds
        if rate > self.rates.get(key, 0.0):
            self.rates[key], self.seconds[key] = rate, seconds
        self.last[key] = rate
        self.say(f"{key}: {count:,} in {seconds:.2f} s = {rate:,.0f}/s")
        return out

    def ratio(self, key: str, peer: str = "verify.raw_threads") -> float | None:
        ours, raw = self.rates.get(key), self.rates.get(peer)
        return ours / raw if ours and raw else None


def warm_up(work: Path, settings: AttentionConfig) -> None:
    """Every path once on a small stream, so no timed run pays for imports or first calls."""
    stream = make_stream(WARM_OBSERVATIONS, SEED + 7)
    ids = event_ids(len(stream), SEED + 7)
    bare_loop(stream, ids, contexts(stream, settings), settings)
    bare_batches(stream, ids, contexts(stream, settings), settings)
    attender_path(observations(stream, ids), settings)
    build_log(work / "warm" / "log", stream)
    replay_path(work / "warm" / "log", work / "warm" / "keys", settings)
    links = build_chain(200, fallback_pairs(), ids)
    key = Keyring.ephemeral(KEY_SEED).public_key()
    raw_verify(key, signed_messages(links))
    chain_verify(links, key)
    chain_verify_one_thread(links, key)
    audit_verify(links, key, work / "warm" / "trust")
    shutil.rmtree(work / "warm")


def run_pipeline(bench: Bench, settings: AttentionConfig) -> list[tuple[Highlight, Decision]]:
    n = bench.observations
    bench.say(f"generating {n:,} observations")
    stream, ids = make_stream(n), event_ids(n)
    span_h = (stream.times[-1] - stream.times[0]) / 3.6e12
    bench.notes.append(
        f"stream spans {span_h:,.1f} h of HLC time, {len(set(stream.sources))} sources"
    )
    ctxs = contexts(stream, settings)
    fired = bench.keep("pipeline.bare", n, bare_batches, stream, ids, ctxs, settings)
    one_by_one = bench.keep("pipeline.bare_scalar", n, bare_loop, stream, ids, ctxs, settings)
    bench.checks["batch_matches_one_by_one"] = fired == one_by_one
    bare = Tally()
    for hl, dec in fired:
        bare.count(hl, dec)
    bench.tallies["bare"] = bare.to_json()
    del ctxs
    obs = observations(stream, ids)
    full = bench.keep("pipeline.attender", n, attender_path, obs, settings)
    bench.tallies["attender"] = full.to_json()
    obs = observations(stream, ids, named=True)
    named = bench.keep("pipeline.attender_named", n, attender_path, obs, settings)
    bench.tallies["attender_named"] = named.to_json()
    del obs
    run_replay(bench, stream, settings)
    return fired


def run_replay(bench: Bench, stream: Stream, settings: AttentionConfig) -> None:
    root, n = bench.work / "replay" / "data" / "log", len(stream)
    bench.say(f"building a log of {n:,} observations (append_columns, batches of {LOG_BATCH:,})")
    bench.keep("log.build", n, build_log, root, stream)
    result = bench.keep("pipeline.replay", n, replay_path, root, bench.work / "keys", settings)
    outcomes = recorded_outcomes(root)
    bench.tallies["replay"] = {
        **result,
        "by_outcome": outcomes,
        "surfaced": outcomes.get("surface", 0),
    }
    att = bench.tallies["attender"]
    recomputed = recompute(root, settings)  # what `nerve attend --replay --recompute` runs
    bench.checks["replay_decisions_match"] = (
        recomputed.ok and recomputed.recorded == result["decisions"]
    )
    bench.checks["attender_highlights_match_bare"] = (
        att["highlights"] == bench.tallies["bare"]["highlights"]
    )
    if bench.cli:
        seconds, out = cli_verify(bench.work / "replay", bench.work / "state")
        bench.seconds["cli.verify_replay_log"] = seconds
        bench.checks["replay_chain_verifies"] = bool(out["ok"])
        bench.tallies["replay"]["links"] = out["links"]
        bench.notes.append(
            f"nerve audit verify on the replay's workspace ({n:,} observations, "
            f"{out['links']:,} links): {seconds:.2f} s wall, ok={out['ok']}"
        )


def run_audit(bench: Bench, pairs: Sequence[tuple[Highlight, Decision]]) -> list[bytes]:
    m = bench.links
    ids = event_ids(min(m, 100_000), SEED + 2)
    bench.say(f"sealing a chain of {m:,} links")
    links = bench.keep("chain.seal", m, build_chain, m, pairs or fallback_pairs(), ids)
    key = Keyring.ephemeral(KEY_SEED).public_key()
    messages = signed_messages(links)
    trust_dir = bench.work / "trust"
    bench.threads = verify_threads()
    with ThreadPoolExecutor(bench.threads, thread_name_prefix="raw-peer") as pool:
        raw_verify_threads(pool, key, messages[: RAW_CHUNK * bench.threads])  # start the threads
        for r in range(bench.rounds):
            bench.say(f"verify round {r + 1} of {bench.rounds}, {bench.threads} thread(s)")
            bench.keep("verify.raw_threads", m, raw_verify_threads, pool, key, messages)
            report = bench.keep("verify.verify_chain", m, chain_verify, links, key)
            bench.keep("verify.raw_one_thread", m, raw_verify, key, messages)
            single = bench.keep("verify.verify_chain_one_thread", m, chain_verify_one_thread,
                                links, key)  # fmt: skip
            verdict = bench.keep("verify.audit", m, audit_verify, links, key, trust_dir)
            bench.round_ratios.append(
                bench.last["verify.verify_chain"] / bench.last["verify.raw_threads"]
            )
    bench.checks["chain_verifies"] = (
        report.ok and single.ok and verdict.report.ok and report.links == single.links == m
    )
    return links


def run_cli(bench: Bench, links: Sequence[bytes]) -> None:
    """``nerve audit verify`` on the M-link workspace, and on one holding the first checkpoint."""
    m, small = len(links), min(len(links), CHECKPOINT_EVERY + 1)
    bench.say(f"writing the {m:,} links into a workspace log for the CLI")
    full_ws = link_workspace(bench.work / "ws-links", links)
    small_ws = link_workspace(bench.work / "ws-small", links[:small])
    state = bench.work / "state"
    seconds, out = cli_verify(small_ws, state)
    bench.seconds["cli.verify_startup"] = seconds
    seconds, out = cli_verify(full_ws, state)
    bench.seconds["cli.verify"] = seconds
    bench.rates["cli.verify"] = m / seconds
    bench.checks["cli_verifies"] = bool(out["ok"]) and out["links"] == m
    net = seconds - bench.seconds["cli.verify_startup"]
    if net > 0:
        bench.rates["cli.verify_net"] = (m - small) / net
    startup = bench.seconds["cli.verify_startup"]
    bench.say(f"cli: {m:,} links in {seconds:.2f} s; {small} links in {startup:.2f} s")


def run_profile(bench: Bench, links: Sequence[bytes]) -> None:
    """cProfile of ``verify_chain`` over a prefix of the chain; top entries by own time."""
    key = Keyring.ephemeral(KEY_SEED).public_key()
    sample = links[: min(PROFILE_LINKS, len(links) // 2)]
    prof = cProfile.Profile()
    prof.runcall(verify_chain, sample, pinned_key=key)
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text).sort_stats("tottime")
    stats.print_stats(18)
    stats.sort_stats("cumulative").print_stats(18)
    print(
        f"--- profile: verify_chain over {len(sample):,} links ---\n{text.getvalue()}",
        file=bench.err,
    )
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    for (path, line, name), (_cc, calls, tottime, cumtime, _) in rows[:15]:
        where = f"{Path(path).name}:{line}({name})" if line else name
        bench.profile.append(
            {
                "function": where,
                "calls": calls,
                "tottime_s": round(tottime, 3),
                "cumtime_s": round(cumtime, 3),
            }
        )


def run(bench: Bench) -> dict[str, Any]:
    settings = parse_attention({})
    bench.load.append(os.getloadavg()[0])
    warm_up(bench.work, settings)
    fired = run_pipeline(bench, settings)
    links = run_audit(bench, fired[:4096])
    if bench.cli:
        run_cli(bench, links)
    ratio = bench.ratio("verify.verify_chain", "verify.raw_threads")
    if ratio is not None and ratio < GOAL_RATIO:
        run_profile(bench, links)
    bench.load.append(os.getloadavg()[0])
    return summary(bench)


# -- output --------------------------------------------------------------------------------

# (label, rate key, unit)
LAYOUT: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    (
        "pipeline",
        (
            ("(a) Attention.observe_batch, chunks of 5,000", "pipeline.bare", "obs/s"),
            ("(a0) Attention.observe, one at a time", "pipeline.bare_scalar", "obs/s"),
            ("(b) Attender: context + pipeline + seal", "pipeline.attender", "obs/s"),
            ("(b1) the same, each naming its sense (per_min)", "pipeline.attender_named", "obs/s"),
            ("(c) replay over the log (read+attend+append)", "pipeline.replay", "obs/s"),
            ("    building that log (append_columns)", "log.build", "obs/s"),
        ),
    ),
    (
        "audit",
        (
            ("ChainWriter sealing (sign)", "chain.seal", "links/s"),
            ("raw Ed25519 crypto_sign_open, T threads", "verify.raw_threads", "sigs/s"),
            ("verify_chain(pinned_key=...), T threads", "verify.verify_chain", "links/s"),
            ("audit.verify(record=False)", "verify.audit", "links/s"),
            ("raw Ed25519 crypto_sign_open, 1 thread", "verify.raw_one_thread", "sigs/s"),
            ("verify_chain, 1 thread", "verify.verify_chain_one_thread", "links/s"),
            ("nerve audit verify (CLI, wall)", "cli.verify", "links/s"),
            ("nerve audit verify (CLI, minus startup)", "cli.verify_net", "links/s"),
        ),
    ),
)


# The peer each row is divided by in the table's last column.
PEER_OF = {
    "verify.verify_chain": "verify.raw_threads",
    "verify.audit": "verify.raw_threads",
    "cli.verify": "verify.raw_threads",
    "cli.verify_net": "verify.raw_threads",
    "verify.verify_chain_one_thread": "verify.raw_one_thread",
}


@dataclass(frozen=True)
class Ratio:
    """``ours ÷ peer`` from the best rates, with what the peer is, in words."""

    key: str
    label: str
    ours: str
    peer: str
    goal: float | None = None


RATIOS = (
    Ratio("verify_chain", "verify_chain ÷ raw Ed25519, both on T threads",
          "verify.verify_chain", "verify.raw_threads", GOAL_RATIO),
    Ratio("verify_chain_one_thread", "verify_chain ÷ raw Ed25519, both on 1 thread",
          "verify.verify_chain_one_thread", "verify.raw_one_thread"),
    Ratio("audit", "audit.verify ÷ raw Ed25519 on T threads", "verify.audit",
          "verify.raw_threads"),
    Ratio("cli", "nerve audit verify (CLI, wall) ÷ raw Ed25519 on T threads", "cli.verify",
          "verify.raw_threads"),
    Ratio("cli_net", "the CLI minus its start-up ÷ raw Ed25519 on T threads", "cli.verify_net",
          "verify.raw_threads"),
    Ratio("verify_chain_vs_one_raw_thread",
          "verify_chain on T threads ÷ raw Ed25519 on 1 thread (unequal threads; as reported "
          "before)", "verify.verify_chain", "verify.raw_one_thread"),
)  # fmt: skip
CHECKS = (
    "batch_matches_one_by_one",
    "replay_decisions_match",
    "attender_highlights_match_bare",
    "replay_chain_verifies",
    "chain_verifies",
    "cli_verifies",
)


def failed_checks(checks: dict[str, Any]) -> list[str]:
    """The internal checks that ran and did not hold (a failed one makes the exit status 1)."""
    return [name for name in CHECKS if name in checks and checks[name] is not True]


def _table_row(bench: Bench, label: str, key: str, unit: str) -> str:
    peer = PEER_OF.get(key)
    ratio = bench.ratio(key, peer) if peer else None
    shown = "-" if ratio is None else f"{ratio:.2f}x"
    seconds = bench.seconds.get(key)
    secs = "-" if seconds is None else f"{seconds:.2f}"
    return f"  {label:<46} {bench.rates[key]:>12,.0f} {unit:<5} {secs:>9} {shown:>7}"


def _ratio_lines(bench: Bench) -> list[str]:
    lines = [f"ratios (best rates, one run; T = {bench.threads} signature threads):"]
    for r in RATIOS:
        value = bench.ratio(r.ours, r.peer)
        if value is None:
            continue
        goal = (
            "" if r.goal is None else f" (goal ≥ {r.goal}x: {'yes' if value >= r.goal else 'NO'})"
        )
        lines.append(f"  {r.label}: {value:.2f}x{goal}")
    if bench.round_ratios:
        rounds = ", ".join(f"{x:.2f}x" for x in bench.round_ratios)
        lines.append(f"  verify_chain ÷ raw on T threads within each round: {rounds}")
    return lines


def render(bench: Bench, out: TextIO) -> None:
    print(
        f"nerve attention bench: {bench.observations:,} observations, {bench.links:,} links",
        file=out,
    )
    print(f"  {'measurement':<46} {'rate':>18} {'seconds':>9} {'÷ peer':>7}", file=out)
    for section, rows in LAYOUT:
        print(section, file=out)
        for label, key, unit in rows:
            if key in bench.rates:
                print(_table_row(bench, label.replace("T threads", f"{bench.threads} threads"),
                                 key, unit), file=out)  # fmt: skip
    print("\n".join(_ratio_lines(bench)), file=out)
    for name, tally in bench.tallies.items():
        print(f"decided ({name}): {json.dumps(tally, sort_keys=True)}", file=out)
    for name, value in bench.checks.items():
        print(f"check {name}: {value}", file=out)
    for note in bench.notes:
        print(f"note: {note}", file=out)
    loads = " -> ".join(f"{x:.2f}" for x in bench.load)
    print(f"note: 1-minute load average {loads} on {os.cpu_count()} CPUs", file=out)
    print("note: `nerve ask` latency is measured by bench/ask_bench.py", file=out)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def summary(bench: Bench) -> dict[str, Any]:
    main_ratio = bench.ratio("verify.verify_chain", "verify.raw_threads")
    return {
        "observations": bench.observations,
        "links": bench.links,
        "rounds": bench.rounds,
        "threads": bench.threads,
        "rates": {k: round(v) for k, v in bench.rates.items()},
        "seconds": {k: round(v, 3) for k, v in bench.seconds.items()},
        "ratios": {
            r.key: {
                "value": _rounded(bench.ratio(r.ours, r.peer)),
                "ours": r.ours,
                "peer": r.peer,
                "label": r.label,
            }
            for r in RATIOS
        },
        "goal": {
            "name": "verify_chain links/s ÷ raw Ed25519 verifies/s, both on T threads",
            "peer": "verify.raw_threads",
            "target": GOAL_RATIO,
            "value": _rounded(main_ratio),
            "met": (main_ratio or 0) >= GOAL_RATIO,
            "by_round": [round(r, 3) for r in bench.round_ratios],
        },
        "decided": bench.tallies,
        "checks": bench.checks,
        "failed_checks": failed_checks(bench.checks),
        "profile_verify_chain": bench.profile,
        "notes": bench.notes,
        "load_average_1m": [round(x, 2) for x in bench.load],
        "cpus": os.cpu_count(),
        "ask_latency": "see bench/ask_bench.py",
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--observations", type=int, help="observations (default 1,000,000)")
    parser.add_argument("--links", type=int, help="chain links to verify (default 100,000)")
    parser.add_argument("--quick", action="store_true", help="50k observations, 5k links")
    parser.add_argument("--rounds", type=int, help="verify rounds, best kept (1 quick, else 2)")
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess runs")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else DEFAULTS
    args.observations = args.observations or sizes["observations"]
    args.links = args.links or sizes["links"]
    args.rounds = args.rounds or (1 if args.quick else 2)
    return args


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    with workdir("nerve-attention-bench-") as work:
        bench = Bench(work, args.observations, args.links, args.rounds, cli=not args.no_cli)
        result = run(bench)
    render(bench, out)
    return finish(result, out)


if __name__ == "__main__":
    sys.exit(main())
