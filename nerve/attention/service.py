"""Attention over the log: every observation through observer → detector → gate → chain.

:class:`Attender` is the deterministic core: fed observations in HLC order, it produces
``attention.highlight``, ``attention.decision`` and ``chain.link`` events (and, now and
then, an ``attention.snapshot`` holding its state and cursor). The daemon runs it on each
committed observation (:class:`AttentionService`); ``nerve attend --replay`` runs the same
code over the log to catch it up (:func:`replay`); ``--recompute`` recomputes every
decision from scratch and compares it with what was recorded (:func:`recompute`).

Catching up is idempotent: the state is restored from the newest snapshot, observations
after its cursor are replayed, and a decision already recorded for the same source event and
probe advances the state without being sealed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from nerve.attention.cause import Witness, facts_of, is_estimate, payload_json
from nerve.attention.detector import Highlight
from nerve.attention.gate import Decision, UserContext
from nerve.attention.kinds import DECISION, HIGHLIGHT, LINK, MUTE, SNAPSHOT
from nerve.attention.needs import AttentionNeeds
from nerve.attention.notify import Notices, Notifier, mute_of
from nerve.attention.pipeline import BATCH_MIN, Attention
from nerve.attention.settings import AttentionConfig, ContextTracker
from nerve.attention.values import readings_of
from nerve.canonical import det_cbor_decode
from nerve.chain import ChainWriter, Keyring
from nerve.clock import HLC_ZERO, Hlc
from nerve.contract import WorkflowTrigger
from nerve.errors import ChainError, NerveError, report
from nerve.events import NERVE_SOURCE, SourceClass, Trust
from nerve.log.drafts import Draft
from nerve.log.segments import of_kind
from nerve.log.store import EventLog

CHUNK = 5_000
_BATCH_FIELDS = ("id", "source", "trust", "physical_ns")
DECISION_FIELDS = ("outcome", "probe", "value_milli", "cost_milli", "charged_uj",
                   "budget_before_uj", "budget_after_uj", "source_event")  # fmt: skip


@dataclass(slots=True)
class Obs:
    """One observation as attention sees it: ``subject`` names its sense and ``readings``
    are the payload's ``readings`` (see :func:`nerve.attention.values.readings_of`).

    Attention only reads it. Not frozen: a frozen dataclass sets each field through
    ``object.__setattr__``, and a replay makes one of these for every observation of the log."""

    id: bytes
    source: int
    trust: int
    physical_ns: int
    logical: int
    line: str
    subject: str = ""
    readings: Mapping[str, int] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)  # for causes: nerve.attention.cause


def readings_from_bytes(payload: bytes | None) -> dict[str, int]:
    """The readings of a stored payload; ``{}`` when it is not a JSON object holding them."""
    return readings_and_facts(payload)[0]


def readings_and_facts(payload: bytes | None) -> tuple[dict[str, int], dict[str, Any]]:
    """The readings of a stored payload and the facts a cause may name (both ``{}`` when
    it is not a JSON object holding them)."""
    value = payload_json(payload)
    if value is None:
        return {}, {}
    try:
        readings = readings_of(value) if "readings" in value else {}
    except ValueError:
        readings = {}
    return readings, facts_of(value)


def link_summary(raw: bytes) -> tuple[int, str]:
    """(seq, kind) of a sealed link."""
    core = det_cbor_decode(det_cbor_decode(raw)["core"])
    return int(core["seq"]), str(core["kind"])


def _salience(kind: str, subject: str, line: str, payload: Any) -> Draft:
    return Draft.of(
        kind,
        source=int(SourceClass.SALIENCE),
        trust=Trust.FIRST_PARTY,
        line=line,
        payload=payload,
        subject=subject,
    )


def decision_payload(
    obs: Obs,
    hl: Highlight,
    dec: Decision,
    ctx: UserContext,
    chain_seq: int | None,
    cause: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A decision as stored; ``cause`` holds the facts its words are made of (not compared
    by ``attend --recompute``: see :mod:`nerve.attention.cause`)."""
    return {
        "outcome": dec.outcome,
        "probe": hl.probe,
        "value_milli": dec.value_milli,
        "cost_milli": dec.cost_milli,
        "charged_uj": dec.charged_uj,
        "budget_before_uj": dec.budget_before_uj,
        "budget_after_uj": dec.budget_after_uj,
        "energy": dec.energy.to_json(),
        "source_event": obs.id.hex(),
        "source_line": obs.line,
        "trust": obs.trust,
        "chain_seq": chain_seq,
        "engagement_milli": ctx.engagement_milli,
        "modality": ctx.active_modality,
        "highlight": _highlight_json(hl),
        **({"cause": dict(cause)} if cause else {}),
    }


def _highlight_json(hl: Highlight) -> dict[str, Any]:
    return {
        "probe": hl.probe,
        "value_milli": hl.value_milli,
        "baseline_milli": hl.baseline_milli,
        "sigma_milli": hl.sigma_milli,
        "score_milli": hl.score_milli,
        "seq": hl.seq,
        **({"kind": hl.kind, "direction": hl.direction} if hl.kind else {}),
        **({"rate_per_h": hl.rate_per_h, "eta_s": hl.eta_s} if hl.kind == "drift" else {}),
        **({"held": dict(hl.held)} if hl.held else {}),
    }


class Attender:
    """The deterministic core. ``keyring=None`` computes decisions without sealing them."""

    def __init__(
        self, settings: AttentionConfig, keyring: Keyring | None, links: Sequence[bytes] = ()
    ) -> None:
        self.settings = settings
        self.pipeline = Attention(settings.pipeline(), settings.rules)
        self.tracker = ContextTracker(settings.context)
        self.cursor: Hlc = HLC_ZERO
        self.observed = 0
        self.decisions: list[dict[str, Any]] = []
        self.witness = Witness()  # facts for each decision's cause
        # what the daemon adds to a decision before it is stored (its delivery); not compared
        self.note: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self._out: list[Draft] = []
        self.chain: ChainWriter | None = None
        if keyring is not None:
            every = settings.chain.checkpoint_every
            self.chain = (
                ChainWriter.resume(links, keyring, sink=self._sink, checkpoint_every=every)
                if links
                else ChainWriter.create(keyring, sink=self._sink, checkpoint_every=every)
            )

    def _sink(self, raw: bytes) -> None:
        seq, kind = link_summary(raw)
        self._out.append(
            Draft.of(
                LINK,
                source=NERVE_SOURCE,
                trust=Trust.FIRST_PARTY,
                line=f"link {seq}: {kind}",
                payload=raw,
                subject="chain",
            )
        )

    def restore(self, snap: dict[str, Any]) -> None:
        self.pipeline.restore(snap["attention"])
        self.tracker.restore(snap["context"])
        self.cursor = Hlc(*snap["cursor"])
        self.observed = int(snap["observed"])

    def snapshot(self) -> dict[str, Any]:
        return {
            "attention": self.pipeline.snapshot(),
            "context": self.tracker.snapshot(),
            "cursor": list(self.cursor),
            "observed": self.observed,
        }

    def snapshot_draft(self) -> Draft:
        return Draft.of(
            SNAPSHOT,
            source=NERVE_SOURCE,
            trust=Trust.FIRST_PARTY,
            line=f"attention state after {self.observed} observations",
            payload=self.snapshot(),
            subject="attention",
        )

    def observe(self, rows: Iterable[Obs], recorded: set[tuple[str, str]] | None = None) -> None:
        """Attend to observations in order; skip those at or before the cursor.

        A batch goes through :meth:`Attention.observe_batch`; one the batch path does not
        take (small, or with an input the pipeline refuses) goes row by row, so a refusal
        leaves the state just before the row refused, as it always did."""
        kept: list[Obs] = []
        cursor: tuple[int, int] = self.cursor
        for obs in rows:
            stamp = (obs.physical_ns, obs.logical)
            if stamp > cursor:
                kept.append(obs)
                cursor = stamp
        attended = [obs for obs in kept if not is_estimate(obs.facts)]
        if len(attended) < BATCH_MIN or not self._observe_batch(attended, recorded):
            self._observe_rows(attended, recorded)
        self.observed += len(kept) - len(attended)  # estimates: passed, never attended
        if cursor > self.cursor:
            self.cursor = Hlc(*cursor)

    def _observe_batch(self, rows: list[Obs], recorded: set[tuple[str, str]] | None) -> bool:
        from nerve.attention import batch

        ids, sources, trusts, times = (list(map(attrgetter(f), rows)) for f in _BATCH_FIELDS)
        if not batch.valid_inputs(ids, sources, trusts) or not batch.fits(
            self.pipeline.observer, self.pipeline.detector, len(rows)
        ):
            return False
        context = self.tracker.batch(sources, times)
        subjects, readings = [o.subject for o in rows], [o.readings for o in rows]
        fired = self.pipeline.observe_batch(
            ids, sources, trusts, times, context, subjects, readings
        )
        seen, see = 0, self.witness.see
        for i, hl, dec in fired:
            for obs in rows[seen : i + 1]:
                see(obs.subject, obs.facts, obs.readings, obs.physical_ns)
            seen = max(seen, i + 1)
            obs = rows[i]
            if recorded is None or (obs.id.hex(), hl.probe) not in recorded:
                self._seal(obs, hl, dec, context(i))
        for obs in rows[seen:]:
            see(obs.subject, obs.facts, obs.readings, obs.physical_ns)
        self.cursor = Hlc(rows[-1].physical_ns, rows[-1].logical)
        self.observed += len(rows)
        return True

    def _observe_rows(self, rows: Iterable[Obs], recorded: set[tuple[str, str]] | None) -> None:
        for obs in rows:
            if Hlc(obs.physical_ns, obs.logical) <= self.cursor:
                continue
            ctx = self.tracker.update(obs.source, obs.physical_ns)
            self._see(obs)
            for hl, dec in self.pipeline.observe(
                obs.id, obs.source, obs.trust, obs.physical_ns, ctx, obs.subject, obs.readings
            ):
                if recorded is not None and (obs.id.hex(), hl.probe) in recorded:
                    continue
                self._seal(obs, hl, dec, ctx)
            self.cursor = Hlc(obs.physical_ns, obs.logical)
            self.observed += 1

    def _see(self, obs: Obs) -> None:
        self.witness.see(obs.subject, obs.facts, obs.readings, obs.physical_ns)

    def _seal(self, obs: Obs, hl: Highlight, dec: Decision, ctx: UserContext) -> None:
        seq = self.chain.size if self.chain is not None else None
        cause = self.witness.facts(obs.subject, obs.facts, hl.probe)
        payload = decision_payload(obs, hl, dec, ctx, seq, cause)
        if self.note is not None:
            payload.update(self.note(payload))
        self.decisions.append(payload)
        self._out.append(
            _salience(
                HIGHLIGHT,
                hl.probe,
                f"{hl.probe} {hl.value_milli / 1000:.3f} (baseline "
                f"{hl.baseline_milli / 1000:.3f}): {obs.line}",
                {**_highlight_json(hl), "source_event": obs.id.hex(), "source_line": obs.line},
            )
        )
        self._out.append(
            _salience(DECISION, dec.outcome, f"{dec.outcome} ({hl.probe}): {obs.line}", payload)
        )
        if self.chain is not None:
            self.chain.append_decision(obs.id, obs.trust, hl, dec, obs.physical_ns)

    def checkpoint(self) -> None:
        if self.chain is not None:
            self.chain.checkpoint(force=True)

    def rotate_key(self) -> int:
        """Seal a rotation link (signed by the old and the new key); return the new epoch."""
        if self.chain is None:
            raise ChainError("this attender does not seal (no keyring)")
        self.chain.rotate()
        return self.chain.epoch

    def take(self) -> list[Draft]:
        out, self._out = self._out, []
        return out


# -- reading what the log holds ------------------------------------------------------------


@dataclass
class LogState:
    links: list[bytes] = field(default_factory=list)
    snapshot: dict[str, Any] | None = None
    recorded: set[tuple[str, str]] = field(default_factory=set)
    observations: list[Obs] = field(default_factory=list)


def _after(cursor: Hlc) -> str:
    p, lo = cursor
    return f"(physical_ns > {int(p)} OR (physical_ns = {int(p)} AND logical > {int(lo)}))"


def read_observations(conn: Any, cursor: Hlc = HLC_ZERO) -> list[Obs]:
    """Every observation after ``cursor``, in HLC order. A payload is decoded once however
    often it is stored (a reading at rest repeats its payload byte for byte), and the
    observations holding it share its readings and facts: attention only reads them."""
    rows = conn.execute(
        "SELECT id, source, trust, physical_ns, logical, line, subject, payload FROM events "
        f"WHERE kind = 'observation' AND {_after(cursor)} ORDER BY physical_ns, logical"
    ).fetchall()
    decoded: dict[bytes | None, tuple[dict[str, int], dict[str, Any]]] = {}
    out: list[Obs] = []
    keep = out.append
    for i, s, t, p, lo, ln, sub, pl in rows:  # DuckDB gives BLOBs as bytes, BIGINTs as int
        got = decoded.get(pl)
        if got is None:
            got = decoded[pl] = readings_and_facts(pl)
        keep(Obs(i, s, t, p, lo, ln, sub, *got))
    return out


def load_state(log_root: Path, connect: Callable[[], Any] | None = None) -> LogState:
    """Links, the newest snapshot, decisions recorded after it, and observations to attend
    (read over ``connect()``, by default DuckDB's ``events`` view of ``log_root``)."""

    conn = connect() if connect is not None else _events(log_root)
    state = LogState()
    state.links = [
        bytes(r[0])
        for r in conn.execute(
            f"SELECT payload FROM events WHERE kind = '{LINK}' ORDER BY physical_ns, logical"
        ).fetchall()
    ]
    snap = conn.execute(
        f"SELECT payload FROM events WHERE kind = '{SNAPSHOT}' "
        "ORDER BY physical_ns DESC, logical DESC LIMIT 1"
    ).fetchone()
    cursor = HLC_ZERO
    if snap is not None:
        state.snapshot = json.loads(bytes(snap[0]))
        cursor = Hlc(*state.snapshot["cursor"])
    state.recorded = {
        (str(e), str(p))
        for e, p in conn.execute(
            f"SELECT data->>'source_event', data->>'probe' FROM events WHERE kind = '{DECISION}' "
            f"AND {_after(cursor)}"
        ).fetchall()
    }
    state.observations = read_observations(conn, cursor)
    return state


def _events(log_root: Path) -> Any:
    from nerve.query import connect

    return connect(log_root)


def attender_for(
    log_root: Path,
    settings: AttentionConfig,
    keys: Path,
    connect: Callable[[], Any] | None = None,
) -> tuple[Attender, LogState]:
    state = load_state(log_root, connect)
    att = Attender(settings, Keyring.open(keys), state.links)
    if state.snapshot is not None:
        att.restore(state.snapshot)
    return att, state


# -- offline: nerve attend --replay / --recompute -----------------------------------------


@dataclass(frozen=True)
class ReplayResult:
    observed: int
    decisions: int
    appended: int

    def to_json(self) -> dict[str, int]:
        return {"observed": self.observed, "decisions": self.decisions, "appended": self.appended}


def replay(log: EventLog, settings: AttentionConfig, keys: Path) -> ReplayResult:
    """Catch the log up exactly as the daemon would have; a second run appends nothing."""
    att, state = attender_for(log.paths.root, settings, keys)
    before, appended = att.observed, 0
    for start in range(0, len(state.observations), CHUNK):
        att.observe(state.observations[start : start + CHUNK], state.recorded)
        appended += _append(log, att.take())
    if att.observed > before:
        att._out.append(att.snapshot_draft())
    appended += _append(log, att.take())
    return ReplayResult(att.observed - before, len(att.decisions), appended)


def _append(log: EventLog, drafts: list[Draft]) -> int:
    if drafts:
        log.append_drafts(drafts)
    return len(drafts)


def rotate_offline(log: EventLog, settings: AttentionConfig, keys: Path) -> int:
    """Rotate the signing key with no daemon running; returns the new epoch."""
    att, _ = attender_for(log.paths.root, settings, keys)
    epoch = att.rotate_key()
    _append(log, att.take())
    return epoch


@dataclass(frozen=True)
class Recomputed:
    compared: int
    recorded: int
    difference: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        return self.difference is None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "compared": self.compared,
            "recorded": self.recorded,
            "difference": self.difference,
        }


def recompute(log_root: Path, settings: AttentionConfig) -> Recomputed:
    """Recompute every decision from scratch and compare, in order, with the recorded ones."""

    conn = _events(log_root)
    att = Attender(settings, None)
    att.observe(read_observations(conn))
    recorded = [
        json.loads(bytes(r[0]))
        for r in conn.execute(
            f"SELECT payload FROM events WHERE kind = '{DECISION}' ORDER BY physical_ns, logical"
        ).fetchall()
    ]
    return Recomputed(len(att.decisions), len(recorded), _first_difference(recorded, att.decisions))


def _first_difference(
    recorded: list[dict[str, Any]], computed: list[dict[str, Any]]
) -> dict[str, Any] | None:
    for index, (rec, comp) in enumerate(zip(recorded, computed, strict=False)):
        for name in (*DECISION_FIELDS, "highlight"):
            if rec.get(name) != comp.get(name):
                return {
                    "index": index,
                    "source_event": rec.get("source_event"),
                    "field": name,
                    "recorded": rec.get(name),
                    "computed": comp.get(name),
                }
    if len(recorded) != len(computed):
        index = min(len(recorded), len(computed))
        extra = "recorded" if len(recorded) > len(computed) else "computed"
        return {
            "index": index,
            "field": "count",
            "recorded": len(recorded),
            "computed": len(computed),
            "message": f"an extra {extra} decision at {index}",
        }
    return None


# -- the daemon extension -----------------------------------------------------------------


def read_mutes(conn: Any) -> dict[str, int]:
    """Each probe's newest mute (``attention.mute`` events), until when (ns)."""
    rows = conn.execute(
        f"SELECT payload FROM events WHERE kind = '{MUTE}' ORDER BY physical_ns, logical"
    ).fetchall()
    out: dict[str, int] = {}
    for (raw,) in rows:
        mute = mute_of(json.loads(bytes(raw)))
        if mute is not None:
            out[mute[0]] = max(mute[1], out.get(mute[0], 0))
    return out


def ui_opener(root: Path) -> Callable[[int], list[str]]:
    """The argv that shows decision ``seq`` in this workspace's web UI (its login link)."""

    def argv(seq: int) -> list[str]:
        return [sys.executable, "-m", "nerve", "--workspace", str(root), "ui", "--open",
                "--next", f"/attention/{seq}"]  # fmt: skip

    return argv


class AttentionService:
    """Runs the Attender inside the daemon on every committed observation; sends what
    surfaces (:mod:`nerve.attention.notify`); ``notices`` is what ``status`` says of it."""

    def __init__(self, notices: Notices | None = None) -> None:
        self.notices = notices if notices is not None else Notices()
        self.notifier: Notifier | None = None
        self.att: Attender | None = None
        self._queue: asyncio.Queue[list[Obs] | None] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._since_snapshot = 0
        self._held: list[Draft] = []  # chained drafts a failed append could not store yet

    async def start(self, kernel: AttentionNeeds) -> None:
        settings = kernel.config.attention
        if not settings.enabled:
            return
        self.settings = settings
        notifier = Notifier(settings.notify, kernel, self.notices, ui_opener(kernel.ws.root))
        self.notifier = notifier
        kernel.committer.listeners.append(self._on_commit)  # before reading: nothing slips by
        connect = functools.partial(kernel.connect, projections=False)
        att, state = await asyncio.to_thread(
            attender_for, kernel.ws.log_root, settings, kernel.ws.data / "keys", connect
        )
        for probe, until in (await asyncio.to_thread(lambda: read_mutes(connect()))).items():
            notifier.heard({"probe": probe, "until_ns": until})
        await notifier.start()
        self.att = att
        att.observe(state.observations, state.recorded)  # caught up: not sent again
        att.note = notifier.note
        await self._flush(kernel, snapshot=bool(state.observations))
        self._tasks = [
            asyncio.create_task(self._run(kernel), name="attention"),
            asyncio.create_task(self._timer(), name="chain-checkpoints"),
        ]

    def _on_commit(self, table: Any) -> None:
        # Queued even before the catch-up finishes; the attender skips what it has seen.
        muted = of_kind(table, MUTE)
        if muted is not None and self.notifier is not None:
            for raw in muted.column("payload").to_pylist():
                self.notifier.heard(json.loads(raw))
        observed = of_kind(table, "observation")
        if observed is None:
            return
        columns = ["id", "source", "trust", "physical_ns", "logical", "line", "subject", "payload"]
        self._queue.put_nowait([_obs_of(r) for r in observed.select(columns).to_pylist()])

    async def _timer(self) -> None:
        while True:
            await asyncio.sleep(self.settings.chain.checkpoint_interval / 1000)
            self._queue.put_nowait(None)

    async def _run(self, kernel: AttentionNeeds) -> None:
        assert self.att is not None
        while True:
            rows = await self._queue.get()
            done = len(self.att.decisions)
            if rows is None:
                self.att.checkpoint()
            else:
                self.att.observe(rows)
                self._since_snapshot += len(rows)
            due = self._since_snapshot >= self.settings.snapshot_every
            await self._flush(kernel, snapshot=due)
            await self._deliver(kernel, self.att.decisions[done:])

    async def _flush(self, kernel: AttentionNeeds, *, snapshot: bool) -> None:
        """Append what the attender produced. Links are already chained in memory, so a
        failed append keeps them, in order, for the next flush (they are retried before
        anything newer), and the failure is reported once on stderr."""
        assert self.att is not None
        drafts = self._held + self.att.take()
        if snapshot:
            drafts.append(self.att.snapshot_draft())
            self._since_snapshot = 0
        if not drafts:
            return
        try:
            await kernel.committer.append(drafts)
        except (NerveError, OSError) as exc:
            if not self._held:
                report(f"attention records not stored yet, will retry: {exc}")
            self._held = drafts
            return
        self._held = []

    async def _deliver(self, kernel: AttentionNeeds, decisions: list[dict[str, Any]]) -> None:
        assert self.notifier is not None
        for payload in decisions:
            if payload["outcome"] == "surface":
                await self.notifier.deliver(payload)

    def handlers(self) -> dict[str, Any]:
        """The socket requests attention answers (``nerve.runtime.control``)."""
        return {"rotate-key": self._rotate_key_request}

    async def _rotate_key_request(
        self, kernel: AttentionNeeds, request: dict[str, Any]
    ) -> dict[str, Any]:
        return {"ok": True, "epoch": await self.rotate_key(kernel)}

    async def rotate_key(self, kernel: AttentionNeeds) -> int:
        if self.att is None:
            raise ChainError("attention is disabled in nerve.yaml")
        epoch = self.att.rotate_key()
        await self._flush(kernel, snapshot=False)
        return epoch

    async def on_config(self, kernel: AttentionNeeds, reason: str) -> None:
        """Attention's settings are read at start; a reload changes nothing here."""

    async def on_workflow_requested(
        self, kernel: AttentionNeeds, trigger: WorkflowTrigger, sense: str
    ) -> None:
        """Attention runs no workflows."""

    async def request_run(
        self, kernel: AttentionNeeds, trigger: WorkflowTrigger, source: str
    ) -> dict[str, Any] | None:
        return None  # attention runs no workflows: another extension, or the kernel, records it

    async def stop(self, kernel: AttentionNeeds) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.att is not None:
            while not self._queue.empty():
                item = self._queue.get_nowait()
                if item is not None:
                    self.att.observe(item)
                    self._since_snapshot += len(item)
            await self._flush(kernel, snapshot=self._since_snapshot > 0)


def _obs_of(r: dict[str, Any]) -> Obs:
    return Obs(
        r["id"], r["source"], r["trust"], r["physical_ns"], r["logical"], r["line"],
        r["subject"], *readings_and_facts(r["payload"]),
    )  # fmt: skip
