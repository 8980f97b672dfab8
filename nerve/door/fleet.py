"""The fleet through the front door: set up, query, verify, maintain and report on the
Iceberg table every host ships to (``nerve fleet …``; ``ship`` is on the workspace itself)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve.door.nouns import Noun

if TYPE_CHECKING:
    from nerve.fleet.maintain import MaintainResult
    from nerve.fleet.query import FleetPlan
    from nerve.fleet.settings import FleetConfig
    from nerve.fleet.ship import ShipResult
    from nerve.fleet.verify import HostReport
    from nerve.fleet.warehouse import Resolved, Warehouse
    from nerve.query import QueryStream

__all__ = ["Fleet", "FleetAnswer", "FleetVerdict", "HostStatus"]


@dataclass(frozen=True)
class HostStatus:
    """One host of the fleet as ``nerve fleet status`` shows it: its name, when it last
    shipped (ns, None if never), the files and rows it has in the table, the ship races it
    lost and its last verify. ``fields`` keeps the whole row, whose other fields depend on
    the host: how far behind it is (from its head, or this host's own log) and, for this
    host only, the ships failed since the last good one (``failures``, ``failure``)."""

    host: str
    last_ship_ns: int | None
    files: int
    rows: int
    fields: dict[str, Any]

    @classmethod
    def of(cls, row: dict[str, Any]) -> HostStatus:
        return cls(row["host"], row["last_ship_ns"], row["files"], row["rows"], dict(row))

    def to_json(self) -> dict[str, Any]:
        return dict(self.fields)


@dataclass
class FleetAnswer:
    """A fleet query: which files it reads (``plan.read`` of ``plan.total``, ``warnings``)
    and its rows, read lazily; iterating the chunks to the end trims the local file cache."""

    plan: FleetPlan
    result: QueryStream
    cache: Path | None = None
    cache_bytes: int = 0

    @property
    def columns(self) -> list[str]:
        return list(self.result.columns)

    def chunks(self) -> Iterator[Any]:
        from nerve.fleet.query import trim_cache

        yield from self.result.chunks()
        if self.cache is not None and self.cache.is_dir():
            trim_cache(self.cache, self.cache_bytes)


@dataclass
class FleetVerdict:
    """``nerve fleet verify``: one report per host (``.ok``, ``.problems``, ``.notes``),
    the exit code that names the first kind of problem (0 when none), and the record
    written to ``data/fleet/verify.json``."""

    reports: list[HostReport]
    code: int
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, **self.record}


class Fleet(Noun):
    """The shared Iceberg table every host ships to (``ws.fleet``, ``nerve fleet …``)."""

    def init(self, settings: dict[str, Any]) -> tuple[Resolved, Warehouse]:
        """Write nerve.yaml's ``fleet:`` section (``warehouse``, ``catalog``, ``table``,
        ``host``, ``endpoint``, ``ship``, ``rest_signing``) and create the table."""
        from nerve.fleet.setup import init_fleet

        return init_fleet(self._writable(), settings)

    def config(self) -> FleetConfig:
        """nerve.yaml's ``fleet:`` section (``UsageError`` without one)."""
        from nerve.fleet.settings import fleet_config

        return fleet_config(self._dir)

    def host(self) -> str:
        """This host's name in the fleet table."""
        from nerve.fleet.warehouse import resolve

        return str(resolve(self.config(), self._dir.data).host)

    def cache(self) -> Path:
        """The folder fetched fleet files are kept in (``fleet.cache_mb`` bounds it)."""
        return self._dir.data / "fleet" / "cache"

    def warehouse(self) -> Warehouse:
        """The fleet table nerve.yaml names (``UsageError`` without a ``fleet:`` section)."""
        from nerve.fleet.settings import fleet_config
        from nerve.fleet.warehouse import open_warehouse, resolve

        return open_warehouse(resolve(fleet_config(self._dir), self._dir.data))

    def query(
        self,
        sql: str,
        *,
        since_ns: int | None = None,
        hosts: list[str] | None = None,
        on_plan: Callable[[FleetPlan], None] | None = None,
    ) -> FleetAnswer:
        """SQL over ``fleet_events`` (every host's shipped events and ``host``); DuckDB
        reads only the files whose times reach ``since_ns``, of ``hosts`` (all if None).
        ``on_plan`` sees which files will be read before the query runs. A plan made for
        the same table state is reused (``nerve.fleet.plancache``): the table is opened
        only when something must be planned or fetched."""
        from nerve.fleet.query import connect_fleet
        from nerve.fleet.settings import fleet_config
        from nerve.log.crypt import is_encrypted
        from nerve.query import stream_query

        config = fleet_config(self._dir)
        opened: list[Warehouse] = []

        def wh() -> Warehouse:
            if not opened:
                opened.append(self.warehouse())
            return opened[0]

        fleet = self._plan(wh, since_ns, hosts)
        if on_plan is not None:
            on_plan(fleet)
        limit_mb = config.cache_mb
        cache = self._dir.data / "fleet" / "cache" if limit_mb else None
        if is_encrypted(self._dir.log_root):
            cache = None  # the fetched files are other hosts' plaintext: none under data/
        result = stream_query(connect_fleet(wh, fleet, cache), sql)
        return FleetAnswer(fleet, result, cache, limit_mb * 1024 * 1024)

    def _plan(
        self, wh: Callable[[], Warehouse], since_ns: int | None, hosts: list[str] | None
    ) -> FleetPlan:
        from nerve.fleet import plancache
        from nerve.fleet.query import plan
        from nerve.fleet.settings import fleet_config
        from nerve.fleet.warehouse import resolve
        from nerve.log.crypt import is_encrypted

        resolved = resolve(fleet_config(self._dir), self._dir.data)
        folder = self._dir.data / "fleet"
        if is_encrypted(self._dir.log_root):  # nothing of other hosts kept under data/
            return plan(wh(), since_ns=since_ns, hosts=hosts)
        location = plancache.metadata_location(resolved)
        kept = plancache.cached(folder, location, since_ns, hosts) if location else None
        if kept is not None:
            return kept
        table = wh().table
        made = plan(wh(), since_ns=since_ns, hosts=hosts)
        if isinstance(table.metadata_location, str):  # the state this plan was made from
            plancache.keep(folder, resolved, table.metadata_location, made, hosts)
        return made

    def verify(
        self, *, hosts: list[str] | None = None, repin: bool = False, threads: int = 8
    ) -> FleetVerdict:
        """Check every host's files, signed head and digest against what it signed; with
        ``repin``, accept the named hosts' current keys; ``threads`` hosts at once.
        Recorded for ``fleet status``."""
        from nerve.canonical import canonical_json
        from nerve.chain.trust import default_trust_dir
        from nerve.fleet.status import verify_record_path
        from nerve.fleet.verify import exit_code, verify_fleet
        from nerve.fleet.warehouse import write_local

        trust = default_trust_dir().parent
        reports = verify_fleet(self.warehouse(), trust, hosts=hosts, repin=repin, threads=threads)
        record = {"time_ns": time.time_ns(), "hosts": [r.to_json() for r in reports]}
        write_local(verify_record_path(self._dir.data), canonical_json(record) + b"\n")
        return FleetVerdict(reports, exit_code(reports), record)

    def maintain(self, *, keep_s: float = 3600.0, grace_s: float = 3600.0) -> MaintainResult:
        """Rewrite manifests, expire snapshots older than ``keep_s``, remove unnamed files
        older than ``grace_s``; every host's newest snapshot (its signed head) is kept."""
        from nerve.fleet.maintain import maintain

        return maintain(self.warehouse(), keep_s=keep_s, grace_s=grace_s)

    def status(self) -> list[HostStatus]:
        """One row per host: last ship, files, rows, how far behind, conflicts, last verify."""
        from nerve.fleet.status import fleet_status

        ws = self._dir
        rows = fleet_status(
            self.warehouse(), local_host=self.host(), log_root=ws.log_root, data_dir=ws.data
        )
        return [HostStatus.of(row) for row in rows]

    def ship(self) -> ShipResult:
        """Ship sealed segments to the fleet warehouse (``nerve fleet ship``)."""
        from nerve.fleet.ship import ship

        return ship(self._writable())
