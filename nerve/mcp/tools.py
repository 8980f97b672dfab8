"""What the read tools of ``nerve mcp`` return, as plain calls over a workspace.

Each function takes a :class:`Call` (the workspace, the privacy screen
(:class:`~nerve.privacy.screen.Screen`), what the call may still return, the query time limit)
and the tool's arguments, and returns a pydantic model: the tool's structured output, whose
JSON schema the server publishes. The server adds the budget and the ``agent.access`` record
around them; a benchmark or a notebook can call them directly.

Times are local ISO-8601 with the zone offset (``2026-05-01T14:03:22.123456+02:00``) next to
the HLC stamp; sources read as in ``nerve tail`` (nerve's own records: ``nerve``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from nerve.api import Workspace
from nerve.attention.reason import reason_of
from nerve.chain.records import Outcome as SealedOutcome
from nerve.clock import Hlc
from nerve.errors import UsageError
from nerve.events import AGENT_ACCESS, display_source, trust_name
from nerve.mcp.budgets import Allowance, fit
from nerve.privacy.screen import ERASED, Screen, named_ids

__all__ = [
    "AskOut",
    "Call",
    "EventOut",
    "HighlightsOut",
    "QueryOut",
    "RecentOut",
    "SearchOut",
    "ask",
    "decision_source",
    "highlights",
    "query",
    "recent",
    "search",
    "sources",
]

_EVENT_COLUMNS = "physical_ns, logical, id, source, kind, subject, trust, line, payload"


@dataclass
class Call:
    """One tool call: where it reads, what it may return, and (set by the tool) how many
    items it returned."""

    ws: Workspace
    screen: Screen
    allowance: Allowance
    timeout_ms: int = 5_000
    rows: int = 0

    def fit(self, items: Sequence[Any]) -> tuple[list[Any], bool]:
        kept, cut = fit(items, self.allowance)
        self.rows = len(kept)
        return kept, cut


class EventOut(BaseModel):
    """One event as an agent sees it."""

    id: str = Field(description="The event's content id (hex); cite it.")
    time: str = Field(description="When it was stored: local ISO-8601 time with zone offset.")
    hlc: str = Field(description="Its hybrid-logical-clock stamp, physical_ns.logical.")
    source: str = Field(description="Source class (shell, file_change, …; nerve's own: nerve).")
    kind: str = Field(description="Event kind: observation, sense.error, attention.decision, …")
    subject: str = Field(description="What it is about: the sense's name, a run id, …")
    trust: str = Field(description="Attested, FirstParty, Inferred or Untrusted.")
    line: str = Field(description="The event's one line of text (privacy rules applied).")
    data: Any = Field(default=None, description="The JSON payload (privacy rules applied).")
    erased: bool = Field(default=False, description="True when its payload was erased.")


class RecentOut(BaseModel):
    events: list[EventOut] = Field(description="The newest matching events, newest first.")
    more: bool = Field(description="True when older events match too (ask with a narrower window).")


class SearchHit(EventOut):
    score: int = Field(description="BM25-lite score: higher matches the words better.")


class SearchOut(BaseModel):
    hits: list[SearchHit] = Field(description="Best matches first (ties: newest first).")
    terms: list[str] = Field(description="The words searched for (stopwords dropped).")
    searched: int = Field(description="How many candidate events were searched.")
    complete: bool = Field(description="False when older candidates lay outside the window.")
    more: bool = Field(description="True when hits were left out at the limit or budget.")


class Citation(BaseModel):
    id: str = Field(description="The cited event's content id (hex).")
    time: str = Field(description="Its local ISO-8601 time.")
    hlc: str
    source: str
    kind: str
    subject: str
    line: str


class AskOut(BaseModel):
    answer: str = Field(description="The answer, or why there is none.")
    answered: bool
    tier: int | None = Field(
        description="0: deterministic recall from the log; 1: the configured language model; "
        "null: unanswered."
    )
    intent: str | None = Field(description="The Tier-0 intent that answered, if any.")
    citations: list[Citation] = Field(description="The events the answer rests on.")
    more: bool = Field(description="True when citations were left out at the budget.")


class Decision(BaseModel):
    time: str
    hlc: str
    outcome: str = Field(
        description="surface, or held: hold:value (not worth it), hold:budget (could not pay), "
        "hold:direction (the harmless way), hold:transient (did not last)."
    )
    probe: str = Field(description="What the highlight measured (its source).")
    value_milli: int | None = Field(description="The highlight's value, in thousandths.")
    cost_milli: int | None = Field(description="The cost of interrupting now, in thousandths.")
    charged_uj: int | None = Field(description="Joules charged to the budget (µJ).")
    budget_before_uj: int | None
    budget_after_uj: int | None
    why: str = Field(description="Why, in one sentence: the rule that decided and its figures.")
    cause: str = Field(
        description="What happened and where: the port and its process, the busiest process, "
        "a disk's time to full, a command and its failure streak (privacy rules applied)."
    )
    source_event: str | None = Field(description="Id of the observation that caused it.")
    line: str = Field(description="That observation's line (privacy rules applied).")
    chain_seq: int | None = Field(description="Its link in the sealed audit chain.")


class HighlightsOut(BaseModel):
    decisions: list[Decision] = Field(description="Attention decisions, newest first.")
    more: bool


class QueryOut(BaseModel):
    columns: list[str]
    rows: list[list[Any]] = Field(description="Rows, in the columns' order (privacy applied).")
    more: bool = Field(description="True when rows were left out at the row cap or budget.")


# -- shared ----------------------------------------------------------------------------------


def _instant(text: str | None, name: str, *, end: bool = False) -> Hlc | None:
    from nerve.tail import parse_instant

    if text is None or not text.strip():
        return None
    try:
        return parse_instant(text, end=end)
    except UsageError as exc:
        raise UsageError(f"{name}: {exc}") from None


def _times(stamps: Sequence[int]) -> list[str]:
    from nerve.tail import format_times

    return format_times(list(stamps))


def _event(
    screen: Screen,
    row: dict[str, Any],
    time: str,
    *,
    with_data: bool = True,
    hidden: frozenset[str] = frozenset(),
) -> EventOut:
    """An event row (``source`` and ``trust`` codes, ``payload`` bytes) as it may leave;
    ``hidden``: stored ids of screened rows it may name (:func:`_screened_named`)."""
    erased = bool(row.get("erased"))
    shown = screen.event(
        int(row["source"]), str(row["kind"]), str(row["subject"]), str(row["line"] or ""),
        b"" if erased else bytes(row["payload"] or b""), hidden,
    )  # fmt: skip
    stored = bytes(row["id"])
    return EventOut(
        id=(screen.shown_id(stored) if shown.changed else stored).hex(),
        time=time,
        hlc=f"{row['physical_ns']}.{row['logical']}",
        source=display_source(int(row["source"])),
        kind=str(row["kind"]),
        subject=shown.subject,
        trust=trust_name(int(row["trust"])),
        line=ERASED if erased else shown.line,
        data=shown.data if with_data and not erased else None,
        erased=erased,
    )


def _events(
    ws: Workspace, screen: Screen, rows: Sequence[dict[str, Any]], *, with_data: bool = True
) -> list[EventOut]:
    times = _times([int(r["physical_ns"]) for r in rows])
    hidden = _screened_named(ws, screen, rows)
    return [
        _event(screen, row, t, with_data=with_data, hidden=hidden)
        for row, t in zip(rows, times, strict=True)
    ]


def _screened_named(
    ws: Workspace, screen: Screen, rows: Sequence[dict[str, Any]]
) -> frozenset[str]:
    """The stored ids nerve's records among ``rows`` name whose rows ``screen`` changes:
    those records name them keyed (see :mod:`nerve.privacy.screen`)."""
    named: set[str] = set()
    for row in rows:
        named |= named_ids(str(row["kind"]), bytes(row.get("payload") or b""))
    if not named:
        return frozenset()
    conn = ws.new_connection()
    try:
        found = _rows_by_id(conn, sorted(named))
    finally:
        conn.close()
    return frozenset(
        key
        for key, r in found.items()
        if r["line"] is not None
        and screen.changes(
            r["source"], r["kind"], r["subject"], r["line"], bytes(r["payload"] or b"")
        )
    )


def _rows_by_id(conn: Any, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Event rows by id (hex), ``erased`` included when the log has that column."""
    wanted = [bytes.fromhex(i) for i in ids]
    if not wanted:
        return {}
    erased = ", erased" if _has_erased(conn) else ""
    cursor = conn.execute(
        f"SELECT {_EVENT_COLUMNS}{erased} FROM events WHERE list_contains(?::BLOB[], id)",
        [wanted],
    )
    names = [d[0] for d in cursor.description]
    return {bytes(r[2]).hex(): dict(zip(names, r, strict=True)) for r in cursor.fetchall()}


def _valid_times(conn: Any, ids: list[str]) -> dict[str, int]:
    """Each event's ``valid_time_ns`` (when its datum was true), for those that have one."""
    if not ids:
        return {}
    found = conn.execute(
        "SELECT id, valid_time_ns FROM events WHERE list_contains(?::BLOB[], id) "
        "AND valid_time_ns IS NOT NULL",
        [[bytes.fromhex(i) for i in ids]],
    ).fetchall()
    return {bytes(r[0]).hex(): int(r[1]) for r in found}


def _has_erased(conn: Any) -> bool:
    columns = conn.execute("SELECT column_name FROM (DESCRIBE events)").fetchall()
    return ("erased",) in columns


# -- recent ----------------------------------------------------------------------------------


def recent(
    call: Call,
    since: str | None = None,
    until: str | None = None,
    kinds: list[str] | None = None,
    sources: list[str] | None = None,
    limit: int = 50,
    include_bookkeeping: bool = False,
) -> RecentOut:
    """The newest matching events, as ``nerve tail`` reads them; bookkeeping (and agents'
    own ``agent.access`` records) hidden unless asked for by kind or flag."""
    from nerve.tail import tail_filter

    filt = tail_filter(kinds or [], sources or [], all_kinds=include_bookkeeping)
    if filt.hidden:
        filt = dataclasses.replace(filt, hidden=(*filt.hidden, AGENT_ACCESS))
    count = max(0, min(limit, call.allowance.rows))
    tail = call.ws.events.read(
        count=count,
        filt=filt,
        since=_instant(since, "since"),
        until=_instant(until, "until", end=True),
        count_older=1,
    )
    table = tail.batch.table
    rows = table.to_pylist()[::-1] if table is not None else []
    kept, cut = call.fit([e.model_dump() for e in _events(call.ws, call.screen, rows)])
    return RecentOut(events=[EventOut(**e) for e in kept], more=cut or tail.older > 0)


# -- search ----------------------------------------------------------------------------------


def _filtered_conn(
    ws: Workspace, screen: Screen, since: Hlc | None, until: Hlc | None, sources: list[int]
) -> Any:
    """DuckDB whose ``events`` holds only the window and sources asked for, as ``screen``
    lets them leave (a search cannot match what the rules hold back)."""
    import duckdb

    from nerve.query import TAIL, define_views, register_snapshot, source_sql

    snap = ws.log.snapshot()
    conn = duckdb.connect()
    conn.execute("SET enable_progress_bar_print = false")
    register_snapshot(conn, snap)
    where = []
    if since is not None:
        p, lo = since.physical_ns, since.logical
        where.append(f"(physical_ns > {p} OR (physical_ns = {p} AND logical >= {lo}))")
    if until is not None:
        p, lo = until.physical_ns, until.logical
        where.append(f"(physical_ns < {p} OR (physical_ns = {p} AND logical <= {lo}))")
    if sources:
        where.append(f"source IN ({', '.join(str(int(s)) for s in sources)})")
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = conn.sql(f"SELECT * FROM {source_sql(snap)}{clause}").to_arrow_table()
    conn.unregister(TAIL)
    conn.register("_search_rows", screen.rows(rows))
    define_views(conn, "_search_rows", [], ws.settings.views())
    return conn


def search(
    call: Call,
    text: str,
    since: str | None = None,
    until: str | None = None,
    sources: list[str] | None = None,
    limit: int = 20,
) -> SearchOut:
    """BM25-lite over the recall window (``nerve ask``'s retrieval), hits only."""
    from nerve.recall.core import RetrievalParams, query_terms, retrieve
    from nerve.tail import tail_filter

    if not query_terms(text):
        raise UsageError(
            f"{text!r} holds no word to search for (two or more letters or digits, not a "
            "stopword like 'the')"
        )
    codes = list(tail_filter([], sources or [], all_kinds=True).sources)
    cfg = call.ws.settings.config.recall  # checked as nerve.yaml loads
    k = max(1, min(limit, call.allowance.rows, 1_000))
    conn = _filtered_conn(
        call.ws, call.screen, _instant(since, "since"), _instant(until, "until", end=True), codes
    )
    try:
        params = RetrievalParams(k=k, window=cfg.window, kinds=tuple(cfg.kinds))
        envelope = retrieve(conn, text, params).envelope
        hits = [s for s in envelope.spans if s.via == "bm25"]
        rows = _rows_by_id(conn, [s.id for s in hits])
    finally:
        conn.close()
    found = [r for r in (rows.get(s.id) for s in hits) if r is not None]
    shown = [
        SearchHit(**e.model_dump(), score=s.score).model_dump()
        for e, s in zip(_events(call.ws, call.screen, found), hits, strict=True)
    ]
    kept, cut = call.fit(shown)
    return SearchOut(
        hits=[SearchHit(**h) for h in kept],
        terms=list(envelope.terms),
        searched=envelope.window_spans,
        complete=envelope.complete,
        more=cut,
    )


# -- ask -------------------------------------------------------------------------------------


def ask(call: Call, question: str, k: int | None = None) -> AskOut:
    """The recall cascade as ``nerve ask`` runs it, recording nothing (an agent's question
    is in its ``agent.access`` record, as a digest)."""
    from nerve.mcp.sandbox import open_sandbox

    def shown() -> Any:  # what it reads: the rows privacy lets leave, nothing else
        return open_sandbox(call.ws, call.screen.rows)

    result = call.ws.ask(question, k=k, record=False, connect=shown)
    conn = shown()  # the cited ids are the screened rows' (keyed where the rules changed one)
    try:
        rows = _rows_by_id(conn, list(result.spans))  # a plan cites rows past the envelope
        starts = _valid_times(conn, list(rows))
    finally:
        conn.close()
    cited = [rows[i] for i in result.spans if i in rows]
    # a citation's time is the datum's (a command's start), as the answer's text says it
    times = _times([starts.get(bytes(r["id"]).hex(), int(r["physical_ns"])) for r in cited])
    citations = [
        Citation(**e.model_dump(exclude={"data", "erased", "trust", "time"}), time=t).model_dump()
        for e, t in zip(_events(call.ws, call.screen, cited, with_data=False), times, strict=True)
    ]
    kept, cut = call.fit(citations)
    return AskOut(
        answer=call.screen.text(result.text),
        answered=result.answered,
        tier=result.tier,
        intent=result.intent,
        citations=[Citation(**c) for c in kept],
        more=cut,
    )


# -- highlights ------------------------------------------------------------------------------

# Every outcome the log can hold (the chain's), and two groups: surfaced, held.
Outcome = Literal["surfaced", "held"] | SealedOutcome
_OUTCOMES = {
    "surfaced": "data->>'outcome' = 'surface'",
    "held": "data->>'outcome' LIKE 'hold:%'",
    **{name: f"data->>'outcome' = '{name}'" for name in get_args(SealedOutcome)},
}


def highlights(
    call: Call, since: str | None = None, outcome: Outcome | None = None, limit: int = 50
) -> HighlightsOut:
    """Attention decisions, surfaced and held, with value, cost, budget and why."""
    from nerve.canonical import loads_bounded

    lower = _instant(since, "since")
    where = ["kind = 'attention.decision'"]
    if lower is not None:
        where.append(f"physical_ns >= {lower.physical_ns}")
    if outcome is not None:
        where.append(_OUTCOMES[outcome])
    count = max(0, min(limit, call.allowance.rows))
    conn = call.ws.new_connection()
    try:
        rows = conn.execute(
            f"SELECT physical_ns, logical, CAST(data AS VARCHAR) FROM events "
            f"WHERE {' AND '.join(where)} ORDER BY physical_ns DESC, logical DESC "
            f"LIMIT {count + 1}"
        ).fetchall()
    finally:
        conn.close()
    times = _times([int(r[0]) for r in rows[:count]])
    records = [loads_bounded(data) if data else {} for _, _, data in rows[:count]]
    named = sources(call.ws, call.screen, [d.get("source_event") for d in records])
    found = []
    for (physical, logical, _), d, time in zip(rows[:count], records, times, strict=True):
        made = _decision(call.screen, named, d, time, f"{physical}.{logical}")
        found.append(made.model_dump())
    kept, cut = call.fit(found)
    return HighlightsOut(decisions=[Decision(**d) for d in kept], more=cut or len(rows) > count)


def sources(ws: Workspace, screen: Screen, ids: Iterable[Any]) -> dict[str, tuple[str, str]]:
    """The observations decisions name (by stored id, hex) as they may leave: the id each
    is shown with (keyed when the rules change it) and its line, screened by its own rules.
    A decision keeps its observation's id and line; shown as stored, they would leave what
    the rules hold back (an excluded command) or an oracle for it (see
    :mod:`nerve.privacy.screen`)."""
    wanted = sorted({i for i in ids if isinstance(i, str) and _is_hex_id(i)})
    conn = ws.new_connection()
    try:
        rows = _rows_by_id(conn, wanted)
    finally:
        conn.close()
    return {key: _named(screen, row) for key, row in rows.items()}


def _is_hex_id(text: str) -> bool:
    try:
        return len(bytes.fromhex(text)) == 32
    except ValueError:
        return False


def _named(screen: Screen, row: dict[str, Any]) -> tuple[str, str]:
    shown = _event(screen, row, "", with_data=False)
    return shown.id, shown.line


def decision_source(
    screen: Screen, named: dict[str, tuple[str, str]], d: dict[str, Any]
) -> tuple[str | None, str]:
    """A decision's observation as it may leave: its id and line (see :func:`sources`);
    one not in the log keeps the id recorded, its line screened as any text."""
    raw = d.get("source_event") if isinstance(d.get("source_event"), str) else None
    if raw is not None and raw in named:
        return named[raw]
    return raw, screen.text(str(d.get("source_line") or ""))


def screened_decision(
    screen: Screen, named: dict[str, tuple[str, str]], d: dict[str, Any]
) -> dict[str, Any]:
    """A stored decision as it may leave: its observation's id and line as
    :func:`decision_source` shows them, and its ``cause`` (facts copied from that
    observation's payload) screened, or dropped when the rules withheld or changed the
    observation (the cause in words then falls back to the shown line)."""
    out = dict(d)
    source_event, line = decision_source(screen, named, d)
    same = line == str(d.get("source_line") or "") and source_event == d.get("source_event")
    out["source_event"], out["source_line"] = source_event, line
    facts = d.get("cause")
    if isinstance(facts, dict):
        out["cause"] = screen.value(facts) if same else {}
    return out


def _decision(
    screen: Screen, named: dict[str, tuple[str, str]], raw: dict[str, Any], time: str, hlc: str
) -> Decision:
    d = screened_decision(screen, named, raw)

    def num(key: str) -> int | None:
        value = d.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    source_event, line = d["source_event"], d["source_line"]

    return Decision(
        time=time,
        hlc=hlc,
        outcome=str(d.get("outcome")),
        probe=str(d.get("probe")),
        value_milli=num("value_milli"),
        cost_milli=num("cost_milli"),
        charged_uj=num("charged_uj"),
        budget_before_uj=num("budget_before_uj"),
        budget_after_uj=num("budget_after_uj"),
        why=reason_of(d).words(),
        cause=screen.text(reason_of(d).cause),
        source_event=source_event,
        line=line,
        chain_seq=num("chain_seq"),
    )


# -- query -----------------------------------------------------------------------------------


def query(call: Call, sql: str, limit: int | None = None) -> QueryOut:
    """One read-only SELECT in the sandbox (:mod:`nerve.mcp.sandbox`), privacy applied."""
    from nerve.mcp.sandbox import open_sandbox, run_sql

    cap = max(0, min(limit if limit is not None else call.allowance.rows, call.allowance.rows))
    conn = open_sandbox(call.ws, call.screen.rows)
    try:
        result = run_sql(
            conn, sql, limit=cap, timeout_ms=call.timeout_ms, max_bytes=call.allowance.bytes
        )
    finally:
        conn.close()
    rows, cut = call.fit(call.screen.value(result.rows))
    return QueryOut(columns=result.columns, rows=rows, more=cut or result.truncated)
