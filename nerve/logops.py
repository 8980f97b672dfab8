"""Workspace-level log operations the CLI and notebooks call: emit, import, tail, replay."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from nerve.canonical import loads_bounded
from nerve.clock import HLC_ZERO, Hlc
from nerve.commands.log import Compact, Emit, Emitted, Import, Seal
from nerve.errors import EventError, LogError, NerveError, OrderError, UsageError
from nerve.events import ErasedEvent, Event
from nerve.log.attest import drafts_of_object
from nerve.log.drafts import Draft
from nerve.log.wire import (
    draft_from_json,
    row_to_json,
    stored_event_from_json,
)
from nerve.transport import connect
from nerve.workspace import WorkspaceDir

if TYPE_CHECKING:  # loaded where used: emit through the daemon never loads Arrow
    import pyarrow as pa

    from nerve.log.select import TailFilter
    from nerve.log.verify import VerifyReport


def read_jsonl(stream: IO[str], name: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line; junk names file and line.

    A line is an object around a payload, so it may nest one level more than a payload
    (``MAX_NESTING``); a deeper one is refused before it is parsed, naming the field.
    """
    number = 0
    lines = iter(stream)
    while True:
        try:
            text = next(lines)
        except StopIteration:
            return
        except UnicodeDecodeError:
            raise UsageError(f"{name}:{number + 1}: not UTF-8 text") from None
        number += 1
        if not text.strip():
            continue
        try:
            yield number, loads_bounded(text, envelope=1)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{name}:{number}: not valid JSON: {exc.msg}") from None
        except EventError as exc:
            raise exc.located(f"{name}:{number}") from None


def drafts_from_jsonl(stream: IO[str], name: str) -> list[Draft]:
    """Drafts from JSON lines; an ``attestation`` on a line adds its ``trust.attestation``
    draft after it (``nerve.log.attest``)."""
    drafts = []
    for number, obj in read_jsonl(stream, name):
        try:
            drafts += drafts_of_object(obj)
        except NerveError as exc:
            raise exc.located(f"{name}:{number}") from None
    return drafts


def draft_of(fields: dict[str, Any]) -> Draft:
    """One draft from the fields of a JSON lines object, checked the same way."""
    return Draft(**draft_from_json(fields))


def append(ws: WorkspaceDir, drafts: list[Draft], *, key: str | None = None) -> Emitted:
    """Append drafts as one group commit, all or nothing (an :class:`~nerve.commands.Emit`,
    through the daemon when one runs). With ``key``, a batch sent again with the same key
    is stored once: the first batch's events come back, marked ``replayed``."""
    emitted: Emitted = connect(ws).do(Emit(tuple(drafts), key))
    return emitted


def emit(ws: WorkspaceDir, drafts: list[Draft], *, key: str | None = None) -> list[Event]:
    """The events :func:`append` stored (or, for a key used before, stored first)."""
    return append(ws, drafts, key=key).events


def seal(ws: WorkspaceDir) -> dict[str, Any] | None:
    """Seal the tail now (through the daemon when one runs); the new segment, or None."""
    sealed = connect(ws).do(Seal()).segment
    return sealed.to_json() if sealed else None


def compact(ws: WorkspaceDir, target_rows: int) -> dict[str, int]:
    """Merge small segments (through the daemon when one runs); what was merged and written."""
    return connect(ws).do(Compact(target_rows)).to_json()  # type: ignore[no-any-return]


def repair(ws: WorkspaceDir) -> list[str]:
    """Open a damaged log keeping every good frame; returns what was moved aside or lost.

    Damaged WAL files are copied to ``data/log/quarantine/`` before being rewritten with
    their good frames; missing WAL generations are written off in the manifest; each step is
    recorded as a ``log.recovered`` event. Nothing is deleted.
    """

    def direct() -> list[str]:
        with ws.open_log(repair=True) as log:
            return list(log.recovered)

    return connect(ws).either(log=direct)


def import_stream(ws: WorkspaceDir, stream: IO[str], name: str, *, key: str | None = None) -> int:
    """Import whole events (wire form); all are checked before any is appended.

    Refused (``PrivacyError``) when a privacy rule would drop or redact one of them.
    All or nothing, with or without a daemon (through one, in parts it holds until the last,
    then imports at once, so its own events cannot land between two parts).
    """
    events: list[Event | ErasedEvent] = []
    places = []
    for number, obj in read_jsonl(stream, name):
        try:
            events.append(stored_event_from_json(obj))
        except NerveError as exc:
            raise exc.located(f"{name}:{number}") from None
        places.append(f"{name}:{number}")
    _check_sorted(events)
    try:  # attestations and privacy rules are checked once, by the writer: see Import
        return int(connect(ws).do(Import(tuple(events), key)).imported)
    except NerveError as exc:
        raise _at_its_line(exc, places) from None


def _at_its_line(exc: NerveError, places: list[str]) -> NerveError:
    """A refusal of the import's event ``i`` (its field ``events[i]…``), named by its line."""
    found = re.match(r"events\[(\d+)\]", exc.field or "")
    if found is None or int(found[1]) >= len(places):
        return exc
    index = int(found[1])
    return exc.located(places[index], replacing=f"event {index + 1}")


def _check_sorted(events: Sequence[Event | ErasedEvent]) -> None:
    """Events to import must sort strictly by (hlc, node, id): found out before anything is
    sent, not after the daemon has held a large batch."""
    for index in range(1, len(events)):
        before, event = events[index - 1], events[index]
        if (event.hlc, event.node, event.id) <= (before.hlc, before.node, before.id):
            raise OrderError(
                f"event {index + 1} (stamp {event.hlc}) does not sort after event {index} "
                f"(stamp {before.hlc}); nothing was imported"
            )


def tail_table(
    ws: WorkspaceDir, *, count: int | None, filt: TailFilter, since: Hlc = HLC_ZERO
) -> tuple[pa.Table, Hlc]:
    """The last ``count`` matching events (all if None) after ``since`` as a table, and the
    newest stamp (read newest first: see :mod:`nerve.log.window`)."""
    from nerve.log.reader import snapshot
    from nerve.log.window import newest

    snap = snapshot(ws.log_root)
    return newest(snap, count, filt, since=since).table, max(since, snap.newest)


def tail_rows(
    ws: WorkspaceDir, *, count: int | None, filt: TailFilter, since: Hlc = HLC_ZERO
) -> tuple[list[dict[str, Any]], Hlc]:
    """The last ``count`` matching events (all if None) as wire dicts, and the newest stamp."""
    table, newest_stamp = tail_table(ws, count=count, filt=filt, since=since)
    return [row_to_json(r) for r in table.to_pylist()], newest_stamp


def replay(ws: WorkspaceDir, *, full: bool) -> VerifyReport:
    """Replay digest; with ``full``, every id, address and the manifest chain recomputed.

    Segments archived away are read from ``log.archives`` (or the folder recorded) so the
    digest covers the whole history; ``covers`` says plainly when it cannot."""
    from nerve.log.reader import replay_digest, snapshot
    from nerve.log.verify import Problem, VerifyReport, verify

    archives = ws.archive_dirs()
    if full:
        from nerve.chain.trust import default_trust_dir
        from nerve.log.anchor import anchor_file

        return verify(ws.log_root, archives, anchor=anchor_file(default_trust_dir(), ws.log_root))
    digest = replay_digest(ws.log_root, archives)
    report = VerifyReport(
        events=digest.events,
        digest=digest.digest,
        segments=len(snapshot(ws.log_root).segments),
        checkpoints=list(digest.checkpoints),
        covers=digest.coverage.describe(digest.events),
        archives=[p.to_json() for p in digest.coverage.parts],
    )
    for part in digest.coverage.altered:
        report.problems.append(Problem(str(part.folder), f"archive: {part.problem}"))
    return report


def check_cid(cid: str) -> None:
    """``UsageError`` unless ``cid`` is a payload address: 64 hex digits."""
    if len(cid) != 64 or any(c not in "0123456789abcdef" for c in cid.lower()):
        raise UsageError(f"{cid!r} is not a 64-hex-digit address")


def payload(conn: Any, cid: str) -> bytes:
    """The payload bytes stored under a content address (64 hex digits) in the log ``conn``
    reads; ``UsageError`` for a bad or unknown address, ``LogError`` for an erased one."""
    from nerve.query import run_query

    check_cid(cid)
    result = run_query(
        conn,
        f"SELECT payload FROM events WHERE payload_cid = from_hex('{cid.lower()}') "
        "ORDER BY erased LIMIT 1",
    )
    if not result.rows:
        if erasure_naming(conn, cid.lower()) is not None:  # the event is archived, the record not
            raise erased_payload(conn, cid.lower())
        raise UsageError(f"no payload with address {cid}")
    if result.rows[0][0] is None:
        raise erased_payload(conn, cid.lower())
    return bytes(result.rows[0][0])


def erasure_naming(conn: Any, cid: str) -> tuple[Any, ...] | None:
    """The first ``payload.erased`` event that names payload ``cid`` (its id, reason and
    time), or None. It stays in the live log when the erased event itself is archived."""
    row = conn.execute(
        "SELECT id, subject, strftime(ts, '%Y-%m-%d %H:%M:%SZ') FROM events "
        "WHERE kind = 'payload.erased' AND contains(decode(payload), ?) "
        "ORDER BY physical_ns, logical LIMIT 1",
        [cid],
    ).fetchone()
    return tuple(row) if row else None


def erased_payload(conn: Any, cid: str) -> LogError:
    """The error for ``nerve payload`` of an address whose every copy was erased, naming
    the ``payload.erased`` event that says so."""
    row = erasure_naming(conn, cid)
    where = (
        f"by payload.erased {bytes(row[0]).hex()[:12]} (reason: {row[1]}) at {row[2]}"
        if row
        else "(the payload.erased event naming it is archived)"
    )
    return LogError(f"payload {cid} was erased {where}; its bytes are gone")


def parse_payload_arg(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return loads_bounded(text, field="payload")
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--payload is not valid JSON: {exc.msg}", hint="quote it: --payload '{\"k\": 1}'"
        ) from None


def projection_digests(ws: WorkspaceDir) -> list[dict[str, Any]]:
    """``{"name", "rows", "digest"}`` for every projection view, by name (see
    ``nerve.query.projection_digest``)."""
    from nerve.query import load_projections, projection_digest

    names = sorted(p.name for p in load_projections(ws.projection_dirs()))
    conn = ws.connect()
    try:
        digests = [(name, *projection_digest(conn, name)) for name in names]
    finally:
        conn.close()
    return [{"name": name, "rows": rows, "digest": digest} for name, rows, digest in digests]
