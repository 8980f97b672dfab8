"""The workspace's operations, behind the front door (:class:`nerve.api.Workspace`).

:class:`Core` holds what a workspace does: opening and closing its DuckDB connection, emitting,
replaying and asking, and, as private methods, every operation the nouns of
:mod:`nerve.door.nouns` call (``ws.log.seal()`` is ``Core._seal``). A write goes through the
running daemon when one runs, else straight to the log (``nerve.transport.connect``
decides, in one place); reads open the log's files directly, as any reader may. Results are
typed (each has ``to_json()``) and every error is a :class:`~nerve.errors.NerveError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

from nerve.commands import Command, Reply
from nerve.commands.daemon import GetStatus, ListSenses, RotateKey, TriggerSense
from nerve.commands.log import Archive, Archived, Emitted, Forget
from nerve.door.reads import ReadOps
from nerve.errors import DaemonError, UsageError
from nerve.transport import connect
from nerve.workspace import WorkspaceDir as Folder

if TYPE_CHECKING:  # loaded by the methods that use them: a read or an emit loads only its own
    import duckdb
    import pyarrow as pa

    from nerve.attention.audit import Verdict
    from nerve.attention.service import Recomputed, ReplayResult
    from nerve.attention.settings import AttentionConfig
    from nerve.attention.whatif import WhatIf
    from nerve.clock import Hlc
    from nerve.events import Event
    from nerve.export import Export
    from nerve.flow.history import RunRecord
    from nerve.log.drafts import Draft
    from nerve.log.select import TailFilter
    from nerve.log.verify import VerifyReport
    from nerve.privacy.archive import ArchiveResult
    from nerve.privacy.forget import ForgetResult, Request
    from nerve.privacy.pause import PauseState
    from nerve.recall import AskResult
    from nerve.tail.batch import Batch

__all__ = ["Core", "Status"]


@dataclass(frozen=True)
class Status:
    """Whether a daemon runs for the workspace, and its health figures when one does (the
    fields ``nerve status --json`` prints: pid, uptime_s, events, senses, groups, ...)."""

    running: bool
    health: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"running": self.running, **self.health}


class Core(ReadOps):
    """One nerve workspace's operations: its log, its daemon if one runs, its configuration.

    The reads are mixed in from :class:`~nerve.door.reads.ReadOps`.
    """

    def __init__(self, folder: Folder, *, read_only: bool = False) -> None:
        self._dir = folder
        self.read_only = read_only
        self._conn: duckdb.DuckDBPyConnection | None = None

    @classmethod
    def create(cls, path: Path, *, encrypt: tuple[bytes, dict[str, object]] | None = None) -> Self:
        """Make a workspace at ``path`` with the default nerve.yaml (``UsageError`` if one
        is there); ``encrypt`` (a key-encryption key, its source) starts the log encrypted."""
        from nerve.workspace import init_workspace

        return cls(init_workspace(path, encrypt=encrypt))

    @classmethod
    def find(cls, path: Path | str | None = None, *, write: bool = False) -> Self:
        """The workspace a command means, found as :func:`open` finds it, opened for
        writing; ``write=False`` also accepts a folder holding only a log (a copy of
        ``data/``, an archive), as the CLI's reading commands do."""
        return cls(Folder.find(path, write=write))

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"nerve.open({str(self.root)!r}{mode})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def root(self) -> Path:
        return self._dir.root

    @property
    def log_root(self) -> Path:
        """The log's folder (``data/log``): segments, WAL and manifest."""
        return self._dir.log_root

    def close(self) -> None:
        """Close the DuckDB connection :meth:`sql` opened (a later query opens a new one)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _writable(self) -> Folder:
        """The folder, for a write: refused on a read-only open; the next query opens a
        new connection, so it sees what this write stores."""
        if self.read_only:
            raise UsageError(
                f"{self.root} was opened read-only; this writes to it",
                hint="nerve.open(path) without read_only=True",
            )
        self.close()
        return self._dir

    def _do(self, command: Command) -> Any:
        """Run a writing command the way the log is reached now (``nerve.transport``)."""
        return connect(self._writable()).do(command)

    # -- reading ------------------------------------------------------------------------

    def connection(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection (``events`` and every projection as views) :meth:`sql`
        runs on; opened on first use over the log as it is then, and again after a write
        through this workspace (:meth:`refresh` sees what others stored since). Temporary
        views made on it last until then."""
        if self._conn is None:
            self._conn = self._open_connection()
        return self._conn

    def new_connection(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection of the caller's own over the log as it is now (``events``
        and every projection), for temporary views or threads; the caller closes it."""
        return self._open_connection()

    def _open_connection(self) -> duckdb.DuckDBPyConnection:
        if not self.read_only:
            return self._dir.connect()  # makes data/ if missing, as the CLI does
        from nerve.query import connect

        folder = self._dir
        return connect(folder.log_root, folder.projection_dirs(), folder.settings())

    def refresh(self) -> None:
        """See events stored since the connection opened (temporary views are dropped)."""
        self.close()

    def sql(self, query: str, params: Mapping[str, Any] | list[Any] | None = None) -> Any:
        """A DuckDB relation over ``events`` and the projections (``.df()``, ``.pl()``,
        ``.arrow()``, ``.fetchall()``); with ``params``, ``$name`` / ``?`` placeholders."""
        return self.connection().sql(query, params=params)

    def _events(
        self,
        *,
        kinds: Iterable[str] = (),
        sources: Iterable[str] = (),
        last: int | None = None,
        since: Hlc | None = None,
        bookkeeping: bool = True,
    ) -> pa.Table:
        """Stored events as an Arrow table, oldest first: of these ``kinds`` and ``sources``
        (any if empty), the ``last`` ones (all if None), after ``since``; ``bookkeeping=False``
        hides nerve's own kinds unless named (as ``nerve tail`` does)."""
        from nerve.clock import HLC_ZERO
        from nerve.logops import tail_table

        filt = _filter(kinds, sources, bookkeeping)
        table, _ = tail_table(self._dir, count=last, filt=filt, since=since or HLC_ZERO)
        return table

    def _tail(
        self,
        *,
        kinds: Iterable[str] = (),
        sources: Iterable[str] = (),
        last: int = 10,
        follow: bool = False,
        bookkeeping: bool = False,
        poll_s: float = 0.2,
    ) -> Iterator[Batch]:
        """Batches of events as ``nerve tail`` shows them: the ``last`` ones, then (with
        ``follow``) each batch as it is stored, through the daemon when one runs."""
        from nerve.clock import HLC_ZERO
        from nerve.logops import tail_table
        from nerve.tail.batch import Batch
        from nerve.tail.follow import follow as follow_batches

        filt = _filter(kinds, sources, bookkeeping)
        table, newest = tail_table(self._dir, count=last, filt=filt, since=HLC_ZERO)
        yield Batch(table)
        if follow:
            yield from follow_batches(self._dir, filt=filt, since=newest, poll_s=poll_s)

    def replay(self, *, verify: bool = False) -> VerifyReport:
        """The replay digest (``.digest``, as ``nerve replay`` prints it); with ``verify``,
        every id, address and the manifest chain recomputed (``.ok``, ``.problems``)."""
        from nerve.logops import replay

        return replay(self._dir, full=verify)

    def _projection_digests(self) -> list[dict[str, Any]]:
        """``{"name", "rows", "digest"}`` of every projection (``nerve replay --projections``)."""
        from nerve.logops import projection_digests

        return projection_digests(self._dir)

    def _payload(self, cid: str) -> bytes:
        """The payload bytes stored at a blake3 address (hex), as ``nerve payload`` prints."""
        from nerve.logops import payload

        return payload(self.connection(), cid)

    # -- writing ------------------------------------------------------------------------

    def emit(
        self,
        *,
        source: str,
        line: str = "",
        payload: Any = None,
        kind: str = "observation",
        subject: str = "",
        trust: str = "Untrusted",
        valid_time_ns: int | None = None,
        key: str | None = None,
    ) -> Event:
        """Store one event (the privacy rules first) and return it as stored."""
        from nerve.logops import draft_of

        fields: dict[str, Any] = {"kind": kind, "source": source, "trust": trust, "line": line}
        fields |= {"payload": payload, "subject": subject, "valid_time_ns": valid_time_ns}
        return self.emit_many([draft_of(fields)], key=key)[0]

    def emit_many(
        self, drafts: Iterable[Draft | Mapping[str, Any]], *, key: str | None = None
    ) -> list[Event]:
        """Store drafts (or JSON-lines objects) as one group commit, all or nothing."""
        return self._append(drafts, key=key).events

    def _append(
        self, drafts: Iterable[Draft | Mapping[str, Any]], *, key: str | None = None
    ) -> Emitted:
        """Store drafts (or JSON-lines objects) as one group commit: the events stored, and
        whether ``key`` was used before (then they are the first batch's, nothing added)."""
        from nerve.logops import append, draft_of

        batch = [d if not isinstance(d, Mapping) else draft_of(dict(d)) for d in drafts]
        return append(self._writable(), batch, key=key)

    def _emit_jsonl(
        self, stream: IO[str], name: str = "<stream>", *, key: str | None = None
    ) -> Emitted:
        """Store JSON lines (as ``nerve emit --jsonl``); junk names ``name`` and the line."""
        from nerve.logops import append, drafts_from_jsonl

        return append(self._writable(), drafts_from_jsonl(stream, name), key=key)

    def _import_events(
        self, stream: IO[str], name: str = "<stream>", *, key: str | None = None
    ) -> int:
        """Import whole events (wire form, as ``nerve import``); the number imported."""
        from nerve.logops import import_stream

        return import_stream(self._writable(), stream, name, key=key)

    def _seal(self) -> dict[str, Any] | None:
        """Seal the unsealed tail into a segment now; the new segment, or None."""
        from nerve.logops import seal

        return seal(self._writable())

    def _compact(self, target_rows: int = 100_000) -> dict[str, int]:
        from nerve.logops import compact

        return compact(self._writable(), target_rows)

    def _repair(self) -> list[str]:
        """Open a damaged log keeping every good frame (no daemon may run)."""
        from nerve.logops import repair

        return repair(self._writable())

    def _pause(self, for_ms: int | None = None) -> PauseState:
        from nerve.privacy.ops import pause

        return pause(self._writable(), for_ms)

    def _resume(self) -> PauseState | None:
        from nerve.privacy.ops import resume

        return resume(self._writable())

    def _forget_request(self, request: Request, *, dry_run: bool = False) -> ForgetResult:
        """Run a forget already put together (``nerve.privacy.forget.request_of``)."""
        from nerve.privacy.forget import dry_run as plan

        return plan(self._dir, request) if dry_run else self._do(Forget(request)).result

    def _archive(self, before: Hlc, to: Path | str, *, vacuum: bool = False) -> ArchiveResult:
        folder = str(Path(to).expanduser().resolve())
        archived: Archived = self._do(Archive(before, folder, vacuum))
        return archived.result

    # -- the daemon ---------------------------------------------------------------------

    def _status(self, *, timeout: float = 60) -> Status:
        """Whether a daemon runs, and its health figures (as ``nerve status``)."""
        health = connect(self._dir).do(GetStatus(), timeout=timeout)
        return Status(health.running, health.figures)

    def _has_daemon(self) -> bool:
        """Whether a daemon answers on this workspace's socket now."""
        return connect(self._dir).daemon

    def _start(self) -> int:
        """Start the daemon in the background; its pid once it answers."""
        from nerve.runtime.daemon import start_background

        return start_background(self._writable())

    def _stop(self) -> int | None:
        from nerve.runtime.daemon import stop

        return stop(self._dir)

    def _lock(self) -> bool:
        """Stop capture and drop the key (an encrypted workspace): the daemon, which holds
        it, stops; this process forgets every unlocked key. True if a daemon was running."""
        from nerve.log.crypt import forget_keys

        was = connect(self._dir).daemon
        if was:
            self._stop()
        forget_keys()
        return was

    def _senses(self) -> list[dict[str, Any]]:
        """Every sense: live figures from the daemon when it runs, else nerve.yaml's."""
        return connect(self._dir).do(ListSenses()).senses  # type: ignore[no-any-return]

    def _trigger_sense(self, name: str) -> None:
        """Ask the running daemon to compute a sense now (``UsageError`` without one)."""
        self._do(TriggerSense(name))

    # -- workflows, recall, export, fleet ------------------------------------------------

    def _trigger_workflow(
        self,
        name: str,
        *,
        prompt: str = "",
        max_rounds: int | None = None,
        dry_run: bool = False,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Ask the running daemon to start a run of workflow ``name``; its answer (``run``,
        ``status``; ``status: deduped`` with the ``earlier_run`` for a ``key`` used before)."""
        from nerve.flow import client

        folder = self._writable()
        return client.trigger(
            folder, name, prompt=prompt, max_rounds=max_rounds, dry_run=dry_run, key=key
        )

    def _run(self, run: str) -> RunRecord:
        """One workflow run as the log tells it (``nerve workflow inspect RUN``)."""
        from nerve.flow.history import load_run

        return load_run(self.connection(), run)

    def ask(
        self,
        question: str,
        *,
        k: int | None = None,
        record: bool = True,
        connect: Callable[[], duckdb.DuckDBPyConnection] | None = None,
        now_ns: int | None = None,
        tz: tzinfo | None = None,
    ) -> AskResult:
        """Answer a question from the log (``nerve ask``): deterministic recall first, the
        configured fallback only when that cannot answer; recorded unless ``record=False``.
        ``connect`` gives the connection recall reads (``nerve mcp``: the privacy sandbox);
        ``now_ns`` and ``tz`` ask as if it were then, in that zone (fixtures, replays)."""
        from nerve.recall import ask

        folder = self._writable() if record else self._dir
        return ask(folder, question, k=k, record=record, connect=connect, now_ns=now_ns, tz=tz)

    def _export(
        self, path: Path | str, *, force: bool = False, copy: bool = False, plaintext: bool = False
    ) -> Export:
        """Write a DuckDB file any DuckDB opens without nerve (``nerve export --duckdb``);
        ``plaintext`` allows it for an encrypted workspace."""
        from nerve.export import export_duckdb

        return export_duckdb(self._writable(), path, force=force, copy=copy, plaintext=plaintext)

    # -- attention ----------------------------------------------------------------------

    def _attend_replay(self) -> ReplayResult:
        """Attend to the observations not yet attended, as the daemon would (no daemon may
        run: it attends as it runs)."""
        from nerve.attention.service import replay

        folder = self._writable()

        def direct() -> ReplayResult:
            with folder.open_log() as log:
                return replay(log, folder.config.attention, folder.data / "keys")

        return connect(folder).either(log=direct, busy=_attends_itself)

    def _attend_recompute(self) -> Recomputed:
        """Recompute every attention decision from the log and compare (``.ok``)."""
        from nerve.attention.service import recompute

        return recompute(self._dir.log_root, self._dir.config.attention)

    def _attend_what_if(self, settings_file: Path, since_ns: int = 0) -> WhatIf:
        """The log's observations attended again under the ``attention:`` settings of
        ``settings_file`` laid over this workspace's; nothing is written."""
        from nerve.attention.whatif import settings_from, what_if
        from nerve.query import connect

        settings = settings_from(settings_file, self._dir.config.attention)
        return what_if(connect(self._dir.log_root), settings, since_ns)

    def _rotate_key(self) -> int:
        """Move the surfacing chain to a new signing key; the new key epoch."""
        from nerve.attention.service import rotate_offline

        folder = self._writable()

        def direct() -> int:
            with folder.open_log() as log:
                return rotate_offline(log, folder.config.attention, folder.data / "keys")

        return connect(folder).either(RotateKey(), log=direct, read=_epoch)

    def _attention_config(self) -> AttentionConfig:
        """The ``attention:`` section as the daemon runs it (gate, detector, budget)."""
        return self._dir.config.attention

    def _audit_verify(self, *, record: bool = False, key: bytes | None = None) -> Verdict:
        """Verify the sealed surfacing chain (``nerve audit verify``); ``record`` advances
        the trust record as the CLI does."""
        from nerve.attention import audit

        links = audit.chain_links(self._dir.log_root)
        origin = f"workspace:{self.root}"
        key_from = "pinned" if key is not None else "first use"
        record = record and not self.read_only
        return audit.verify(links, origin=origin, key=key, key_from=key_from, record=record)

    def _chain_links(self) -> list[bytes]:
        """The sealed surfacing chain's links, as stored, in order."""
        from nerve.attention import audit

        return audit.chain_links(self._dir.log_root)

    def _held(self, since_ns: int | None = None) -> list[dict[str, Any]]:
        """Every decision the gate held back (decided after ``since_ns``), and why: its
        outcome (``hold:value``, ``hold:budget``), figures and the highlight it answered."""
        from nerve.attention import audit

        return audit.held(self._dir.log_root, since_ns)

    def _audit_show(self, seq: int) -> dict[str, Any]:
        """One sealed link by chain seq, the chain verified up to it (``nerve audit show``)."""
        from nerve.attention import audit

        return audit.show(self._dir.log_root, seq)


def _attends_itself() -> DaemonError:
    return DaemonError(
        "the daemon attends as it runs", hint="stop it first, or use --recompute alone"
    )


def _filter(kinds: Iterable[str], sources: Iterable[str], bookkeeping: bool) -> TailFilter:
    from nerve.log.select import TailFilter

    return TailFilter.of(list(kinds), list(sources), all_kinds=bookkeeping)


def _epoch(rotated: Reply) -> int:
    return int(rotated.fields["epoch"])
