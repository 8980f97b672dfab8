"""Reading methods of the front door: streamed SQL, the tail, a sense's data, the snapshot."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

    from nerve.clock import Hlc
    from nerve.log.reader import Snapshot
    from nerve.log.select import TailFilter
    from nerve.query import QueryResult, QueryStream
    from nerve.tail import Tail
    from nerve.tail.batch import Batch
    from nerve.workspace import WorkspaceDir

__all__ = ["ReadOps", "StoredSense"]


@dataclass(frozen=True)
class StoredSense:
    """A sense's newest stored state as the log holds it: the canonical JSON text, and
    whether it could be decoded when it was stored."""

    sense: str
    text: str
    undecodable: bool

    def to_json(self) -> dict[str, Any]:
        return {"sense": self.sense, "state": self.text, "undecodable": self.undecodable}


class ReadOps:
    """What reads the log: mixed into :class:`nerve.door.core.Core`."""

    _dir: WorkspaceDir

    if TYPE_CHECKING:

        def connection(self) -> duckdb.DuckDBPyConnection: ...

        def new_connection(self) -> duckdb.DuckDBPyConnection: ...

    def query(self, sql: str) -> QueryStream:
        """Run ``sql`` over ``events`` and the projections and read its rows lazily, in
        Arrow batches (``nerve query``); a bad query is a ``UsageError`` naming DuckDB's
        complaint."""
        from nerve.query import stream_query

        return stream_query(self.connection(), sql)

    def rows(self, sql: str) -> QueryResult:
        """``sql``'s whole result: ``.columns`` and ``.rows`` (tuples)."""
        from nerve.query import run_query

        return run_query(self.connection(), sql)

    def _snapshot(self) -> Snapshot:
        """The log as it is now: live segments and the unsealed tail (``.count``,
        ``.newest``, ``.segments``, ``.tail``), read without the writer's lock."""
        from nerve.log.reader import snapshot

        return snapshot(self._dir.log_root)

    def _read_tail(
        self,
        *,
        count: int | None,
        filt: TailFilter,
        since: Hlc | None = None,
        until: Hlc | None = None,
        count_older: int = 0,
    ) -> Tail:
        """The last ``count`` events ``filt`` keeps (all if None), from ``since`` to
        ``until`` (both included, either open), as ``nerve tail`` shows them; ``.older``
        counts matching older ones up to ``count_older``, ``.newest`` is where a follow
        starts."""
        from nerve.tail import read_tail

        return read_tail(
            self._dir, count=count, filt=filt, since=since, until=until, count_older=count_older
        )

    def _read_devices(
        self,
        *,
        count: int | None,
        filt: TailFilter,
        since: Hlc | None = None,
        until: Hlc | None = None,
        device: str | None = None,
    ) -> Tail:
        """:meth:`_read_tail` over this log and every synced peer's (``tail --all-devices``)."""
        from nerve.tail import read_devices

        return read_devices(
            self._dir, count=count, filt=filt, since=since, until=until, device=device
        )

    def _follow_devices(
        self,
        filt: TailFilter,
        cursors: tuple[tuple[Path, Hlc], ...],
        device: str | None = None,
        *,
        poll_s: float = 0.2,
    ) -> Iterator[Batch]:
        """:meth:`_follow` over this log and every synced peer's, polled."""
        from nerve.tail import follow_devices

        return follow_devices(self._dir, filt=filt, cursors=cursors, device=device, poll_s=poll_s)

    def _follow(self, filt: TailFilter, since: Hlc, *, poll_s: float = 0.2) -> Iterator[Batch]:
        """Each batch of events ``filt`` keeps as it is stored after ``since``: pushed by
        the daemon when one runs, else read from the log every ``poll_s``."""
        from nerve.tail import follow

        return follow(self._dir, filt=filt, since=since, poll_s=poll_s)

    def _follow_decisions(self, *, poll_s: float = 0.2) -> Iterator[dict[str, Any]]:
        """Each attention decision as it is stored from now on: its payload, with the
        event's ``hlc`` (what ``nerve attend --follow`` prints)."""
        import json

        from nerve.attention.kinds import DECISION
        from nerve.log.select import TailFilter

        since = self._snapshot().newest
        for batch in self._follow(TailFilter(kinds=(DECISION,)), since, poll_s=poll_s):
            for line in batch.lines():
                event = json.loads(line)
                if isinstance(event.get("payload"), dict):
                    yield {**event["payload"], "hlc": event["hlc"]}

    def _filter_warnings(self, filt: TailFilter) -> list[str]:
        """A warning for each kind or source ``filt`` names that the log never held (with
        the nearest one it did)."""
        from nerve.tail import name_warnings

        return name_warnings(self._dir, filt)

    def _live_senses(self, *, timeout: float = 10) -> dict[str, dict[str, Any]]:
        """The running daemon's own figures per sense, by name (the log records a steady
        sense's state only at checkpoints); empty when no daemon answers."""
        from nerve.commands.daemon import ListSenses, Senses
        from nerve.errors import DaemonError
        from nerve.transport import connect

        def by_name(listed: Senses) -> dict[str, dict[str, Any]]:
            rows = listed.senses
            return {str(r["name"]): r for r in rows if isinstance(r, dict) and "name" in r}

        try:
            transport = connect(self._dir)
            return transport.either(ListSenses(), log=dict, read=by_name, timeout=timeout)
        except (DaemonError, KeyError, TypeError):
            return {}

    # -- one sense's data ------------------------------------------------------------------

    def _sense_state(self, name: str) -> StoredSense | None:
        """The newest ``sense.state`` of sense ``name``, or None if none is stored."""
        rows = (
            self.connection()
            .execute("SELECT state, undecodable FROM sense_state WHERE sense = ?", [name])
            .fetchall()
        )
        if not rows:
            return None
        text, undecodable = rows[0]
        return StoredSense(name, text, bool(undecodable))

    def _stored_senses(self) -> list[str]:
        """Every sense with a stored state, by name (what ``ws.sense(name).state()`` can show)."""
        rows = self.connection().execute("SELECT DISTINCT sense FROM sense_state").fetchall()
        return sorted(str(row[0]) for row in rows)

    def _sense_history(self, name: str, n: int = 20) -> QueryResult:
        """The newest ``n`` events about sense ``name`` (computes, errors, signals,
        observations), oldest first: ``hlc``, ``ts``, ``kind``, ``line``."""
        from nerve.query import QueryResult

        rows = (
            self.connection()
            .execute(
                "SELECT * FROM (SELECT physical_ns || '.' || logical AS hlc, ts, kind, line "
                "FROM events WHERE subject = ? ORDER BY physical_ns DESC, logical DESC LIMIT ?) "
                "ORDER BY hlc",
                [name, max(0, int(n))],
            )
            .fetchall()
        )
        return QueryResult(["hlc", "ts", "kind", "line"], rows)

    def _sense_schema(self, name: str) -> list[tuple[str, str, str]]:
        """``(view, column, type)`` of sense ``name``'s data: ``observations`` flattened,
        ``states``, and the views its ``senses/<name>/*.sql`` define."""
        from nerve.sensedata import sense_schema

        conn, views = self._sense_connection(name)
        return sense_schema(conn, views)

    def _sense_query(self, name: str, sql: str) -> QueryStream:
        """SQL over one sense's data (``observations``, ``states``, its own views), read
        lazily as ``ws.query`` does."""
        from nerve.query import stream_query

        conn, _ = self._sense_connection(name)
        return stream_query(conn, sql)

    def _sense_connection(self, name: str) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
        from nerve.errors import SenseError
        from nerve.runtime.senses import find_sense
        from nerve.sensedata import sense_views

        ws = self._dir
        configured = ws.config.senses.get(name) if ws.config_path.exists() else None
        try:
            folder = find_sense(ws, name, configured.path if configured else None).parent
        except SenseError:
            folder = None
        conn = self.new_connection()
        return conn, sense_views(conn, name, folder)
