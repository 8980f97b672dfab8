"""Retrieval for the synthesis cascade (Sense v0.1 §6): spans, BM25-lite and the envelope.

A **span** is one candidate event seen by the cascade: its id (hex), HLC, source class name,
kind, subject and line, plus its ``rank`` (0 = newest) within its **stratum** — the source
class for an observation, the kind for anything else (``attention.decision``,
``sense.error``, …), since nerve's own records all share ``vendor:1024``.

Building an envelope for a query, all inside DuckDB over the ``events`` view:

1. **Window.** The newest ``window`` (50,000) events whose kind is one of ``kinds``, in HLC
   order (``physical_ns``, ``logical``, node, id). The N-th newest stamp is found first from
   narrow columns, so the wide read is pruned by HLC and stays fast over a large log.
2. **Tokens.** Maximal runs of ASCII letters and digits, lower-cased, of two or more
   characters; anything else (punctuation, spaces, non-ASCII letters) separates tokens, so
   every engine splits a line the same way. Query terms are the query's unique tokens minus
   :data:`STOPWORDS`, at most :data:`MAX_TERMS` (first mentions), sorted.
3. **BM25-lite.** Exact integer term frequencies ``tf``; ``k1 = 6/5`` saturation; no length
   normalisation (``b = 0``: lines are short one-line projections, and equally relevant spans
   then tie and are broken by recency, which is what recall wants). With ``N`` spans in the
   window and ``n`` of them holding the term, ``idf = log2((2N + 2) / (2n + 1))`` — BM25's
   ``ln((N - n + 0.5) / (n + 0.5) + 1)`` up to a constant factor — as a fixed-point integer
   with :data:`IDF_BITS` fraction bits (:func:`log2_fixed`, integers only). A span's score is
   ``sum(idf * 11 * tf // (5 * tf + 6))`` over the terms; hits (score > 0) rank by score, then
   newest first, then node and id descending — except that a hit whose tokens are exactly
   the query's tokens, in order (the command or title asked for, whole), ranks first. The
   top ``k`` hits come first in the envelope.
4. **Source-stratified recency fill.** Empty slots are filled round-robin over strata, newest
   first (by ``rank``): *named* strata take turns first until exhausted — the stratum of the
   Tier-0 intent the query matches, if any, then those its words name (:data:`LEXICON`, in
   order of first mention) — then the rest, most recently active first, then by name.
5. **Salience.** The §4 projection at the log's newest observation — what the ``salience``
   view's last row holds: :class:`nerve.attention.observer.Observer` restored from the newest
   ``attention.window`` observations and the all-time count per source, then fed the newest.

The envelope serialises as canonical JSON; its digest is the blake3 of those bytes, so the
same log and query give the byte-identical envelope (and a provider's prompt cache hits).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import blake3
import duckdb

from nerve.attention.observer import DEFAULT_WINDOW, Observer
from nerve.canonical import canonical_json
from nerve.config.recall import DEFAULT_K, DEFAULT_KINDS, DEFAULT_WINDOW_SPANS
from nerve.errors import UsageError
from nerve.events import decode_payload, source_name
from nerve.log.wire import ERASED_TEXT
from nerve.query import newest_floors

__all__ = [
    "ENVELOPE_VERSION",
    "IDF_BITS",
    "LEXICON",
    "MAX_TERMS",
    "STOPWORDS",
    "Envelope",
    "Retrieval",
    "RetrievalParams",
    "Span",
    "Stratum",
    "idf_fixed",
    "log2_fixed",
    "named_strata",
    "query_terms",
    "retrieve",
    "term_score",
    "tokenize",
]

ENVELOPE_VERSION = 1
IDF_BITS = 16
MAX_TERMS = 32
_TOKEN = re.compile(r"[A-Za-z0-9]{2,}")
_TOKEN_SQL = "[A-Za-z0-9]{2,}"
_FIXED_BITS = 64
_ORDER = "physical_ns DESC, logical DESC, node DESC, id DESC"
_TABLE = "_recall_window"
_MATCHES = "_recall_matches"


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


STOPWORDS = frozenset(
    _words(
        "about after all am an and any are as at be been before but by can could did do does "
        "done for from give had has have how if in into is it its just last latest lately list "
        "me most my newest of on or our please recent recently show so some tell than that the "
        "their them then there these this those to us was we were what when where which who "
        "why will with would you your"
    )
)
"""Query words that carry no retrieval weight (they still count as Tier-0 intent cues)."""

_LEXICON_WORDS = {
    "file_change": "file files edit edited edits editing modified saved wrote written touched "
    "created deleted renamed",
    "shell": "command commands ran run typed executed shell terminal",
    "process_tree": "process processes program programs app apps",
    "thermal_power": "cpu load memory ram disk battery power thermal temperature busy",
    "network": "network net download upload bandwidth traffic wifi internet",
    "app_focus": "focus focused window windows switched",
    "system_log": "syslog journal kernel",
    "attention.decision": "surfaced surface surfacing held hold withheld budget joules decision "
    "decisions interrupted interruption shown showed alerted notified",
    "attention.highlight": "highlight highlights anomaly anomalies spike spikes",
    "sense.error": "error errors failed failure failures failing crashed crash",
}
LEXICON: dict[str, str] = {
    word: stratum for stratum, words in _LEXICON_WORDS.items() for word in _words(words)
}
"""Words that name a stratum; the recency fill serves named strata first."""


# -- tokens and scores -------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    """Maximal runs of ASCII letters/digits, lower-cased, two characters or more, in order."""
    return [token.lower() for token in _TOKEN.findall(text)]


def query_terms(query: str) -> tuple[str, ...]:
    """The query's unique non-stopword tokens (first :data:`MAX_TERMS` mentioned), sorted."""
    unique = dict.fromkeys(t for t in tokenize(query) if t not in STOPWORDS)
    return tuple(sorted(list(unique)[:MAX_TERMS]))


def named_strata(query: str, first: Sequence[str] = ()) -> tuple[str, ...]:
    """``first``, then strata the query names through :data:`LEXICON` in mention order."""
    named = [*first, *(LEXICON[t] for t in tokenize(query) if t in LEXICON)]
    return tuple(dict.fromkeys(named))


def log2_fixed(num: int, den: int, bits: int = IDF_BITS) -> int:
    """``log2(num / den)`` in units of ``2**-bits`` for ``num >= den > 0``, integers only.

    The integer part comes from bit lengths; each fraction bit from squaring a 64-bit
    fixed-point mantissa in ``[1, 2)`` (truncating), so every machine gets the same integer.
    """
    if not num >= den > 0:
        raise UsageError(f"log2_fixed needs num >= den > 0, got {num}/{den}")
    whole = num.bit_length() - den.bit_length()
    if num < den << whole:
        whole -= 1
    one = 1 << _FIXED_BITS
    y = (num << _FIXED_BITS) // (den << whole)
    frac = 0
    for _ in range(bits):
        y = (y * y) >> _FIXED_BITS
        frac <<= 1
        if y >= 2 * one:
            y >>= 1
            frac |= 1
    return (whole << bits) | frac


def idf_fixed(spans: int, holding: int) -> int:
    """``log2((2N + 2) / (2n + 1))`` as a fixed-point integer (see the module docstring)."""
    return log2_fixed(2 * spans + 2, 2 * holding + 1)


def term_score(idf: int, tf: int) -> int:
    """One term's BM25-lite contribution: ``idf * 11 * tf // (5 * tf + 6)`` (0 when absent)."""
    return idf * 11 * tf // (5 * tf + 6) if tf > 0 else 0


# -- the envelope --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Span:
    """One retrieved event; ``via`` is ``"bm25"`` for a hit, ``"fill"`` for recency fill."""

    id: str
    hlc: tuple[int, int]
    source: str
    kind: str
    subject: str
    line: str
    rank: int
    score: int
    via: str
    erased: bool = False  # its line and payload were erased (``line`` then says so)

    @property
    def stratum(self) -> str:
        return self.source if self.kind == "observation" else self.kind

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "hlc": list(self.hlc),
            "source": self.source,
            "kind": self.kind,
            "subject": self.subject,
            "line": self.line,
            "rank": self.rank,
            "score": self.score,
            "via": self.via,
            **({"erased": True} if self.erased else {}),
        }


@dataclass(frozen=True, slots=True)
class Stratum:
    """How many window spans a stratum holds, and its newest stamp."""

    name: str
    spans: int
    newest: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {"stratum": self.name, "spans": self.spans, "newest": list(self.newest)}


@dataclass(frozen=True)
class RetrievalParams:
    """``k`` envelope slots, the ``window`` of newest candidates, their ``kinds``."""

    k: int = DEFAULT_K
    window: int = DEFAULT_WINDOW_SPANS
    kinds: tuple[str, ...] = DEFAULT_KINDS
    salience_window: int = DEFAULT_WINDOW

    def __post_init__(self) -> None:
        for name in ("k", "window", "salience_window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"recall {name} must be a positive integer, got {value!r}")
        if not self.kinds:
            raise UsageError("recall kinds must name at least one event kind")


@dataclass(frozen=True)
class Envelope:
    """Top-k spans + salience projection + query; see the module docstring."""

    query: str
    terms: tuple[str, ...]
    named: tuple[str, ...]
    params: RetrievalParams
    spans: tuple[Span, ...]
    window_spans: int
    complete: bool
    strata: tuple[Stratum, ...]
    salience: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The envelope as plain JSON values (the digest is over its canonical form)."""
        return {
            "version": ENVELOPE_VERSION,
            "query": self.query,
            "terms": list(self.terms),
            "named": list(self.named),
            "k": self.params.k,
            "spans": [s.to_json() for s in self.spans],
            "window": {
                "limit": self.params.window,
                "kinds": list(self.params.kinds),
                "spans": self.window_spans,
                "complete": self.complete,
            },
            "strata": [s.to_json() for s in self.strata],
            "salience": self.salience,
        }

    @cached_property
    def canonical(self) -> bytes:
        """Canonical JSON bytes: the same log and query give the same bytes."""
        return canonical_json(self.to_json())

    @cached_property
    def digest(self) -> str:
        """blake3 of :attr:`canonical`, lower-case hex."""
        return str(blake3.blake3(self.canonical).hexdigest())

    def stratum(self, name: str) -> Stratum | None:
        return next((s for s in self.strata if s.name == name), None)


@dataclass(frozen=True)
class Retrieval:
    """An envelope and the decoded JSON payloads of its spans (by span id)."""

    envelope: Envelope
    payloads: dict[str, Any]


# -- SQL -----------------------------------------------------------------------------------------


def _placeholders(count: int) -> str:
    return ", ".join("?" for _ in range(count))


def _threshold(
    conn: duckdb.DuckDBPyConnection, params: RetrievalParams
) -> tuple[tuple[int, int] | None, bool]:
    """The window's oldest stamp (None: every candidate fits) and whether the window is whole."""
    kinds = _placeholders(len(params.kinds))
    sql = (
        f"SELECT physical_ns, logical FROM events WHERE kind IN ({kinds}){{floor}}"
        f" ORDER BY physical_ns DESC, logical DESC LIMIT 2 OFFSET {params.window - 1}"
    )
    for floor in newest_floors(conn, params.window + 1):  # the newest segments, if enough
        floored = sql.format(floor=" AND physical_ns >= ?")
        found = conn.execute(floored, [*params.kinds, floor]).fetchall()
        if len(found) == 2:
            return (int(found[0][0]), int(found[0][1])), False
    rows = conn.execute(sql.format(floor=""), list(params.kinds)).fetchall()
    if not rows:
        return None, True
    return (int(rows[0][0]), int(rows[0][1])), len(rows) < 2


def _create_window(conn: duckdb.DuckDBPyConnection, params: RetrievalParams) -> bool:
    """Materialise the window; True when it holds every candidate in the log."""
    oldest, complete = _threshold(conn, params)
    since = "" if oldest is None else " AND physical_ns >= ? AND (physical_ns > ? OR logical >= ?)"
    # physical_ns >= the oldest's first: DuckDB skips the row groups before it
    args: list[Any] = [*params.kinds, *(() if oldest is None else (oldest[0], *oldest))]
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE {_TABLE} AS
        SELECT *, row_number() OVER (PARTITION BY stratum ORDER BY {_ORDER}) - 1 AS rank
        FROM (
            SELECT physical_ns, logical, node, id, source, trust, kind, subject, line,
                CASE WHEN kind = 'observation' THEN source_name ELSE kind END AS stratum
            FROM events
            WHERE kind IN ({_placeholders(len(params.kinds))}){since}
            ORDER BY {_ORDER} LIMIT {params.window}
        )
        """,
        args,
    )
    return complete


def _create_matches(conn: duckdb.DuckDBPyConnection, terms: Sequence[str]) -> None:
    """Tokenise only the window spans whose lower-cased line contains some term."""
    contains = " OR ".join("contains(lower(line), ?)" for _ in terms) or "false"
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE {_MATCHES} AS
        SELECT *, list_transform(regexp_extract_all(line, '{_TOKEN_SQL}'), lambda t: lower(t))
            AS toks
        FROM {_TABLE} WHERE {contains}
        """,
        list(terms),
    )


def _count_holding(conn: duckdb.DuckDBPyConnection, terms: Sequence[str]) -> tuple[int, list[int]]:
    """Spans in the window, and how many hold each term."""
    total = conn.execute(f"SELECT count(*) FROM {_TABLE}").fetchone()
    if not terms:
        return int(total[0]) if total else 0, []
    holding = ", ".join("count(*) FILTER (list_contains(toks, ?))" for _ in terms)
    row = conn.execute(f"SELECT {holding} FROM {_MATCHES}", list(terms)).fetchone()
    return int(total[0]) if total else 0, [int(v) for v in row or ()]


_SPAN_COLUMNS = "physical_ns, logical, id, source, kind, subject, line, rank"


def _hits(
    conn: duckdb.DuckDBPyConnection,
    terms: Sequence[str],
    idfs: Sequence[int],
    k: int,
    words: Sequence[str] = (),
) -> list[Span]:
    """The top ``k`` BM25 hits; a span whose tokens are exactly the query's ``words`` (the
    command or title asked for, whole) ranks before every other hit."""
    scored = [(t, idf) for t, idf in zip(terms, idfs, strict=True) if idf > 0]
    if not scored:
        return []
    tfs = ", ".join(f"len(list_filter(toks, lambda x: x = ?)) AS tf{i}" for i in range(len(scored)))
    parts = " + ".join(
        f"(CASE WHEN tf{i} = 0 THEN 0"
        f" ELSE (CAST({idf} AS HUGEINT) * 11 * tf{i}) // (5 * tf{i} + 6) END)"
        for i, (_, idf) in enumerate(scored)
    )
    sql = f"""
        SELECT {_SPAN_COLUMNS}, score FROM (
            SELECT *, {parts} AS score FROM (SELECT *, {tfs} FROM {_MATCHES})
        ) WHERE score > 0 ORDER BY (toks = ?::VARCHAR[]) DESC, score DESC, {_ORDER} LIMIT {k}
    """
    rows = conn.execute(sql, [*(t for t, _ in scored), list(words)]).fetchall()
    return [_span(row, via="bm25") for row in rows]


def _span(row: Sequence[Any], *, via: str) -> Span:
    physical, logical, eid, source, kind, subject, line, rank, *score = row
    return Span(
        id=bytes(eid).hex(),
        hlc=(int(physical), int(logical)),
        source=source_name(int(source)),
        kind=str(kind),
        subject=str(subject),
        line=ERASED_TEXT if line is None else str(line),
        rank=int(rank),
        score=int(score[0]) if score else 0,
        via=via,
        erased=line is None,
    )


def _strata(conn: duckdb.DuckDBPyConnection) -> tuple[Stratum, ...]:
    rows = conn.execute(
        f"""
        SELECT w.stratum, c.n, w.physical_ns, w.logical FROM {_TABLE} w
        JOIN (SELECT stratum, count(*) AS n FROM {_TABLE} GROUP BY stratum) c USING (stratum)
        WHERE w.rank = 0 ORDER BY w.stratum
        """
    ).fetchall()
    return tuple(Stratum(str(s), int(n), (int(p), int(lg))) for s, n, p, lg in rows)


def _fill_order(strata: Iterable[Stratum], named: Sequence[str]) -> list[str]:
    """Named strata in mention order, then the rest: most recently active first, then name."""
    present = {s.name for s in strata}
    first = [name for name in named if name in present]
    rest = sorted(
        (s for s in strata if s.name not in first),
        key=lambda s: (-s.newest[0], -s.newest[1], s.name),
    )
    return first + [s.name for s in rest]


def _fill(
    conn: duckdb.DuckDBPyConnection, order: list[str], named: int, taken: list[Span], slots: int
) -> list[Span]:
    if slots <= 0 or not order:
        return []
    sql = f"""
        SELECT {_SPAN_COLUMNS} FROM {_TABLE}
        WHERE NOT list_contains(?::BLOB[], id)
        ORDER BY list_position(?::VARCHAR[], stratum) > ?, rank,
            list_position(?::VARCHAR[], stratum)
        LIMIT {slots}
    """
    ids = [bytes.fromhex(s.id) for s in taken]
    rows = conn.execute(sql, [ids, order, named, order]).fetchall()
    return [_span(row, via="fill") for row in rows]


def _recent_observations(
    conn: duckdb.DuckDBPyConnection, params: RetrievalParams, complete: bool
) -> list[tuple[Any, ...]]:
    """The log's newest observations, from the window when it is sure to hold them."""
    sql = (
        "SELECT source, trust, physical_ns, logical FROM {} WHERE kind = 'observation' "
        f"ORDER BY {_ORDER} LIMIT {params.salience_window}"
    )
    if "observation" in params.kinds:
        rows = conn.execute(sql.format(_TABLE)).fetchall()
        if complete or len(rows) == params.salience_window:
            return rows
    return conn.execute(sql.format("events")).fetchall()


def _salience(
    conn: duckdb.DuckDBPyConnection, params: RetrievalParams, complete: bool
) -> dict[str, Any] | None:
    """The §4 projection at the log's newest observation (the ``salience`` view's last row)."""
    recent = _recent_observations(conn, params, complete)
    if not recent:
        return None
    rows = conn.execute(
        "SELECT source, count(*) FROM events WHERE kind = 'observation' GROUP BY source"
    ).fetchall()
    counts = {int(s): int(n) for s, n in rows}
    oldest_first = [(int(s), int(t)) for s, t, _, _ in reversed(recent)]
    projection = _project(oldest_first, counts, params.salience_window)
    return {**projection, "hlc": [int(recent[0][2]), int(recent[0][3])]}


def _project(
    oldest_first: list[tuple[int, int]], counts: dict[int, int], window: int
) -> dict[str, Any]:
    """Restore an observer to just before the newest observation, then observe it."""
    source, trust = oldest_first[-1]
    before = {**counts, source: counts[source] - 1}
    observer = Observer(window)
    observer.restore(
        {
            "v": 1,
            "recent": [[s, t] for s, t in oldest_first[:-1]],
            "counts": sorted([s, n] for s, n in before.items() if n > 0),
        }
    )
    projection = observer.observe(source, trust)
    return {
        "source": source_name(source),
        **projection.milli(),
        "window": window,
        "observations": sum(counts.values()),
    }


def _payloads(conn: duckdb.DuckDBPyConnection, spans: Sequence[Span]) -> dict[str, Any]:
    if not spans:
        return {}
    rows = conn.execute(  # from the log: the window keeps no payloads (it holds thousands)
        "SELECT id, payload FROM events WHERE physical_ns >= ? AND list_contains(?::BLOB[], id)",
        [min(s.hlc[0] for s in spans), [bytes.fromhex(s.id) for s in spans]],
    ).fetchall()
    return {
        bytes(eid).hex(): None if payload is None else decode_payload(bytes(payload))
        for eid, payload in rows
    }


def retrieve(
    conn: duckdb.DuckDBPyConnection,
    query: str,
    params: RetrievalParams | None = None,
    *,
    first: Sequence[str] = (),
) -> Retrieval:
    """Build the envelope for ``query`` over the ``events`` view of ``conn``.

    ``first`` names strata the fill serves before those the query's words name (the cascade
    passes the stratum of the Tier-0 intent the query matches).
    """
    params = params or RetrievalParams()
    complete = _create_window(conn, params)
    terms = query_terms(query)
    _create_matches(conn, terms)
    total, holding = _count_holding(conn, terms)
    idfs = [idf_fixed(total, n) for n in holding]
    hits = _hits(conn, terms, idfs, params.k, tokenize(query))
    strata = _strata(conn)
    named = named_strata(query, first)
    order = _fill_order(strata, named)
    filled = _fill(conn, order, sum(1 for s in named if s in order), hits, params.k - len(hits))
    spans = (*hits, *filled)
    envelope = Envelope(
        query=query,
        terms=terms,
        named=named,
        params=params,
        spans=spans,
        window_spans=total,
        complete=complete,
        strata=strata,
        salience=_salience(conn, params, complete),
    )
    return Retrieval(envelope, _payloads(conn, spans))
