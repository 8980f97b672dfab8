"""Where a fleet lives: the catalog, the Iceberg table and its object store, opened from
the ``fleet:`` settings plus the environment (which alone holds secrets).

Layout under the table's location (``<warehouse>/<namespace>/<table>``), or under
``<files>/<namespace>/<table>`` when ``fleet.files`` is set (a REST catalog's table bucket
holds only Iceberg's own files)::

    hosts/<host>/segments/<blake3>.parquet   sealed segments, byte for byte as on the host
    hosts/<host>/manifest.jsonl              the host's manifest (a prefix of it, hash-chained)
    hosts/<host>/head.json                   its newest signed manifest head
"""

from __future__ import annotations

import configparser
import functools
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from nerve.errors import ConfigError, NerveError, UsageError
from nerve.fleet.settings import HOST_PATTERN, FleetConfig

__all__ = [
    "FleetError",
    "Warehouse",
    "host_of",
    "open_warehouse",
    "require_fleet",
    "resolve",
]

T = TypeVar("T")
COMMIT_DEADLINE_S = 600.0  # a ship keeps retrying lost races this long (a stampede drains)
BACKOFF_S = 0.05  # first retry's mean wait; doubles per lost race, capped below
BACKOFF_MAX_S = 10.0


class FleetError(NerveError):
    """The catalog, the table or the object store refused or failed (network, permissions)."""


@dataclass(frozen=True)
class Resolved:
    """Settings with defaults and the environment applied (secrets only in memory)."""

    warehouse: str
    catalog: str
    table: str
    host: str
    properties: dict[str, str]
    files: str | None = None  # where host folders go, when not under the table's location

    @property
    def namespace(self) -> str:
        return self.table.split(".", 1)[0]


def default_host(data_dir: Path) -> str:
    """This machine's name plus the workspace's own id: cloned machines share a hostname,
    never a workspace id, so two workspaces never ship as one host by default."""
    name = socket.gethostname().split(".", 1)[0] or "localhost"
    name = name if HOST_PATTERN.match(name[:54]) else "localhost"
    return f"{name[:54]}-{workspace_id(data_dir)}"


def workspace_id(data_dir: Path) -> str:
    """Eight random hex digits made once per workspace (``data/fleet/id``)."""
    path = data_dir / "fleet" / "id"
    try:
        text = path.read_text(encoding="ascii").strip()
        if len(text) == 8 and all(c in "0123456789abcdef" for c in text):
            return text
    except (OSError, UnicodeDecodeError):
        pass
    text = secrets.token_hex(4)
    write_local(path, text.encode() + b"\n")
    return text


def resolve(cfg: FleetConfig, data_dir: Path, environ: Mapping[str, str] | None = None) -> Resolved:
    """The catalog URI (``NERVE_FLEET_CATALOG`` wins), the host, and the FileIO properties."""
    env = os.environ if environ is None else environ
    catalog = env.get("NERVE_FLEET_CATALOG") or cfg.catalog or _default_catalog(cfg, data_dir)
    props = {"uri": catalog, "warehouse": cfg.warehouse}
    if cfg.warehouse.startswith("s3://"):
        props.update(_s3_properties(cfg, env))
    if cfg.rest_signing and catalog.startswith(("http://", "https://")):
        props.update(_sigv4_properties(cfg.rest_signing, props, env))
    host = cfg.host or default_host(data_dir)
    return Resolved(cfg.warehouse, catalog, cfg.table, host, props, cfg.files)


def _default_catalog(cfg: FleetConfig, data_dir: Path) -> str:
    """SQLite beside a local warehouse (so every workspace naming it shares it), else in
    this workspace's data folder (other hosts must then name a shared catalog)."""
    if cfg.warehouse.startswith("file://"):
        return f"sqlite:///{local_path(cfg.warehouse)}/catalog.db"
    return f"sqlite:///{data_dir / 'fleet' / 'catalog.db'}"


def _s3_properties(cfg: FleetConfig, env: Mapping[str, str]) -> dict[str, str]:
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if not (key and secret):
        key, secret = _credentials_file(cfg, env)
    props = {
        "s3.access-key-id": key,
        "s3.secret-access-key": secret,
        "s3.region": env.get("AWS_REGION") or cfg.region,
        "s3.connect-timeout": "10",
        "s3.request-timeout": "60",
    }
    endpoint = cfg.endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        props["s3.endpoint"] = endpoint
    if env.get("AWS_SESSION_TOKEN"):
        props["s3.session-token"] = env["AWS_SESSION_TOKEN"]
    return props


def _sigv4_properties(
    service: str, props: Mapping[str, str], env: Mapping[str, str]
) -> dict[str, str]:
    """A REST catalog that authenticates like S3 (SeaweedFS, Amazon S3 Tables, Glue): each
    request signed with the same keys."""
    signed = {
        "rest.sigv4-enabled": "true",
        "rest.signing-name": service,
        "rest.signing-region": props.get("s3.region") or env.get("AWS_REGION") or "us-east-1",
    }
    for name in ("access-key-id", "secret-access-key", "session-token", "region"):
        if props.get(f"s3.{name}"):
            signed[f"client.{name}"] = props[f"s3.{name}"]
    return signed


def _credentials_file(cfg: FleetConfig, env: Mapping[str, str]) -> tuple[str, str]:
    named = cfg.credentials_file or env.get("AWS_SHARED_CREDENTIALS_FILE")
    path = Path(named or "~/.aws/credentials").expanduser()
    hint = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or fleet.credentials_file"
    if not path.is_file():
        raise UsageError(
            f"no S3 credentials: not in the environment, and {path} is missing", hint=hint
        )
    if path.stat().st_mode & 0o077:
        raise ConfigError(
            f"{path}: credentials file is readable by others", hint=f"chmod 600 {path}"
        )
    parser = configparser.ConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not an INI credentials file: {exc}") from None
    section = env.get("AWS_PROFILE") or cfg.profile
    try:
        return parser[section]["aws_access_key_id"], parser[section]["aws_secret_access_key"]
    except KeyError as exc:
        raise ConfigError(f"{path}: profile [{section}] lacks {exc}", hint=hint) from None


def local_path(uri: str) -> Path:
    return Path(unquote(urlsplit(uri).path))


def host_of(file_path: str) -> str | None:
    """The host a registered file was shipped from (``.../hosts/<host>/segments/x.parquet``)."""
    parts = file_path.rsplit("/", 4)
    if len(parts) == 5 and parts[1] == "hosts" and parts[3] == "segments":
        return parts[2]
    return None


def segment_name(file_path: str) -> str:
    return file_path.rsplit("/", 1)[-1].removesuffix(".parquet")


class Warehouse:
    """The table and its files. Methods that write retry what the store lets them retry."""

    def __init__(self, resolved: Resolved, catalog: Any, table: Any) -> None:
        self.resolved = resolved
        self.catalog = catalog
        self.table = table
        self._files: tuple[int, list[Any]] | None = None
        self._shipped: tuple[Any, dict[str, tuple[Any, int]]] | None = None

    @property
    def location(self) -> str:
        return str(self.table.location()).rstrip("/")

    @property
    def files_root(self) -> str:
        """Where the host folders live: the table's location, or ``fleet.files``."""
        if self.resolved.files:
            return f"{self.resolved.files.rstrip('/')}/{self.resolved.table.replace('.', '/')}"
        return self.location

    def host_dir(self, host: str) -> str:
        return f"{self.files_root}/hosts/{host}"

    def segment_uri(self, host: str, name: str) -> str:
        return f"{self.host_dir(host)}/segments/{name}.parquet"

    def fs_path(self, uri: str) -> tuple[Any, str]:
        """The pyarrow file system and the path in it that ``uri`` names."""
        io = self.table.io
        scheme, netloc, path = io.parse_location(uri, io.properties)
        return io.fs_by_scheme(scheme, netloc), path

    def refresh(self) -> None:
        self.table = _load(self.catalog, self.resolved.table)

    # -- objects ----------------------------------------------------------------------

    def read(self, uri: str) -> bytes | None:
        """The object's bytes, or None when it does not exist."""
        try:
            with self.table.io.new_input(uri).open(seekable=False) as stream:  # one GET
                data: bytes = stream.read()
                return data
        except FileNotFoundError:
            return None
        except OSError as exc:
            if _not_found(exc):
                return None
            raise FleetError(f"cannot read {uri}: {exc}") from None

    def write(self, uri: str, data: bytes) -> None:
        """Put ``data`` whole. On a local warehouse: a temp file renamed into place, so a
        reader (or a kill) never sees part of it; an S3 PUT is already all or nothing."""
        if uri.startswith("file://"):
            try:
                write_local(local_path(uri), data)
            except OSError as exc:
                raise FleetError(f"cannot write {uri}: {exc.strerror or exc}") from None
            return
        try:
            with self.table.io.new_output(uri).create(overwrite=True) as stream:
                stream.write(data)
        except OSError as exc:
            raise FleetError(f"cannot write {uri}: {exc}") from None

    def delete(self, uri: str) -> None:
        try:
            self.table.io.delete(uri)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if not _not_found(exc):
                raise FleetError(f"cannot delete {uri}: {exc}") from None

    # -- the table --------------------------------------------------------------------

    def data_files(self) -> list[Any]:
        """Every data file the table's current snapshot holds (pyiceberg ``DataFile``s, one
        per manifest entry: a file registered twice is listed twice)."""
        return [task.file for task in self.scan_tasks()]

    def scan_tasks(self) -> list[Any]:
        """The full scan's tasks (a data file with the delete files that apply to it), as
        every Iceberg engine plans them; read once per snapshot."""
        for _ in range(5):
            snapshot = self.table.current_snapshot()
            if snapshot is None:
                return []
            if self._files is not None and self._files[0] == snapshot.snapshot_id:
                return self._files[1]
            try:
                self._files = (snapshot.snapshot_id, list(self.table.scan().plan_files()))
                return self._files[1]
            except OSError as exc:
                # `maintain` (here or on another host) expired this snapshot and removed
                # its manifests since the table was loaded: plan the current one instead
                if not (isinstance(exc, FileNotFoundError) or _not_found(exc)):
                    raise
                self.refresh()
                if self.table.current_snapshot() == snapshot:
                    raise FleetError(f"a manifest of the current snapshot is gone: {exc}") from None
        raise FleetError("the table's snapshots kept expiring while it was planned")

    def table_head(self, host: str) -> Any:
        """What the table registers for ``host`` (no manifest read): the signed
        ``Registration`` in its properties, set by the commit that registered the host's
        files; in a table shipped to before registrations moved there, the one in the
        host's newest snapshot (or a whole ``Head``, as older tables carry); or None."""
        metadata = self.table.metadata
        text = metadata.properties.get(REGISTRATION_PREFIX + host)
        if text is not None:
            return property_head(host, text)
        if self._shipped is None or self._shipped[0] is not metadata:
            self._shipped = (metadata, _newest_per_host(metadata.snapshots))
        found = self._shipped[1].get(host)
        return None if found is None else snapshot_head(host, found[0], found[1])

    def registrations(self) -> dict[str, str]:
        """host -> the registration property's text, for every host that has one."""
        props = self.table.metadata.properties
        return {
            k.removeprefix(REGISTRATION_PREFIX): v
            for k, v in props.items()
            if k.startswith(REGISTRATION_PREFIX)
        }

    def transaction(self) -> Any:
        """A transaction on the table that reads its metadata without a deep copy per read
        (pyiceberg copies the whole metadata on each of the ~20 reads of a commit, which
        grows with the snapshot count)."""
        return _transaction_class()(self.table)

    def commit(
        self,
        attempt: Callable[[Warehouse], T],
        *,
        lost: list[float] | None = None,
        fresh: bool = False,
    ) -> T:
        """Run ``attempt`` (which builds and commits one transaction) until the catalog takes
        it: another writer committing first, or SQLite busy, means reload and try again
        after a random wait that doubles per lost race (full jitter, so writers that lost
        together do not collide again). ``lost`` gets the seconds waited per lost race;
        ``fresh`` reloads the table first (a reload is cheaper than a commit bound to fail)."""
        from pyiceberg.exceptions import CommitFailedException
        from sqlalchemy.exc import OperationalError

        started, tries = time.monotonic(), 0
        if fresh:
            self.refresh()
        while True:
            try:
                done = attempt(self)
                _remember(self.table)  # as the commit left it, for the next load to find
                return done
            except OSError as exc:  # writing the table's own files (metadata, manifests)
                raise FleetError(
                    f"cannot write the table's files under {self.resolved.warehouse}: "
                    f"{exc.strerror or exc}; the commit was not made",
                    hint="free some space or check the disk, then ship again",
                ) from None
            except OperationalError as exc:
                self.drop_connections()
                if _disk_error(exc):  # not a race: retrying would spin until the deadline
                    raise FleetError(
                        f"cannot write the catalog {_safe(self.resolved.catalog)}: "
                        f"{exc.orig}; the commit was not made",
                        hint="free some space or check the disk, then ship again",
                    ) from None
                tries = self._lost(exc, started, tries, lost)
            except CommitFailedException as exc:
                tries = self._lost(exc, started, tries, lost)

    def drop_connections(self) -> None:
        """Close the SQLite catalog's pooled connections. After a failed commit SQLite may
        leave the transaction open ("may or may not be rolled back", its docs say), and
        SQLAlchemy returns such a connection to its pool as if clean: its write lock would
        hold every other writer of the catalog, in this process or another, for good."""
        from pyiceberg.catalog.sql import SqlCatalog

        if isinstance(self.catalog, SqlCatalog):  # a REST catalog holds no connections
            self.catalog.engine.dispose()

    def _lost(self, exc: Exception, started: float, tries: int, lost: list[float] | None) -> int:
        """Another writer won (or SQLite was busy): wait, reload; the count of races lost."""
        tries += 1
        elapsed = time.monotonic() - started
        if elapsed >= COMMIT_DEADLINE_S:
            raise FleetError(
                f"commit to {self.resolved.table} lost {tries} races in a row "
                f"over {elapsed:.0f} s: {exc}",
                hint="ships are too many at once: spread them (fleet.ship_interval)",
            ) from None
        wait = random.uniform(0, min(BACKOFF_MAX_S, BACKOFF_S * 2 ** min(tries, 20)))
        if lost is not None:
            lost.append(round(wait, 3))
        time.sleep(wait)
        self.refresh()
        return tries


# What SQLite says when its file cannot be written (as opposed to "database is locked").
_SQLITE_DISK = ("disk i/o error", "database or disk is full", "readonly database", "unable to open")


def _disk_error(exc: Exception) -> bool:
    text = str(getattr(exc, "orig", exc)).lower()
    return any(words in text for words in _SQLITE_DISK)


REGISTRATION_PREFIX = "nerve.registration."


def _newest_per_host(snapshots: list[Any]) -> dict[str, tuple[Any, int]]:
    """host -> (properties, id) of its newest snapshot carrying its registration (tables
    shipped to before registrations moved into the table's properties)."""
    newest: dict[str, tuple[Any, int]] = {}
    for snap in snapshots:  # oldest first
        props = snap.summary.additional_properties if snap.summary else {}
        if "nerve.host" in props:
            newest[props["nerve.host"]] = (props, snap.snapshot_id)
    return newest


def registration_value(text: str, time_ms: int, conflicts: int) -> str:
    """A registration property's value: the signed registration, then (unsigned, for
    ``fleet status``) when it was committed and the races its ship lost before."""
    return f"{text} {time_ms} {conflicts}"


def property_head(host: str, value: str) -> Any:
    """The signed registration in a registration property, or None when unreadable."""
    from nerve.fleet.head import HeadError, Registration

    try:
        return Registration.parse(host, value.split(" ", 1)[0], f"property of host {host!r}")
    except HeadError:
        return None


def property_note(value: str) -> tuple[int | None, int | None]:
    """(commit time in ms, races lost) from a registration property's value."""
    parts = value.split(" ")
    try:
        return int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        return None, None


def prepare_transaction(tx: Any) -> None:
    """What every registering commit first makes sure of. Segments carry no Iceberg field
    ids: a name mapping lets every engine read them. A table made before nerve retried
    its own commits gets that setting. And a table made before segments stored
    payload_cid for erased rows alone declares it required: it becomes optional (a
    compatible change) before such a file is registered."""
    metadata = tx.table_metadata
    if metadata.properties.get("commit.retry.num-retries") != "0":
        tx.set_properties(**{"commit.retry.num-retries": "0"})
    if metadata.name_mapping() is None:
        mapping = metadata.schema().name_mapping.model_dump_json()
        tx.set_properties(**{"schema.name-mapping.default": mapping})
    if tx.table_metadata.schema().find_field("payload_cid").required:
        with tx.update_schema() as update:
            update.update_column("payload_cid", required=False)
        tx.set_properties(**{"nerve.format": FORMAT})


@functools.cache
def _transaction_class() -> Any:
    from pyiceberg.table import Transaction

    class _Transaction(Transaction):
        """Metadata worked out once per staged change, and not deep-copied: pyiceberg's
        models are frozen, and this view is only read (the catalog applies the updates
        itself when the commit is sent)."""

        _seen: tuple[Any, Any, Any] | None = None

        @property
        def table_metadata(self) -> Any:
            base, updates = self._table.metadata, self._updates
            if not updates:
                return base
            if self._seen is None or self._seen[0] is not base or self._seen[1] is not updates:
                self._seen = (base, updates, _applied(base, updates))
            return self._seen[2]

    return _Transaction


def _applied(base: Any, updates: Any) -> Any:
    """``base`` with ``updates`` applied, as pyiceberg's ``update_table_metadata`` does
    less its final deep copy (its public form where the step it is made of is missing)."""
    try:
        from pyiceberg.table.update import _apply_table_update, _TableMetadataUpdateContext
    except ImportError:
        from pyiceberg.table.update import update_table_metadata

        return update_table_metadata(base, updates)
    context = _TableMetadataUpdateContext()
    metadata = base
    for update in updates:
        metadata = _apply_table_update(update, metadata, context)
    return metadata


def snapshot_head(host: str, props: Mapping[str, str], snapshot_id: int) -> Any:
    """The registration (or whole head) in a ship's snapshot properties, or None when it
    holds neither or cannot be read (verify reports such a host)."""
    from nerve.fleet.head import Head, HeadError, Registration

    where = f"snapshot {snapshot_id}"
    try:
        if props.get("nerve.registration"):
            return Registration.parse(host, props["nerve.registration"], where)
        if props.get("nerve.head.signed"):
            return Head.parse(props["nerve.head.signed"].encode(), where)
    except HeadError:
        return None
    return None


def busy_retry(read: Callable[[], T], *, seconds: float = 30.0) -> T:
    """``read`` again while a SQLite catalog is busy (another writer holds its lock)."""
    from sqlalchemy.exc import OperationalError

    deadline = time.monotonic() + seconds
    wait = 0.02
    while True:
        try:
            return read()
        except OperationalError as exc:
            if time.monotonic() > deadline:
                raise FleetError(f"the catalog stayed busy for {seconds:.0f} s: {exc}") from None
            time.sleep(random.uniform(0, wait))
            wait = min(wait * 2, 1.0)


def _not_found(exc: OSError) -> bool:
    text = str(exc)
    return any(
        mark in text for mark in ("NoSuchKey", "Path does not exist", "404", "RESOURCE_NOT_FOUND")
    )


def write_local(path: Path, data: bytes, *, sync: bool = True) -> None:
    """``data`` whole at ``path`` (a temp file renamed into place), owner-only; ``sync``
    (the default): the file is fsynced before the rename and its folder after it, so a
    crash leaves the old bytes or the new, under the name."""
    from nerve import fsio

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = fsio.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        try:
            fsio.write_all(fd, data, site="fleet.write", path=tmp)
            if sync:
                fsio.fsync(fd, site="fleet.fsync", path=tmp)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a write that failed leaves nothing behind
        raise
    if sync:
        fsio.fsync_dir(path.parent, site="fleet.fsync")


FORMAT = "nerve-segment-v3"  # v3: payload_cid stored for erased rows only


def table_schema() -> Any:
    """The Iceberg schema: a segment's columns; payload and line optional (erasures), and
    payload_cid too (stored for erased rows only; elsewhere it is blake3(payload))."""
    from nerve.log.codec import STORED_SCHEMA

    return STORED_SCHEMA


# Bounds (min/max) only for the columns a filter prunes by (the segment writer keeps
# statistics for those alone); the rest carry no metrics.
TABLE_PROPERTIES = {
    "write.metadata.metrics.default": "none",
    "write.metadata.metrics.column.physical_ns": "full",
    "write.metadata.metrics.column.logical": "full",
    "write.metadata.metrics.column.kind": "truncate(16)",
    "write.metadata.metrics.column.source": "full",
    "commit.manifest-merge.enabled": "true",
    # A lost race comes back to nerve, which re-reads what the host registered before
    # trying again (pyiceberg's own retry would re-send the same files) and counts it.
    "commit.retry.num-retries": "0",
    "nerve.format": FORMAT,
}


def require_fleet(*, rest: bool = False) -> None:
    """Refuse, with the install command, when the ``fleet`` extra is missing."""
    import importlib.util

    missing = [m for m in ("pyiceberg", "sqlalchemy") if importlib.util.find_spec(m) is None]
    if rest and importlib.util.find_spec("boto3") is None:
        missing.append("boto3 (to sign REST catalog requests)")
    if missing:
        raise UsageError(
            f"nerve fleet needs {' and '.join(missing)}, which this install lacks",
            hint="install the fleet extra: .venv/bin/pip install -e '.[fleet]'",
        )


CATALOG_NAME = "nerve"  # the name pyiceberg files the table under in a SQL catalog
_CATALOGS: dict[tuple[str, ...], Any] = {}
_CATALOGS_LOCK = threading.Lock()


def _catalog(resolved: Resolved) -> Any:
    """One REST catalog client per settings and process: a process shipping many
    workspaces (a committer, the scale bench) opens it once, not per ship (its set-up is a
    config request and two boto3 sessions). A SQL catalog is opened each time: it is
    cheap, and a pooled connection would outlive a catalog file replaced meanwhile."""
    if not resolved.catalog.startswith(("http://", "https://")):
        return _open_catalog(resolved)
    key = (resolved.catalog, *sorted(f"{k}={v}" for k, v in resolved.properties.items()))
    with _CATALOGS_LOCK:
        if key not in _CATALOGS:
            _CATALOGS[key] = _open_catalog(resolved)
        return _CATALOGS[key]


def _open_catalog(resolved: Resolved) -> Any:
    if resolved.catalog.startswith(("http://", "https://")):
        return _rest_catalog(resolved)
    if resolved.catalog.startswith("sqlite:///"):
        Path(resolved.catalog.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    try:
        return _sql_catalog_class()(CATALOG_NAME, **resolved.properties)
    except Exception as exc:  # SQLAlchemy raises many kinds; all mean "cannot open"
        raise FleetError(f"cannot open the catalog {_safe(resolved.catalog)}: {exc}") from None


@functools.cache
def _sql_catalog_class() -> Any:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.table import Table

    class _SqlCatalog(SqlCatalog):
        """A load that finds the table where this process last saw it reuses that metadata
        (a metadata file never changes once written): one SELECT, no read and parse."""

        def _convert_orm_to_iceberg(self, orm_table: Any) -> Any:
            known = _METADATA.get(orm_table.metadata_location or "")
            if known is None or not orm_table.table_name:
                return super()._convert_orm_to_iceberg(orm_table)
            return Table(
                identifier=(
                    *self.identifier_to_tuple(orm_table.table_namespace),
                    orm_table.table_name,
                ),
                metadata=known,
                metadata_location=orm_table.metadata_location,
                io=self._load_file_io(known.properties, orm_table.metadata_location),
                catalog=self,
            )

    return _SqlCatalog


_METADATA: dict[str, Any] = {}  # metadata location -> its parsed metadata, the newest few


def _remember(table: Any) -> None:
    with _CATALOGS_LOCK:
        _METADATA[table.metadata_location] = table.metadata
        while len(_METADATA) > 4:
            _METADATA.pop(next(iter(_METADATA)))


def _rest_catalog(resolved: Resolved) -> Any:
    """An Iceberg REST catalog (``http(s)://``); the warehouse names its bucket or prefix."""
    from pyiceberg.catalog.rest import RestCatalog

    props = dict(resolved.properties)
    props["warehouse"] = resolved.warehouse
    try:
        return RestCatalog(CATALOG_NAME, **props)
    except Exception as exc:  # connection, HTTP and config errors alike mean "cannot open"
        raise FleetError(f"cannot open the catalog {_safe(resolved.catalog)}: {exc}") from None


def _load(catalog: Any, name: str) -> Any:
    """The table as the catalog holds it now, with the file IO of the last load when its
    settings are the same: each load makes a new one, and with it new S3 connections."""
    table = busy_retry(lambda: catalog.load_table(name))
    table.io = _shared_io(table.io)
    _remember(table)
    return table


_IOS: dict[tuple[Any, ...], Any] = {}


def _shared_io(io: Any) -> Any:
    """One file IO per set of settings in this process. The table's properties are among
    them; nerve's own (the hosts' registrations, changed by every commit) configure no IO."""
    own = sorted((k, v) for k, v in io.properties.items() if not k.startswith("nerve."))
    key = (type(io), *own)
    with _CATALOGS_LOCK:
        if key not in _IOS:
            if len(_IOS) >= 8:  # settings that keep changing: keep the newest few
                _IOS.pop(next(iter(_IOS)))
            _IOS[key] = io
        return _IOS[key]


def _safe(uri: str) -> str:
    parts = urlsplit(uri)
    return uri.replace(parts.password, "***") if parts.password else uri


def open_warehouse(resolved: Resolved, *, create: bool = False) -> Warehouse:
    """The catalog and table; ``create`` makes the namespace and table when missing."""
    require_fleet(rest="sigv4-enabled" in str(resolved.properties))
    from pyiceberg.exceptions import NoSuchTableError

    catalog = _catalog(resolved)
    try:
        if create:
            catalog.create_namespace_if_not_exists(resolved.namespace)
            table = catalog.create_table_if_not_exists(
                resolved.table, schema=table_schema(), properties=TABLE_PROPERTIES
            )
        else:
            table = _load(catalog, resolved.table)
    except NoSuchTableError:
        raise UsageError(
            f"no fleet table {resolved.table} in {_safe(resolved.catalog)}",
            hint="create it with `nerve fleet init --warehouse URI`",
        ) from None
    except OSError as exc:
        raise FleetError(f"cannot reach the warehouse {resolved.warehouse}: {exc}") from None
    return Warehouse(resolved, catalog, table)


@contextmanager
def ship_lock(data_dir: Path) -> Iterator[None]:
    """One ship at a time per workspace (the daemon's and a typed one)."""
    import fcntl

    folder = data_dir / "fleet"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / "ship.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise FleetError(
            f"cannot take the ship lock {folder / 'ship.lock'}: {exc.strerror or exc}",
            hint="free some space or check the disk, then ship again",
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
