"""DuckDB over the log: an ``events`` view (sealed segments + unsealed tail) and projections.

In ``events``, ``erased`` is true for an event whose payload and line were erased by
``nerve forget`` or retention: its ``payload``, ``line`` and ``data`` are NULL because they
are gone, not because they were empty (an empty payload or line is ``''``, never NULL).

``all_events`` is ``events`` and every other device's events (the peer logs ``nerve sync``
keeps under ``data/sync/peers``), each row with its ``device``: the name the device took
in the sync group, or its node when it has none. ``events`` and the projections stay this
device's own log, so a projection is deterministic over one log.

Each ``projections/*.sql`` file holds one plain SELECT and becomes a view named after the
file. Workspace projections load after the bundled ones and may replace them. Settings from
nerve.yaml reach them as the one-row table ``nerve_settings`` (``attention_window``), so the
same SQL runs in plain DuckDB, e.g. in a file ``nerve export --duckdb`` wrote.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3
import duckdb
import pyarrow as pa

from nerve.canonical import canonical_json, jsonable, loads_bounded
from nerve.errors import ConfigError, EventError, UsageError
from nerve.events import (
    BOOKKEEPING_MACRO,
    NERVE_SOURCE,
    NERVE_SOURCE_NAME,
    SourceClass,
    bookkeeping_sql,
)
from nerve.log.crypt import is_encrypted
from nerve.log.reader import Snapshot, snapshot

_SOURCE_NAMES = ", ".join(f"'{s.name.lower()}'" for s in SourceClass)
_TRUST_NAMES = "'Attested', 'FirstParty', 'Inferred', 'Untrusted'"

# A segment stores payload_cid only for erased rows (nerve.log.codec.stored_form); nerve's
# connections compute the rest with this function. Plain DuckDB has no blake3: there the
# column is NULL except on erased rows.
BLAKE3_UDF = "nerve_blake3"
COMPUTED_CID = f"coalesce(payload_cid, {BLAKE3_UDF}(payload))"


def event_columns(cid: str = COMPUTED_CID) -> str:
    """The ``events`` columns over stored rows; ``cid`` is the SQL for ``payload_cid``."""
    return f"""\
    physical_ns, logical::BIGINT AS logical, node, kind, subject, source::BIGINT AS source,
    CASE WHEN source = {NERVE_SOURCE} THEN '{NERVE_SOURCE_NAME}'
         WHEN source >= 1024 THEN 'vendor:' || source::VARCHAR
         ELSE [{_SOURCE_NAMES}][source + 1] END AS source_name,
    trust::INTEGER AS trust, [{_TRUST_NAMES}][trust + 1] AS trust_name,
    valid_time_ns, {cid} AS payload_cid, payload, line, id,
    make_timestamp(physical_ns // 1000) AS ts,
    TRY(decode(payload)::JSON) AS data,
    line IS NULL AS erased
"""


EVENT_COLUMNS = event_columns()
EVENTS_VIEW = """
CREATE OR REPLACE {kind}VIEW events AS
SELECT
{columns}FROM {source}
"""


EVENTS_IN_TIME = (
    "(SELECT * FROM events WHERE valid_time_ns >= ? AND valid_time_ns < ? UNION ALL "
    "SELECT * FROM events WHERE valid_time_ns IS NULL AND physical_ns >= ? AND physical_ns < ?)"
)
"""The ``events`` whose time, ``coalesce(valid_time_ns, physical_ns)``, is in a half-open
range (its parameters: :func:`time_args`). The same rows as a filter on the ``coalesce``, but
as two scans DuckDB skips row groups in by their column statistics, where a filter on the
``coalesce`` reads every row group of the log."""


ALL_EVENTS = "all_events"


@dataclass(frozen=True)
class Devices:
    """What ``all_events`` adds to ``events``: this device's name (``''``: its rows name
    their node), node → name of the others, and ``source``, SQL naming the peers' stored
    rows (None: no peer rows)."""

    own: str = ""
    names: Mapping[str, str] | None = None
    source: str | None = None


def device_logs(log_root: Path) -> tuple[str, dict[str, str], list[Path]]:
    """This device's name in its sync group (``''`` when unnamed or in none), node → name of
    each peer that sent one, and the peer logs, as ``nerve sync`` keeps them beside the log
    (``data/sync``: ``group.json``, ``peers/<token>/device.json`` and ``peers/<token>/log``)."""
    import json

    folder = log_root.parent / "sync"
    own, names, roots = "", {}, []
    with contextlib.suppress(OSError, ValueError, AttributeError):
        own = str(json.loads((folder / "group.json").read_text()).get("device") or "")
    peers = folder / "peers"
    for entry in sorted(peers.iterdir()) if peers.is_dir() else ():
        if not (entry / "log").is_dir():
            continue
        roots.append(entry / "log")
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            body = json.loads((entry / "device.json").read_text())
            names[str(body["node"])] = str(body.get("device") or body["node"])
    return own, names, roots


def register_peers(conn: duckdb.DuckDBPyConnection, roots: Sequence[Path]) -> str | None:
    """Each peer log's rows as it is now (its tail registered as ``_peer_tail_<i>``); the
    SQL naming them all, or None when there is no peer log."""
    parts = []
    for i, root in enumerate(roots):
        snap = snapshot(root)
        if snap.files:
            parts.append(f"SELECT * FROM {parquet_sql(snap.files)}")
        conn.register(f"_peer_tail_{i}", snap.tail)
        parts.append(f"SELECT * FROM _peer_tail_{i}")
    return "(" + " UNION ALL ".join(parts) + ")" if parts else None


def _all_events_sql(kind: str, cid: str, devices: Devices) -> str:
    own = _quoted(devices.own) if devices.own else "node"
    view = f"CREATE OR REPLACE {kind}VIEW {ALL_EVENTS} AS\nSELECT *, {own} AS device FROM events"
    if devices.source is None:
        return view
    named = " ".join(
        f"WHEN {_quoted(node)} THEN {_quoted(name)}"
        for node, name in sorted((devices.names or {}).items())
    )
    device = f"CASE node {named} ELSE node END" if named else "node"
    return (
        f"{view}\nUNION ALL\nSELECT *, {device} AS device FROM "
        f"(SELECT\n{event_columns(cid)}FROM {devices.source})"
    )


def time_args(start_ns: int, end_ns: int) -> list[int]:
    """The parameters of :data:`EVENTS_IN_TIME` for times in ``[start_ns, end_ns)``."""
    return [start_ns, end_ns, start_ns, end_ns]


def register_blake3(conn: duckdb.DuckDBPyConnection) -> None:
    """``nerve_blake3(blob)``: the payload address, for the rows that do not store it."""
    from duckdb.func import ARROW

    conn.create_function(BLAKE3_UDF, _blake3_column, ["blob"], "blob", type=ARROW)


def _blake3_column(values: pa.Array) -> pa.Array:
    from nerve.log.codec import hash_each

    digests = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(32), len(values), [None, pa.py_buffer(hash_each(values))]
    ).cast(pa.binary())
    if values.null_count:
        return pa.compute.if_else(pa.compute.is_null(values), pa.scalar(None, pa.binary()), digests)
    return digests


@dataclass(frozen=True)
class Projection:
    name: str
    path: Path
    sql: str


DEFAULT_SETTINGS: dict[str, int] = {"attention_window": 64}
_QUERY_HINT = 'e.g. nerve query "SELECT kind, count(*) FROM events GROUP BY ALL"'


def load_projections(folders: Iterable[Path]) -> list[Projection]:
    """Every ``*.sql`` in the folders; a later folder's file replaces an earlier one's."""
    found: dict[str, Projection] = {}
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.glob("*.sql")):
                sql = path.read_text(encoding="utf-8").strip().rstrip(";")
                found[path.stem] = Projection(path.stem, path, sql)
    return list(found.values())


def parquet_sql(files: Sequence[Path]) -> str:
    """``read_parquet([...])`` over the files, by the paths given (at least one); an
    encrypted segment by its ``nerveenc://`` URI (see :mod:`nerve.encfs`)."""
    from nerve.encfs import uri

    encrypted = bool(files) and is_encrypted(files[0].parent.parent)
    names = ", ".join(_quoted(uri(p) if encrypted else str(p)) for p in files)
    return f"read_parquet([{names}])"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


TAIL = "_tail"
"""The name :func:`register_snapshot` gives the snapshot's tail on a connection."""


def source_sql(snap: Snapshot) -> str:
    """SQL naming every row of the snapshot: its segment files, then the tail as :data:`TAIL`."""
    parts = [f"SELECT * FROM {parquet_sql(snap.files)}"] if snap.files else []
    parts.append(f"SELECT * FROM {TAIL}")
    return "(" + " UNION ALL ".join(parts) + ")"


def register_snapshot(conn: duckdb.DuckDBPyConnection, snap: Snapshot) -> None:
    """What :func:`source_sql` names: the tail as :data:`TAIL`, and for an encrypted log the
    file system its segments are read through (:mod:`nerve.encfs`)."""
    conn.register(TAIL, snap.tail)
    if is_encrypted(snap.paths.root):
        conn.execute("SET temp_directory = ''")  # decrypted rows never spill to disk
        if snap.files:
            from nerve.encfs import register

            register(conn)


def connect(
    log_root: Path,
    projection_dirs: Sequence[Path] = (),
    settings: Mapping[str, Any] | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with ``events`` and every projection as views."""
    snap = snapshot(log_root)
    conn = duckdb.connect()
    with contextlib.suppress(duckdb.InvalidInputException):  # refused inside Jupyter
        conn.execute("SET enable_progress_bar_print = false")  # DuckDB prints it on stdout
    register_snapshot(conn, snap)
    own, names, roots = device_logs(log_root)
    devices = Devices(own, names, register_peers(conn, roots))
    define_views(
        conn, source_sql(snap), load_projections(projection_dirs), settings, devices=devices
    )
    conn.execute(
        f"CREATE TEMP TABLE {SEGMENTS_TABLE} AS SELECT unnest(?::VARCHAR[]) AS source",
        [[parquet_sql([path]) for path in snap.files]],
    )
    return conn


SEGMENTS_TABLE = "nerve_segments"
"""On a connection :func:`connect` opened: each sealed segment ``events`` reads, oldest
first, as the SQL that reads it alone, ``read_parquet(['…'])`` (the rest of ``events`` is the
tail, ``_tail``)."""


def segment_sources(conn: duckdb.DuckDBPyConnection) -> list[str] | None:
    """What :data:`SEGMENTS_TABLE` holds, or None on a connection whose ``events`` are not
    the log's segments and tail (one made by :func:`define_views` over other rows)."""
    try:
        rows = conn.execute(f"SELECT source FROM {SEGMENTS_TABLE} ORDER BY rowid").fetchall()
    except duckdb.CatalogException:
        return None
    return [str(source) for (source,) in rows]


_ROW_GROUPS = (
    "SELECT row_group_num_rows, TRY_CAST(stats_min AS BIGINT) FROM parquet_metadata({}) "
    "WHERE path_in_schema = 'physical_ns' ORDER BY row_group_id DESC"
)


def newest_floors(conn: duckdb.DuckDBPyConnection, rows: int) -> list[int]:
    """``physical_ns`` bounds at or above which the newest row groups of the sealed segments
    hold at least ``rows`` rows, then four and sixteen times as many (fewer when the log is
    smaller; none on a connection without :data:`SEGMENTS_TABLE`), from the files' column
    statistics. A query for the newest ``rows`` events may read only the rows at or above a
    floor (DuckDB skips the other row groups), and needs a lower one, or none, only when it
    finds fewer than it wants there."""
    sources = segment_sources(conn) or []
    floors, held, wanted = [], 0, rows
    for source in reversed(sources):
        for count, floor in _row_groups(conn, source):
            held += count
            if held >= wanted and floor is not None:
                floors.append(int(floor))
                wanted *= 4
                if len(floors) == 3:
                    return floors
    return floors


_GROUPS: dict[str, list[tuple[int, int | None]]] = {}


def _row_groups(conn: duckdb.DuckDBPyConnection, source: str) -> list[tuple[int, int | None]]:
    """A sealed segment's row groups, newest first: rows and lowest ``physical_ns``, read from
    its metadata once (a segment's file is named by its bytes' blake3 and never changes)."""
    found = _GROUPS.get(source)
    if found is None:
        metadata = _ROW_GROUPS.format(source.removeprefix("read_parquet(").removesuffix(")"))
        found = [(int(count), None if floor is None else int(floor))
                 for count, floor in conn.execute(metadata).fetchall()]  # fmt: skip
        if len(_GROUPS) > 100_000:  # segments a long-lived process no longer reads
            _GROUPS.clear()
        _GROUPS[source] = found
    return found


def define_views(
    conn: duckdb.DuckDBPyConnection,
    source: str,
    projections: list[Projection],
    settings: Mapping[str, Any] | None = None,
    *,
    temp: bool = True,
    devices: Devices | None = None,
) -> list[str]:
    """``nerve_settings``, the ``nerve_bookkeeping(kind)`` macro (true for nerve's own
    records, :data:`nerve.events.BOOKKEEPING_KINDS`), ``events`` over ``source`` (SQL naming
    the stored rows), then each projection; the names of the views made. ``temp=False``
    stores them in the database, for plain DuckDB: there ``payload_cid`` is as stored (see
    ``BLAKE3_UDF``). ``settings["categories"]`` (rows of :func:`nerve.categories.rule_rows`)
    fill ``nerve_categories``, which ``focus_spells`` reads (:mod:`nerve.categories`).
    ``all_events`` is ``events`` with a ``device`` column, and the peers' rows ``devices``
    names (with none, ``events`` alone, each row's device its node; not made with
    ``temp=False``: an export holds one log): a caller that screens
    ``source`` screens ``devices.source`` the same way."""
    from nerve.categories import SPELLS_VIEW, define

    kind = "TEMP " if temp else ""
    given = dict(settings or {})
    rules = given.pop("categories", ())
    values = {**DEFAULT_SETTINGS, **given}
    columns = ", ".join(f"{int(value)} AS {name}" for name, value in values.items())
    conn.execute(f"CREATE OR REPLACE {kind}TABLE nerve_settings AS SELECT {columns}")
    conn.execute(
        f"CREATE OR REPLACE {kind}MACRO {BOOKKEEPING_MACRO}(kind) AS {bookkeeping_sql('kind')}"
    )
    if temp:
        register_blake3(conn)
    cid = COMPUTED_CID if temp else "payload_cid"
    conn.execute(EVENTS_VIEW.format(kind=kind, source=source, columns=event_columns(cid)))
    if temp:  # an export file holds this log alone: no all_events there
        conn.execute(_all_events_sql(kind, cid, devices or Devices()))
    define(conn, rules, kind)
    _create_views(conn, projections, kind)
    return ["events", *([ALL_EVENTS] if temp else []), SPELLS_VIEW, *(p.name for p in projections)]


def _create_views(
    conn: duckdb.DuckDBPyConnection, projections: list[Projection], kind: str
) -> None:
    """Create views, retrying so a projection may read another whatever the file order."""
    pending = list(projections)
    while pending:
        failed: list[tuple[Projection, Exception]] = []
        for proj in pending:
            try:
                conn.execute(f'CREATE OR REPLACE {kind}VIEW "{proj.name}" AS {proj.sql}')
            except duckdb.Error as exc:
                failed.append((proj, exc))
        if len(failed) == len(pending):
            first, error = failed[0]
            raise ConfigError(f"{first.path}: projection does not load: {error}")
        pending = [p for p, _ in failed]


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def run_query(conn: duckdb.DuckDBPyConnection, sql: str) -> QueryResult:
    try:
        rel = conn.execute(sql)
    except duckdb.Error as exc:
        raise query_failed(exc, sql, conn) from None
    if rel is None:  # DuckDB's answer to text holding no statement ("", ";", a comment)
        raise UsageError(f"the query {sql!r} holds no SQL statement", hint=_QUERY_HINT)
    columns = [d[0] for d in rel.description or []]
    return QueryResult(columns, rel.fetchall())


STREAM_BATCH_ROWS = 2048


class RowChunk:
    """One record batch of a result, turned into Python rows only when asked: a terminal
    shows the first rows and only counts the rest."""

    def __init__(self, batch: pa.RecordBatch, json_columns: frozenset[int]) -> None:
        self.batch = batch
        self.json_columns = json_columns

    @property
    def num_rows(self) -> int:
        return int(self.batch.num_rows)

    def rows(self, stop: int | None = None) -> list[tuple[Any, ...]]:
        """Rows in column order; JSON columns parsed, maps as objects (``stop`` rows at most)."""
        batch = self.batch if stop is None else self.batch.slice(0, stop)
        columns = [
            _column_values(batch.column(i), i in self.json_columns)
            for i in range(batch.num_columns)
        ]
        return list(zip(*columns, strict=True)) if columns else []


def _column_values(array: pa.Array, is_json: bool) -> list[Any]:
    values: list[Any] = array.to_pylist()
    if is_json:
        return [None if v is None else _json_value(v) for v in values]
    if _has_map(array.type):
        return [_maps_as_dicts(v, array.type) for v in values]
    return values


def _json_value(text: str) -> Any:
    """A JSON cell as its value; text nested past ``MAX_NESTING`` stays text (it is only
    ever in raw payload bytes, and no reader parses that deep)."""
    try:
        return loads_bounded(text, field="data")
    except EventError:
        return text


def _has_map(kind: pa.DataType) -> bool:
    if pa.types.is_map(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_has_map(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_map(kind.value_type)
    return False


def _maps_as_dicts(value: Any, kind: pa.DataType) -> Any:
    """A value of an Arrow type holding maps, with each map (pairs) as a dict."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return {str(k): _maps_as_dicts(v, kind.item_type) for k, v in value}
    if pa.types.is_struct(kind):
        return {
            kind.field(i).name: _maps_as_dicts(value[kind.field(i).name], kind.field(i).type)
            for i in range(kind.num_fields)
        }
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [_maps_as_dicts(v, kind.value_type) for v in value]
    return value


@dataclass
class QueryStream:
    """A result read a record batch at a time: the columns, then :meth:`chunks`."""

    columns: list[str]
    json_columns: frozenset[int]
    _reader: Any

    def chunks(self) -> Iterator[RowChunk]:
        while True:
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                return
            except (duckdb.Error, pa.ArrowException) as exc:
                raise query_failed(exc) from None
            if batch.num_rows:
                yield RowChunk(batch, self.json_columns)


def stream_query(
    conn: duckdb.DuckDBPyConnection, sql: str, *, batch_rows: int = STREAM_BATCH_ROWS
) -> QueryStream:
    """Run ``sql`` (the last statement's rows are the result) and read it lazily."""
    try:
        rel = conn.sql(sql)
        if rel is None:  # text holding no statement ("", ";", a comment)
            raise UsageError(f"the query {sql!r} holds no SQL statement", hint=_QUERY_HINT)
        json_columns = frozenset(i for i, t in enumerate(rel.types) if str(t) == "JSON")
        return QueryStream(list(rel.columns), json_columns, rel.to_arrow_reader(batch_rows))
    except duckdb.Error as exc:
        raise query_failed(exc, sql, conn) from None


def query_failed(
    exc: Exception, sql: str = "", conn: duckdb.DuckDBPyConnection | None = None
) -> UsageError:
    """DuckDB's complaint in one line, with the line and column in ``sql`` it points at;
    the hint names the ``events`` view's columns (read from ``conn``) and the help."""
    first, *rest = str(exc).splitlines()
    found = _POINTED.search(str(exc))
    if found and sql:
        first += _where(found, sql)
    notes = [x.strip() for x in rest if x.strip() and not _CARET.match(x) and x.strip("^ ")]
    return UsageError(f"query failed: {' '.join([first, *notes])}", hint=_columns_hint(conn))


_POINTED = re.compile(r"^LINE (\d+): (.*)\n( *)\^", re.MULTILINE)
_CARET = re.compile(r"^LINE \d+: ")


def _where(found: re.Match[str], sql: str) -> str:
    """`` (line L, column C)`` for DuckDB's ``LINE L: …`` and its caret, which may show
    only a window of a long line (``...`` at either end)."""
    number, shown = int(found[1]), found[2]
    caret = len(found[3]) - len(f"LINE {number}: ")
    lines = sql.splitlines()
    if not 0 < number <= len(lines):
        return ""
    if shown.startswith("..."):
        shown, caret = shown[3:], caret - 3
    start = lines[number - 1].find(shown.removesuffix("..."))
    return f" (line {number}, column {start + caret + 1})" if start >= 0 else f" (line {number})"


def _columns_hint(conn: duckdb.DuckDBPyConnection | None) -> str:
    """What the ``events`` view holds, and a query that runs."""
    try:
        found = conn.execute("SELECT * FROM events LIMIT 0").description if conn else None
    except duckdb.Error:
        found = None
    listed = f"the events view's columns: {', '.join(d[0] for d in found)}; " if found else ""
    return listed + _QUERY_HINT


def projection_lines(conn: duckdb.DuckDBPyConnection, name: str) -> list[bytes]:
    """A view's rows in canonical form and order: each row the JSON object ``{column:
    value}`` in RFC 8785 form (bytes as hex, times as ISO 8601, JSON columns as their parsed
    value, integers exact), the lines sorted by their bytes."""
    stream = stream_query(conn, f'SELECT * FROM "{name}"')
    return sorted(
        canonical_json(jsonable(dict(zip(stream.columns, row, strict=True))), field=name)
        for chunk in stream.chunks()
        for row in chunk.rows()
    )


def lines_digest(lines: Iterable[bytes]) -> str:
    """blake3 over each line followed by one ``\n`` byte (hex)."""
    hasher = blake3.blake3()
    for line in lines:
        hasher.update(line + b"\n")
    return hasher.hexdigest()


def projection_digest(conn: duckdb.DuckDBPyConnection, name: str) -> tuple[int, str]:
    """Row count and digest of a view's rows (:func:`projection_lines`), the same whatever
    the row order, the segmentation or the machine (conformance/README.md, "Projection
    digests")."""
    lines = projection_lines(conn, name)
    return len(lines), lines_digest(lines)
