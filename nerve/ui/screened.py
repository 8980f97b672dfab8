"""The stored rows as the privacy rules let them leave, for every page of ``nerve ui``.

A page searches, counts and shows the same rows: a row a drop rule withholds is not there,
a row a redaction changes is there with its redacted line and payload, and its id and
payload address keyed (:meth:`~nerve.privacy.screen.Screen.rows` screens every row here). So a
search runs over the redacted text only, and cannot tell that a hidden secret matched.

Most rows are left as they are by the rules. They are found in DuckDB, a column at a time:
only a row whose text holds what some detector's match must hold (:data:`MAY_MATCH`, a
superset of :func:`~nerve.privacy.detectors.candidates`), or one a regex or drop rule
applies to, is screened in Python. What that changes is the *overlay*: the stamps of the
rows it replaces and their screened rows. A sealed segment never changes (an erasure writes
a new file under a new name), so its overlay is kept per segment name and rules; the
unsealed tail's grows with it. :func:`source` is the SQL the ``events`` view reads.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from nerve.log.codec import EMPTY
from nerve.privacy.screen import OBSERVATION
from nerve.ui import duck

if TYPE_CHECKING:
    from nerve.privacy.screen import Screen

__all__ = [
    "MAY_MATCH",
    "PAYLOAD_TEXT",
    "Overlay",
    "fingerprint",
    "overlay",
    "register",
    "segment",
    "source",
]

# Whether a row's line or payload text may hold a built-in detector's match, in one RE2 pass
# each: what every match of a detector must hold (a token's prefix, the keyword of an
# assignment or a secret-named key, 13 digits of a card), or non-ASCII text (lower-casing
# may differ there), or an escape (which may hide any of them).
_MAY = (
    "PRIVATE KEY|glpat-|xox|sk-|A(?:KIA|SIA|BIA|CCA|3T)|eyJ|gh[pousr]_|github_pat_|://|\\\\"
    "|[Ss][Ee][Cc][Rr][Ee][Tt]|[Pp][Aa][Ss][Ss]|[Tt][Oo][Kk][Ee][Nn]|[Kk][Ee][Yy]"
)
_CARD = "[0-9](?:[ -]?[0-9]){12}"
MAY_MATCH = " OR ".join(
    f"regexp_matches({c}, '{_MAY}') OR regexp_matches({c}, '{_CARD}') OR strlen({c}) != length({c})"
    for c in ("line", "t", "subject")
)
PAYLOAD_TEXT = "coalesce(TRY(decode(payload)), '')"
_MAX_SEGMENTS = 4096


@dataclass(frozen=True)
class Overlay:
    """Rows the rules change: ``hidden`` (their stamps) are read from ``rows`` instead
    (withheld ones left out); every row at a hidden stamp is in ``rows``."""

    hidden: pa.Table  # physical_ns, logical
    rows: pa.Table  # the stored columns, line and payload screened
    ids: frozenset[str] = frozenset()  # stored ids (hex) of the rows screened: withheld or keyed

    @property
    def empty(self) -> bool:
        return bool(self.hidden.num_rows == 0)


_STAMPS = pa.schema([("physical_ns", pa.int64()), ("logical", pa.int64())])
NOTHING = Overlay(_STAMPS.empty_table(), EMPTY)


class _Cache:
    """Overlays of sealed segments by (name, rules); the tail's as far as it was read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.segments: OrderedDict[tuple[str, str], Overlay] = OrderedDict()
        self.tail: dict[str, tuple[bytes, int, Overlay]] = {}


_CACHE = _Cache()


def fingerprint(scr: Screen) -> str:
    """The rules a screen applies, as a key: an overlay holds for these rules only."""
    text = scr.policy.config.model_dump_json() + scr.shown_id(b"").hex()  # and the key
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def overlay(
    files: list[tuple[str, str]], tail: pa.Table, scr: Screen, *, whole: bool = False
) -> Overlay:
    """What the rules change in these segments (name, path) and tail rows, sealed segments'
    from the cache; ``whole``: these are all the log's segments, and the cache forgets the
    others (compacted, or rewritten by an erasure: their text must not outlive them)."""
    rules = fingerprint(scr)
    parts = [_segment(name, path, scr, rules) for name, path in files]
    parts.append(_tail(tail, scr, rules))
    if whole:
        live = {name for name, _ in files}
        with _CACHE.lock:
            for key in [k for k in _CACHE.segments if k[0] not in live]:
                del _CACHE.segments[key]
    found = [p for p in parts if not p.empty]
    if not found:
        return NOTHING
    made = Overlay(
        pa.concat_tables([p.hidden for p in found]),
        pa.concat_tables([p.rows for p in found], promote_options="permissive"),
        frozenset().union(*(p.ids for p in found)),
    )
    return _naming(made, [path for _, path in files], tail, scr)


def _naming(over: Overlay, paths: list[str], tail: pa.Table, scr: Screen) -> Overlay:
    """``over`` with nerve's records that name a screened row by id screened too (the id
    keyed: see :mod:`nerve.privacy.screen`), wherever they are stored. Read anew each time:
    a record in one segment may name a row another segment's rules screen."""
    if not over.ids:
        return over
    conn = duck.cursor()
    try:
        conn.register("_tail", tail)
        parts = [f"SELECT * FROM {duck.parquet(paths)}"] if paths else []
        raw = " UNION ALL BY NAME ".join([*parts, "SELECT * FROM _tail"])
        naming = conn.sql(
            f"SELECT * FROM ({raw}) WHERE kind <> '{OBSERVATION}' AND line IS NOT NULL AND "
            f"(list_has_any(regexp_extract_all({PAYLOAD_TEXT}, '[0-9a-f]{{64}}'), $ids) OR "
            f"list_has_any(regexp_extract_all({_HEX}, '5820([0-9a-f]{{64}})', 1), $ids))",
            params={"ids": sorted(over.ids)},
        ).to_arrow_table()
        if naming.num_rows == 0:
            return over
        conn.register("_naming", naming)
        conn.register("_over", over.rows)
        others = conn.sql(
            "SELECT * FROM _over o ANTI JOIN _naming n USING (physical_ns, logical)"
        ).to_arrow_table()
    finally:
        conn.close()
    stamps = naming.select(["physical_ns", "logical"]).cast(_STAMPS)
    rows = scr.rows(naming, over.ids)
    return Overlay(
        pa.concat_tables([over.hidden, stamps]),
        pa.concat_tables([others, rows], promote_options="permissive"),
        over.ids,
    )


def source(raw: str, over: Overlay) -> str:
    """SQL naming the rows as they may leave, over ``raw`` (the stored rows' SQL); the
    overlay must be registered as ``_hidden`` and ``_screened``."""
    if over.empty:
        return raw
    kept = f"SELECT r.* FROM {raw} r ANTI JOIN _hidden h USING (physical_ns, logical)"
    return f"({kept} UNION ALL BY NAME SELECT * FROM _screened)"


def register(conn: duckdb.DuckDBPyConnection, over: Overlay) -> None:
    if not over.empty:
        conn.register("_hidden", over.hidden)
        conn.register("_screened", over.rows)


def segment(name: str, path: str, scr: Screen) -> Overlay:
    """One sealed segment's overlay (kept while the segment is in the snapshots read)."""
    return _segment(name, path, scr, fingerprint(scr))


def _segment(name: str, path: str, scr: Screen, rules: str) -> Overlay:
    key = (name, rules)
    with _CACHE.lock:
        found = _CACHE.segments.get(key)
        if found is not None:
            _CACHE.segments.move_to_end(key)
            return found
    made = _screen(duck.parquet([path]), None, scr)
    with _CACHE.lock:
        _CACHE.segments[key] = made
        while len(_CACHE.segments) > _MAX_SEGMENTS:
            _CACHE.segments.popitem(last=False)
    return made


def _tail(tail: pa.Table, scr: Screen, rules: str) -> Overlay:
    """The tail's overlay: rows appended since the last read are screened, the rest kept
    while the tail starts with the same event (it only grows until it is sealed)."""
    if tail.num_rows == 0:
        return NOTHING
    first = bytes(tail.column("id")[0].as_py())
    with _CACHE.lock:
        known = _CACHE.tail.get(rules)
    done, before = 0, NOTHING
    if known is not None and known[0] == first and known[1] <= tail.num_rows:
        done, before = known[1], known[2]
    if done < tail.num_rows:
        fresh = _screen_here(tail.slice(done), scr)
        before = _joined(before, fresh)
        with _CACHE.lock:
            _CACHE.tail = {rules: (first, tail.num_rows, before)}
    return before


def _joined(a: Overlay, b: Overlay) -> Overlay:
    if a.empty or b.empty:
        return b if a.empty else a
    rows = pa.concat_tables([a.rows, b.rows], promote_options="permissive")
    return Overlay(pa.concat_tables([a.hidden, b.hidden]), rows, a.ids | b.ids)


def _screen_here(rows: pa.Table, scr: Screen) -> Overlay:
    """A few rows (the tail's new ones) screened in Python, each with capture's own quick
    test first: most rows need no more than a few substring tests."""
    names = ("physical_ns", "logical", "source", "kind", "subject", "line", "payload")
    changed: list[tuple[int, int]] = []
    for p, lg, source, kind, subject, line, payload in zip(
        *(rows.column(n).to_pylist() for n in names), strict=True
    ):
        if line is None:  # erased: its addresses are keyed
            changed.append((int(p), int(lg)))
            continue
        plan = scr.policy.plan(int(source), kind, subject)
        raw = bytes(payload or b"")
        if not plan.drops and plan.untouched(line, raw, subject):
            continue
        if _changes(scr, source, kind, subject, line, raw):
            changed.append((int(p), int(lg)))
    if not changed:
        return NOTHING
    at = set(changed)
    keep = [
        (int(p), int(lg)) in at
        for p, lg in zip(rows.column("physical_ns").to_pylist(), rows.column("logical").to_pylist(),
                         strict=True)
    ]  # fmt: skip
    stamps = pa.table(
        {"physical_ns": [p for p, _ in changed], "logical": [lg for _, lg in changed]},
        schema=_STAMPS,
    )
    return _made(stamps, rows.filter(pa.array(keep)), scr)


def _screen(table_sql: str, table: pa.Table | None, scr: Screen) -> Overlay:
    """Screen the rows that may change in Python: their stamps, and every row at them."""
    conn = duck.cursor()
    try:
        if table is not None:
            conn.register("_rows", table)
        keys = conn.execute(f"SELECT DISTINCT source::BIGINT, kind, subject FROM {table_sql}")
        modes = _modes(scr, keys.fetchall())
        erased = conn.execute(f"SELECT count(*) FROM {table_sql} WHERE line IS NULL").fetchall()
        if not any(modes.column("mode").to_pylist()) and not erased[0][0]:
            return NOTHING
        conn.register("_modes", modes)
        conn.execute(
            "CREATE TEMP TABLE c AS SELECT physical_ns, logical, source, kind, subject, line, "
            "payload FROM (SELECT * REPLACE (logical::BIGINT AS logical, source::BIGINT AS "
            f"source), {PAYLOAD_TEXT} AS t FROM {table_sql}) JOIN _modes USING (source, kind, "
            f"subject) WHERE line IS NULL OR mode = {_ALL} OR (mode = {_SOME} AND "
            f"({MAY_MATCH}))"
        )
        changed = [
            (p, lg)
            for p, lg, *row in conn.execute("SELECT * FROM c").fetchall()
            if _changes(scr, *row)
        ]
        if not changed:
            return NOTHING
        hidden = pa.table(
            {"physical_ns": [p for p, _ in changed], "logical": [lg for _, lg in changed]},
            schema=_STAMPS,
        )
        conn.register("_h", hidden)
        rows = conn.sql(
            f"SELECT s.* FROM {table_sql} s SEMI JOIN _h USING (physical_ns, logical)"
        ).to_arrow_table()
    finally:
        conn.close()
    return _made(hidden, rows, scr)


def _made(stamps: pa.Table, rows: pa.Table, scr: Screen) -> Overlay:
    """The overlay of ``rows`` (every stored row at ``stamps``): screened, and which of
    their stored ids the screen withheld or keyed."""
    shown = scr.rows(rows)
    ids = {bytes(i).hex() for i in rows.column("id").to_pylist()}
    ids -= {bytes(i).hex() for i in shown.column("id").to_pylist()}
    return Overlay(stamps, shown, frozenset(ids))


_SOME, _ALL = 1, 2
_HEX = "lower(hex(payload))"  # a CBOR payload (a chain link) names an id as bytes


def _modes(scr: Screen, keys: Sequence[tuple[Any, ...]]) -> pa.Table:
    """Per (source, kind, subject): whether every row is screened (``_ALL``: a drop or regex
    rule applies), only rows with a possible detector match (``_SOME``), or none (0)."""
    modes = []
    for source, kind, subject in keys:
        plan = scr.policy.plan(int(source), str(kind), str(subject))
        every = plan.drops or plan.redactor.rules or plan.prune
        modes.append(_ALL if every else _SOME if plan.redactor else 0)
    return pa.table({
        "source": pa.array([int(k[0]) for k in keys], pa.int64()),
        "kind": pa.array([str(k[1]) for k in keys], pa.string()),
        "subject": pa.array([str(k[2]) for k in keys], pa.string()),
        "mode": pa.array(modes, pa.int8()),
    })  # fmt: skip


def _changes(
    scr: Screen, source: int, kind: str, subject: str, line: str | None, payload: Any
) -> bool:
    if line is None:  # erased: its addresses are keyed
        return True
    return scr.changes(int(source), kind, subject, line, bytes(payload or b""))
