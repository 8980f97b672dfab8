"""The nouns of the front door: what ``ws.events``, ``ws.log``, ``ws.privacy``,
``ws.daemon`` and ``ws.settings`` return (:mod:`nerve.door.named`, ``fleet`` and ``sync``
have the rest).

Each is a view of one :class:`~nerve.door.core.Core` grouped by what it is about, in the
shape ``db["table"]`` has in sqlite-utils: a method here is one call of the workspace's own
operation, so the CLI, ``nerve mcp``, the UI and a notebook share one spelling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import pyarrow as pa

    from nerve.attention.settings import AttentionConfig
    from nerve.categories import CategoryRule
    from nerve.clock import Hlc
    from nerve.commands.log import Emitted
    from nerve.config.models import NerveConfig
    from nerve.door.core import Core, Status
    from nerve.export import Export
    from nerve.log.drafts import Draft
    from nerve.log.manifest import SegmentInfo
    from nerve.log.reader import Snapshot
    from nerve.log.select import TailFilter
    from nerve.log.store import CompactResult
    from nerve.privacy.archive import ArchiveResult
    from nerve.privacy.forget import ForgetResult, Request
    from nerve.privacy.pause import PauseState
    from nerve.privacy.policy import Verdict as TextVerdict
    from nerve.runtime.daemon import View
    from nerve.tail import Tail
    from nerve.tail.batch import Batch
    from nerve.workspace import WorkspaceDir

__all__ = ["Daemon", "Events", "Log", "Noun", "Privacy", "ProjectionDigest", "Settings"]


@dataclass(frozen=True)
class ProjectionDigest:
    """One projection's rows as ``nerve replay --projections`` prints them: its name, how
    many rows it has over the log as it is now, and a digest of them."""

    name: str
    rows: int
    digest: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "rows": self.rows, "digest": self.digest}


class Noun:
    """A part of a workspace's surface, reached from it (``ws.log``, ``ws.audit`` …)."""

    def __init__(self, ws: Core) -> None:
        self._ws = ws

    def __repr__(self) -> str:
        return f"{self._ws!r}.{type(self).__name__.lower()}"

    @property
    def _dir(self) -> WorkspaceDir:
        """The workspace's folder, for a read."""
        return self._ws._dir

    def _writable(self) -> WorkspaceDir:
        """The workspace's folder, for a write (refused on a read-only open)."""
        return self._ws._writable()


class Events(Noun):
    """The log's events (``ws.events``): called, an Arrow table of them; the tail as
    ``nerve tail`` shows it, followed as it grows; a payload by address; JSON lines stored
    or whole events imported."""

    def __call__(
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
        return self._ws._events(
            kinds=kinds, sources=sources, last=last, since=since, bookkeeping=bookkeeping
        )

    def tail(
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
        return self._ws._tail(
            kinds=kinds,
            sources=sources,
            last=last,
            follow=follow,
            bookkeeping=bookkeeping,
            poll_s=poll_s,
        )

    def read(
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
        return self._ws._read_tail(
            count=count, filt=filt, since=since, until=until, count_older=count_older
        )

    def read_devices(
        self,
        *,
        count: int | None,
        filt: TailFilter,
        since: Hlc | None = None,
        until: Hlc | None = None,
        device: str | None = None,
    ) -> Tail:
        """As :meth:`read` over this device's log and every synced peer's, merged in log
        order, each event with its device (``.batch.devices``); ``device`` keeps one's."""
        return self._ws._read_devices(
            count=count, filt=filt, since=since, until=until, device=device
        )

    def follow_devices(
        self,
        filt: TailFilter,
        cursors: tuple[tuple[Path, Hlc], ...],
        device: str | None = None,
        *,
        poll_s: float = 0.2,
    ) -> Iterator[Batch]:
        """As :meth:`follow` over this device's log and every synced peer's, from
        ``cursors`` (``read_devices(...).cursors``), polled every ``poll_s``."""
        return self._ws._follow_devices(filt, cursors, device, poll_s=poll_s)

    def follow(self, filt: TailFilter, since: Hlc, *, poll_s: float = 0.2) -> Iterator[Batch]:
        """Each batch of events ``filt`` keeps as it is stored after ``since``: pushed by
        the daemon when one runs, else read from the log every ``poll_s``."""
        return self._ws._follow(filt, since, poll_s=poll_s)

    def warnings(self, filt: TailFilter) -> list[str]:
        """A warning for each kind or source ``filt`` names that the log never held (with
        the nearest one it did)."""
        return self._ws._filter_warnings(filt)

    def payload(self, cid: str) -> bytes:
        """The payload bytes stored at a blake3 address (hex), as ``nerve payload`` prints."""
        return self._ws._payload(cid)

    def append(
        self, drafts: Iterable[Draft | Mapping[str, Any]], *, key: str | None = None
    ) -> Emitted:
        """Store drafts (or JSON-lines objects) as one group commit, as
        :meth:`~nerve.api.Workspace.emit_many` does, and say what happened: ``.events``
        stored, ``.replayed`` when ``key`` was used before (the first batch's events, none
        added)."""
        return self._ws._append(drafts, key=key)

    def emit_jsonl(
        self, stream: IO[str], name: str = "<stream>", *, key: str | None = None
    ) -> Emitted:
        """Store JSON lines (as ``nerve emit --jsonl``); junk names ``name`` and the line.
        ``.replayed`` says a ``key`` used before stored nothing new."""
        return self._ws._emit_jsonl(stream, name, key=key)

    def import_jsonl(
        self, stream: IO[str], name: str = "<stream>", *, key: str | None = None
    ) -> int:
        """Import whole events (wire form, as ``nerve import``); the number imported."""
        return self._ws._import_events(stream, name, key=key)


class Log(Noun):
    """The log itself (``ws.log``): its snapshot and size, sealing, compaction, repair,
    the projections' digests, a DuckDB export, archiving old events and re-wrapping its key."""

    def snapshot(self) -> Snapshot:
        """The log as it is now: live segments and the unsealed tail (``.count``,
        ``.newest``, ``.segments``, ``.tail``), read without the writer's lock."""
        return self._ws._snapshot()

    def seal(self) -> SegmentInfo | None:
        """Seal the unsealed tail into a segment now; the new segment, or None."""
        from nerve.log.manifest import SegmentInfo

        sealed = self._ws._seal()
        return None if sealed is None else SegmentInfo.from_json(sealed)

    def compact(self, target_rows: int = 100_000) -> CompactResult:
        """Merge small sealed segments into ones of about ``target_rows`` rows (the same events,
        the same digest): how many were merged and written, and the rows they hold."""
        from nerve.log.store import CompactResult

        return CompactResult(**self._ws._compact(target_rows))

    def repair(self) -> list[str]:
        """Open a damaged log keeping every good frame (no daemon may run)."""
        return self._ws._repair()

    def size(self) -> int:
        """Bytes the log's files take on disk now (segments, WAL, manifest, blobs)."""
        import os

        total = 0
        for folder, _dirs, files in os.walk(self._dir.log_root):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except FileNotFoundError:  # sealed or compacted away meanwhile
                    continue
        return total

    def encrypted(self) -> bool:
        """Whether the log is encrypted at rest (it holds a keyring)."""
        from nerve.log.crypt import is_encrypted

        return is_encrypted(self._dir.log_root)

    def projection_digests(self) -> list[ProjectionDigest]:
        """The digest of every projection, by name (``nerve replay --projections``)."""
        return [ProjectionDigest(**row) for row in self._ws._projection_digests()]

    def export(
        self, path: Path | str, *, force: bool = False, copy: bool = False, plaintext: bool = False
    ) -> Export:
        """Write a DuckDB file any DuckDB opens without nerve (``nerve export --duckdb``);
        ``plaintext`` allows it for an encrypted workspace."""
        return self._ws._export(path, force=force, copy=copy, plaintext=plaintext)

    def archive(self, before: Hlc, to: Path | str, *, vacuum: bool = False) -> ArchiveResult:
        """Move the sealed segments older than ``before`` to the folder ``to`` (a log any
        reader opens); ``vacuum`` also drops what forget erased."""
        return self._ws._archive(before, to, vacuum=vacuum)

    def rewrap_key(self, new_key: Callable[[Path], tuple[bytes, dict[str, Any]]]) -> Path:
        """Wrap the data key under the key ``new_key`` makes (given the log's folder); the
        current one comes from the environment. No segment is rewritten. The keyring."""
        from nerve.errors import UsageError
        from nerve.log import crypt

        log_root = self._writable().log_root
        if not crypt.is_encrypted(log_root):
            raise UsageError(
                f"{self._dir.root} is not encrypted", hint="nerve init --encrypt makes one"
            )
        old = crypt.kek_from_env(log_root, crypt.read_keyring(log_root))
        new, source = new_key(log_root)
        crypt.rewrap(log_root, old, new, source)
        return crypt.keyring_path(log_root)


class Privacy(Noun):
    """What capture may keep (``ws.privacy``): pausing and resuming it, forgetting what was
    stored, the rules tried on a sample, and locking an encrypted workspace."""

    def pause(self, for_ms: int | None = None) -> PauseState:
        """Pause capture (for ``for_ms`` milliseconds, or until resumed); the pause as stored."""
        return self._ws._pause(for_ms)

    def resume(self) -> PauseState | None:
        """Resume capture; the pause it ended, or None if none was on."""
        return self._ws._resume()

    def forget(
        self,
        *,
        cids: Iterable[str] = (),
        sources: Iterable[str] = (),
        kinds: Iterable[str] = (),
        match: str | None = None,
        before: str | None = None,
        after: str | None = None,
        reason: str = "user",
        retention: bool = False,
        dry_run: bool = False,
        all_kinds: bool = False,
    ) -> ForgetResult:
        """Erase the payload and line of the events selected (selectors combine with AND),
        or apply ``log.retention`` (``retention``); ``dry_run`` says what would go. A
        ``match`` leaves nerve's bookkeeping (``ask.question``, …) alone unless ``all_kinds``
        or a kind names it."""
        from nerve.privacy.forget import request_of

        request = request_of(
            cids=cids,
            sources=sources,
            kinds=kinds,
            match=match,
            before=before,
            after=after,
            reason=reason,
            retention=retention,
            all_kinds=all_kinds,
        )
        return self._ws._forget_request(request, dry_run=dry_run)

    def forget_request(self, request: Request, *, dry_run: bool = False) -> ForgetResult:
        """Run a forget already put together (``nerve.privacy.forget.request_of``)."""
        return self._ws._forget_request(request, dry_run=dry_run)

    def test(self, text: str, *, source: str, kind: str, sense: str = "") -> TextVerdict:
        """What the privacy rules would store for ``text`` as such an event, and why."""
        from nerve.privacy.ops import test_text

        return test_text(self._dir, text, source=source, kind=kind, sense=sense)

    def lock(self) -> bool:
        """Stop capture and drop the key (an encrypted workspace): the daemon, which holds
        it, stops; this process forgets every unlocked key. True if a daemon was running."""
        return self._ws._lock()


class Daemon(Noun):
    """The workspace's daemon (``ws.daemon``): whether it runs and how it is, starting and
    stopping it, running it in this process, and its own log lines."""

    def answers(self) -> bool:
        """Whether a daemon answers on this workspace's socket now."""
        return self._ws._has_daemon()

    def status(self, *, timeout: float = 60) -> Status:
        """Whether a daemon runs, and its health figures (as ``nerve status``)."""
        return self._ws._status(timeout=timeout)

    def start(self) -> int:
        """Start the daemon in the background; its pid once it answers."""
        return self._ws._start()

    def stop(self) -> int | None:
        """Stop the running daemon; its pid, or None if none ran."""
        return self._ws._stop()

    def run(self, *, view: View | None = None, echo: TextIO | None = None) -> None:
        """Run the daemon in this process until it is stopped: drawing ``view``, or
        writing its log lines to ``echo``."""
        from nerve.runtime import daemon

        daemon.run_foreground(self._writable(), view=view, echo=echo)

    def lines(self, lines: list[str]) -> list[str]:
        """Lines of the daemon's log as a person reads them (sealed ones opened with the
        key when it is given)."""
        from nerve.runtime import daemon

        return daemon.decrypt_lines(self._dir, lines)

    def log_path(self) -> Path:
        """The daemon's own log file (warnings and errors, as it writes them)."""
        from nerve.runtime.daemon import log_path

        return log_path(self._dir)

    def log_page(self, lines: int, offset: int = 0) -> tuple[list[str], int | None]:
        """``lines`` lines of the daemon's log ending ``offset`` lines before its end, as a
        person reads them, and the offset of the page before (None: this is the first)."""
        from nerve.runtime import daemon

        page, earlier = daemon.log_page(self.log_path(), lines, offset)
        return self.lines(page), earlier


class Settings(Noun):
    """The workspace's configuration (``ws.settings``): nerve.yaml as read and read again,
    checked and edited, the projections' folders and settings, and the tokens of its servers."""

    @property
    def path(self) -> Path:
        """``nerve.yaml`` (it may not exist: a copied log is read with the defaults)."""
        return self._dir.config_path

    @property
    def config(self) -> NerveConfig:
        """nerve.yaml as read the first time this is asked (defaults without one)."""
        return self._dir.config

    def read(self) -> NerveConfig:
        """nerve.yaml read again now, for a server that follows its edits; a bad file
        raises its ``ConfigError`` (the caller keeps what it had)."""
        from nerve.workspace import WorkspaceDir

        return WorkspaceDir(self._dir.root).config

    def projection_dirs(self) -> list[Path]:
        """Where projections are loaded from: the bundled ones, then the workspace's."""
        return self._dir.projection_dirs()

    def views(self) -> dict[str, Any]:
        """What the projections read from ``nerve_settings`` and ``nerve_categories``, as
        nerve.yaml sets it now (read again when the file changes, so a category edited in
        the UI reaches every later query; a bad edit keeps the settings read last). A dict
        by design: its keys are the settings the projections' SQL reads, which a workspace's
        own projections may add to."""
        from nerve.errors import NerveError
        from nerve.workspace import WorkspaceDir

        try:
            stat = self._dir.config_path.stat()
            stamp: tuple[int, ...] = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except FileNotFoundError:
            stamp = ()
        kept = getattr(self, "_settings_read", None)
        if kept is not None and kept[0] == stamp:
            return dict(kept[1])
        try:
            settings = WorkspaceDir(self._dir.root).settings()
        except NerveError:
            return dict(kept[1]) if kept is not None else self._dir.settings()
        self._settings_read = (stamp, settings)
        return dict(settings)

    def validate(self) -> tuple[list[str], list[str]]:
        """nerve.yaml checked as the daemon would load it, then every sense and workflow
        it names: the problems (none when valid) and hints."""
        from nerve.config import config_hints, validate_config
        from nerve.flow.validate import check_workflows
        from nerve.runtime.senses import check_layout

        ws = self._dir
        issues = [str(i) for i in validate_config(ws.config_path)]
        if not issues:
            issues = check_layout(ws, ws.config) + check_workflows(ws, ws.config)
        return issues, [str(h) for h in config_hints(ws.config_path)]

    def set_categories(self, rules: Sequence[Mapping[str, str]]) -> list[CategoryRule]:
        """Replace nerve.yaml's ``categories:`` with the rules (``name``, ``app``, ``title``
        each), once the whole file they make validates, and record it as a
        ``categories.set`` event; the rules as stored."""
        from pydantic import ValidationError

        from nerve import fsio
        from nerve.categories import CategoryRule, with_rules
        from nerve.config import parse_config
        from nerve.errors import ConfigError
        from nerve.events import NERVE_SOURCE, Trust
        from nerve.log.drafts import Draft
        from nerve.logops import emit

        ws = self._writable()
        path = ws.config_path
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        parsed = []
        for at, rule in enumerate(rules):
            try:
                parsed.append(CategoryRule(**dict(rule)))
            except ValidationError as exc:
                error = exc.errors()[0]
                where = ".".join(str(p) for p in error["loc"])
                why = f"categories[{at}].{where}: {error['msg']}"
                raise ConfigError(f"{path}: {why}", field="categories") from None
        text = with_rules(old, parsed)
        kept = parse_config(text, str(path)).categories
        fsio.write_private(path, text.encode("utf-8"), site="config", exclusive=False)
        payload = {"rules": [r.model_dump() for r in kept]}
        line = f"categories set: {len(kept)} rule{'' if len(kept) == 1 else 's'}"
        emit(ws, [Draft.of("categories.set", source=NERVE_SOURCE, trust=Trust.FIRST_PARTY,
                           line=line, payload=payload, subject="categories")])  # fmt: skip
        return kept

    def token_path(self, use: str, environ: Mapping[str, str] | None = None) -> Path:
        """Where the workspace's token for ``use`` (``mcp``, ``ui``) is kept, outside it."""
        from nerve import tokens

        return tokens.token_path(self._dir.root, use, environ)

    def token(
        self, use: str, *, site: str, rotate: bool = False, environ: Mapping[str, str] | None = None
    ) -> str:
        """The workspace's token for ``use``: made on first use, replaced with ``rotate``."""
        from nerve import tokens

        return tokens.token(self._dir.root, use, site=site, rotate=rotate, environ=environ)

    def attention(self) -> AttentionConfig:
        """The ``attention:`` section as the daemon runs it (gate, detector, budget)."""
        return self._ws._attention_config()
