"""Chain verification: walk the links once and report the first break.

The rules, in the order they are applied, are in :mod:`nerve.chain`'s docstring.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import blake3

from nerve.chain.bulk import parse_any
from nerve.chain.keys import verifies
from nerve.chain.links import (
    EXIT_CODES,
    FORMAT_VERSION,
    ZERO_ID,
    BreakKind,
    ParsedLink,
    digest,
    parse_link,
    schema_error,
)
from nerve.chain.merkle import MerkleAccumulator
from nerve.chain.records import SEALABLE
from nerve.chain.shapes import Plain, learn, plain_fields


class Accepted(Protocol):
    """What verification reads of a verifier's trust record (``nerve.chain.trust``)."""

    @property
    def log_id(self) -> bytes: ...
    @property
    def key(self) -> bytes: ...
    @property
    def size(self) -> int: ...
    @property
    def head(self) -> bytes: ...
    @property
    def root(self) -> bytes: ...
    @property
    def ids(self) -> tuple[bytes, ...]: ...


@dataclass(frozen=True, slots=True)
class Break:
    """The first place a chain fails: the position (= expected seq), the kind, and why."""

    seq: int
    kind: BreakKind
    message: str

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.kind]

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "message": self.message}


@dataclass(frozen=True, slots=True)
class Anchor:
    """A verified checkpoint (or the genesis link): links through it, its id, their root."""

    size: int
    head: bytes
    root: bytes


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What :func:`verify_chain` found; ``links`` counts the links verified before any break."""

    links: int
    first_break: Break | None
    log_id: bytes | None = None
    genesis_key: bytes | None = None
    key: bytes | None = None
    epoch: int = 0
    anchor: Anchor | None = None
    ids: tuple[bytes, ...] = ()
    since_checkpoint: int = 0

    @property
    def ok(self) -> bool:
        return self.first_break is None

    @property
    def exit_code(self) -> int:
        return 0 if self.first_break is None else self.first_break.exit_code

    @property
    def head(self) -> bytes | None:
        return self.ids[-1] if self.ids else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (ids in lower-case hex)."""
        return {
            "ok": self.ok,
            "links": self.links,
            "exit_code": self.exit_code,
            "log_id": _hex(self.log_id),
            "epoch": self.epoch,
            "head": _hex(self.head),
            "checkpoint": None if self.anchor is None else self.anchor.size,
            "break": None if self.first_break is None else self.first_break.to_json(),
        }


def _hex(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


_Problem = tuple[BreakKind, str] | None


class _Verifier:
    """Walks the presented links once, in order, keeping the chain state they establish."""

    def __init__(
        self,
        raws: Sequence[bytes],
        pinned: bytes | None,
        trusted: Accepted | None,
        empty_ok: bool = False,
    ) -> None:
        self.empty_ok = empty_ok
        self.raws = raws
        self._rows: list[_Row | None] = [None] * len(raws)  # scanned, not yet walked
        self._parsed: dict[int, ParsedLink] = {}  # plain links parsed in full after all
        self._sigs: dict[int, tuple[bytes, bool]] = {}  # (key guessed, verifies) by position
        self._walked = 0  # the position the walk is at
        self._baton = threading.Lock()  # held by the one thread walking
        self._break: Break | None = None
        self.trusted = trusted
        self.pinned = pinned if pinned is not None else (trusted.key if trusted else None)
        self.log = self.key = self.genesis_key = ZERO_ID
        self.epoch = self.since_cp = 0
        self.ids: list[bytes] = []
        self.acc = MerkleAccumulator()
        self.anchor: Anchor | None = None

    def run(self) -> ChainReport:
        self._scan_all()
        self._walk_on(len(self.raws))  # what the pool's threads left
        return self._report(self._break or self._check_end())

    def _scan_all(self) -> None:
        """Scan the links chunk by chunk on the pool; each thread walks on as it goes.

        Ed25519 runs in C without the GIL, so one thread's signature check leaves the GIL
        to another's parsing and walking. Each chunk's signatures are checked under the keys
        the links claim: only a cache, used when the key the walk has established for a
        link is the key that was guessed.
        """
        n, pool = len(self.raws), _pool()
        keys: dict[int, bytes] = {}  # shared: a key one thread learns helps the others
        if n:
            _claimed_key(parse_any(bytes(self.raws[0])), keys)
        jobs = []
        for start in range(0, n, _CHUNK):
            if self._break is not None:
                break
            jobs.append(pool.submit(self._scan_chunk, start, keys))
        for job in jobs:
            if not (self._break is not None and job.cancel()):
                job.result()

    def _scan_chunk(self, start: int, keys: dict[int, bytes]) -> None:
        stop = min(start + _CHUNK, len(self.raws))
        for i in range(start, stop):
            if self._break is not None:
                return
            self._rows[i] = self._scan(i, keys)
            if i % _WALK_EVERY == 0:
                self._walk_on(2 * _WALK_EVERY)

    def _scan(self, i: int, keys: dict[int, bytes]) -> _Row:
        """Link ``i``'s row: a plain link's fields, else the full parse; its signature checked
        (for a full parse, the check is kept in ``_sigs`` before the row is)."""
        raw = bytes(self.raws[i])
        fields = plain_fields(raw)
        if fields is not None:
            key = keys.get(fields.epoch)
            if key is not None and not verifies(key, fields.core, fields.sig):
                key = None
            return _Signed(blake3.blake3(fields.core).digest(), key, fields)
        link = parse_any(raw)
        key = _claimed_key(link, keys)
        if key is not None:
            self._sigs[i] = (key, verifies(key, link.core_bytes, link.sig))
        return link

    def _walk_on(self, most: int) -> None:
        """Walk up to ``most`` more links, as far as they are scanned, unless another thread
        is walking (it will walk on in turn)."""
        if not self._baton.acquire(blocking=False):
            return
        try:
            i, rows = self._walked, self._rows
            end = min(len(rows), i + most)
            while i < end and self._break is None and (row := rows[i]) is not None:
                problem = self._step(i, row)
                if problem is not None:
                    self._break = Break(i, *problem)
                    break
                rows[i] = None  # walked: never read again
                i += 1
            self._walked = i
        finally:
            self._baton.release()

    def _step(self, i: int, row: _Row) -> _Problem:
        if type(row) is _Signed:
            if self._take_plain(i, row):
                return None
            if row.signer is not None:
                self._sigs[i] = (row.signer, True)
        return self._walk(i)

    def _link(self, i: int) -> ParsedLink:
        """Link ``i`` parsed in full (needed, for it or a neighbour, off the plain path)."""
        row = self._rows[i]
        if type(row) is ParsedLink:
            return row
        link = self._parsed.get(i)
        if link is None:
            link = self._parsed[i] = parse_any(bytes(self.raws[i]))
        return link

    def _walk(self, i: int) -> _Problem:
        link = self._link(i)
        if not self._plainly_fine(i, link):
            problem = self._check(i, link)
            if problem is not None:
                return problem
        self._advance(link)
        if link.fits and link.core["kind"] == "decision":
            learn(link.core)  # an accepted link's shape: the links scanned next take it
        return None

    def _take_plain(self, i: int, row: _Signed) -> bool:
        """:meth:`_plainly_fine` for a plain link's fields (the shape checked the rest); if
        fine, the link is taken as :meth:`_advance` would."""
        fields, ids = row.fields, self.ids
        if (
            i == 0
            or fields.seq != i
            or fields.prev != ids[-1]
            or fields.log != self.log
            or fields.epoch != self.epoch
            or (self.trusted is not None and i < self.trusted.size)
            or (fields.cp is not None and fields.cp != (i + 1, ids[-1], self.acc.root()))
            or not self._signed(row)
        ):
            return False
        ids.append(row.id)
        self.acc.append(row.id)
        if fields.cp is None:
            self.since_cp += 1
        else:
            self.anchor, self.since_cp = Anchor(len(ids), row.id, self.acc.root()), 0
        return True

    def _signed(self, row: _Signed) -> bool:
        """The link's signature verifies under the current key: as checked on the scan if
        that guessed this key, else checked now (after a rotation the scan may not know)."""
        return row.signer == self.key or verifies(self.key, row.fields.core, row.fields.sig)

    def _plainly_fine(self, i: int, link: ParsedLink) -> bool:
        """True only if :meth:`_check` would find nothing: the common decision or checkpoint
        link, in sequence, under the current key, checked in one pass (a copy of an earlier
        link is never in sequence: its seq is taken). Anything else (and every break) goes
        through :meth:`_check`, which names it."""
        core = link.core
        if i == 0 or link.error is not None:
            return False
        kind = core["kind"]
        if kind not in ("decision", "checkpoint") or not link.fits:
            return False
        if kind == "decision":
            if core["trust"] > 3 or core["decision"] not in SEALABLE:
                return False
        elif (core["size"], core["head"]) != (i + 1, self.ids[-1]):
            return False
        checked = self._sigs.get(i)
        if (
            link.sig2 is not None
            or core["log"] != self.log
            or checked is None
            or checked != (self.key, True)
            or core["seq"] != i
            or core["prev"] != self.ids[-1]
            or core["epoch"] != self.epoch
            or core["v"] != FORMAT_VERSION
            or (self.trusted is not None and i < self.trusted.size)
        ):
            return False
        return kind != "checkpoint" or bool(core["root"] == self.acc.root())

    def _report(self, brk: Break | None) -> ChainReport:
        known = bool(self.ids)
        return ChainReport(
            len(self.ids),
            brk,
            self.log if known else None,
            self.genesis_key if known else None,
            self.key if known else None,
            self.epoch,
            self.anchor,
            tuple(self.ids),
            self.since_cp,
        )

    def _check(self, i: int, link: ParsedLink) -> _Problem:
        if self._is_copy(link):
            return "duplicated", "the exact bytes of an earlier link"
        if link.error is not None:
            return link.error
        first = self._check_genesis if i == 0 else self._check_log
        for check in (
            first,
            self._check_sig,
            self._check_fields,
            self._check_seq,
            self._check_prev,
            self._check_kind,
            self._check_trusted,
        ):
            problem = check(i, link)
            if problem is not None:
                return problem
        return None

    def _is_copy(self, link: ParsedLink) -> bool:
        """True if ``link`` is the exact bytes of an accepted link. Each accepted link sits at
        the position its seq names, so a copy's seq says which to compare with (and a link
        taken on a short path, in sequence, is never a copy: its seq is new)."""
        if link.error is not None:
            return False
        seq = link.core["seq"]
        return bool(seq < len(self.ids) and bytes(self.raws[seq]) == link.raw)

    def _check_genesis(self, i: int, link: ParsedLink) -> _Problem:
        core = link.core
        if core["kind"] != "genesis" or core["seq"] != 0:
            if core["seq"] > 0:
                return self._check_seq(0, link)
            return "malformed", f"position 0 holds a {core['kind']!r} link, not the genesis"
        if (why := schema_error(core, link.sig2 is not None)) is not None:
            return "malformed", why
        if core["log"] != digest(core["key"] + core["nonce"]):
            return "malformed", "log id is not blake3(genesis key + nonce)"
        if self.trusted is not None and core["log"] != self.trusted.log_id:
            return "fresh-genesis", f"log {core['log'].hex()} is not the trusted log"
        if self.pinned is not None and core["key"] != self.pinned:
            return "unknown-key", f"genesis key {core['key'].hex()} is not the pinned key"
        self.log, self.key, self.epoch = core["log"], core["key"], core["epoch"]
        return None

    def _check_log(self, i: int, link: ParsedLink) -> _Problem:
        if link.core["log"] != self.log:
            return "forked", f"link names log {link.core['log'].hex()}, not this chain's"
        return None

    def _check_sig(self, i: int, link: ParsedLink) -> _Problem:
        checked = self._sigs.get(i)
        ok = (
            checked[1]
            if checked and checked[0] == self.key
            else verifies(self.key, link.core_bytes, link.sig)
        )
        if ok:
            return None
        if self._witnessed_edit(i, link):
            return "edited", "signature fails and the next link sealed a different id here"
        if (problem := self._check_seq(i, link)) is not None:
            return problem
        if link.core["epoch"] != self.epoch:
            return "unknown-key", f"signed for epoch {link.core['epoch']}, current is {self.epoch}"
        return "bad-signature", f"signature does not verify under the epoch-{self.epoch} key"

    def _witnessed_edit(self, i: int, link: ParsedLink) -> bool:
        if i + 1 >= len(self.raws) or self._link(i + 1).error is not None:
            return False
        nxt = self._link(i + 1)
        if nxt.core["seq"] != i + 1 or nxt.core["prev"] == link.id:
            return False
        claimed = link.core.get("new_key")
        keys = [self.key, *([claimed] if isinstance(claimed, bytes) else [])]
        return any(verifies(k, nxt.core_bytes, nxt.sig) for k in keys)

    def _check_fields(self, i: int, link: ParsedLink) -> _Problem:
        why = None if link.fits else schema_error(link.core, link.sig2 is not None)
        if why is None and link.core["v"] != FORMAT_VERSION:
            why = f"format version {link.core['v']} is not {FORMAT_VERSION}"
        return None if why is None else ("malformed", why)

    def _check_seq(self, i: int, link: ParsedLink) -> _Problem:
        seq = link.core["seq"]
        if seq < i:
            return "reordered", f"seq {seq} at position {i}: the sequence goes backwards"
        if seq > i:
            later = map(self._link, range(i + 1, len(self.raws)))
            if any(_claims(link, link.core["log"], i) for link in later):
                return "reordered", f"seq {seq} at position {i}; seq {i} comes later"
            return "excised", f"seq {seq} at position {i}: seq {i}..{seq - 1} missing"
        return None

    def _check_prev(self, i: int, link: ParsedLink) -> _Problem:
        if i and link.core["prev"] != self.ids[-1]:
            return (
                "forked",
                f"authentic link {i} follows {link.core['prev'].hex()}, not link {i - 1}",
            )
        return None

    def _check_kind(self, i: int, link: ParsedLink) -> _Problem:
        core = link.core
        if core["epoch"] != self.epoch:
            return "malformed", f"epoch {core['epoch']} signed by the epoch-{self.epoch} key"
        if core["kind"] == "genesis" and i:
            return "malformed", "a second genesis link"
        if core["kind"] == "decision" and (core["trust"] > 3 or core["decision"] not in SEALABLE):
            return "malformed", f"trust {core['trust']} or decision {core['decision']!r} unknown"
        if core["kind"] == "checkpoint":
            return self._check_checkpoint(i, core)
        if core["kind"] == "rotate":
            return self._check_rotate(link)
        return None

    def _check_checkpoint(self, i: int, core: Mapping[str, Any]) -> _Problem:
        expected = (i + 1, self.ids[-1], self.acc.root())
        if (core["size"], core["head"], core["root"]) != expected:
            return "forked", "checkpoint commits to a different history than the links shown"
        return None

    def _check_rotate(self, link: ParsedLink) -> _Problem:
        core = link.core
        if core["new_epoch"] != self.epoch + 1 or core["new_key"] == self.key:
            return "malformed", "rotation must move to epoch + 1 and a different key"
        if link.sig2 is None or not verifies(core["new_key"], link.core_bytes, link.sig2):
            return "bad-signature", "rotate link is not signed by its new key"
        return None

    def _check_trusted(self, i: int, link: ParsedLink) -> _Problem:
        record = self.trusted
        if record is None or i >= record.size:
            return None
        if i < len(record.ids) and link.id != record.ids[i]:
            return "rolled-back", (
                f"link {i} differs from the link {i} this verifier accepted: history diverged "
                f"here (accepted through seq {record.size - 1})"
            )
        if i != record.size - 1:
            return None
        acc = self.acc.copy()
        acc.append(link.id)
        if link.id != record.head or acc.root() != record.root:
            return "rolled-back", (
                f"link {i} is not the checkpoint this verifier accepted (history diverged at "
                "or before it; this trust record keeps no per-link ids to say where)"
            )
        return None

    def _check_end(self) -> Break | None:
        n = len(self.raws)
        if n == 0 and self.empty_ok and (self.trusted is None or self.trusted.size == 0):
            return None  # nothing written yet, and nothing accepted before: no damage
        if n == 0:
            return Break(0, "truncated", "no links: a chain starts with its genesis link")
        if self.trusted is not None and n < self.trusted.size:
            return Break(n, "truncated", f"{n} links, but {self.trusted.size} were accepted")
        return None

    def _advance(self, link: ParsedLink) -> None:
        core, lid = link.core, link.id
        self.ids.append(lid)
        self.acc.append(lid)
        self.since_cp += 1
        if core["kind"] == "genesis":
            self.genesis_key = core["key"]
        if core["kind"] == "rotate":
            self.key, self.epoch = core["new_key"], core["new_epoch"]
        if core["kind"] in ("genesis", "checkpoint"):
            self.anchor, self.since_cp = Anchor(len(self.ids), lid, self.acc.root()), 0


class _Signed(NamedTuple):
    """A plain link's fields, its id, and the key its signature verified under (None: not
    checked, or not under the key guessed)."""

    id: bytes
    signer: bytes | None
    fields: Plain


_Row = _Signed | ParsedLink
_CHUNK = 256  # links per job on the pool
# Every few links scanned, walk on through twice as many: the walk keeps up, in short turns.
_WALK_EVERY = 4
_THREADS = max(1, min(4, os.cpu_count() or 1))
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="nerve-verify")
    return _POOL


def _claimed_key(link: ParsedLink, keys: dict[int, bytes]) -> bytes | None:
    """The key this link's epoch claims, learning keys from genesis and rotate links."""
    if link.error is not None:
        return None
    core = link.core
    if core.get("kind") == "genesis" and type(core.get("key")) is bytes:
        keys.setdefault(core["epoch"], core["key"])
    guess = keys.get(core["epoch"])
    if core.get("kind") == "rotate" and type(core.get("new_key")) is bytes:
        keys.setdefault(core.get("new_epoch", -1), core["new_key"])
    return guess


def _claims(link: ParsedLink, log: bytes, seq: int) -> bool:
    return link.error is None and link.core["seq"] == seq and link.core["log"] == log


def verify_chain(
    links: Sequence[bytes],
    *,
    pinned_key: bytes | None = None,
    trusted: Accepted | None = None,
    empty_ok: bool = False,
) -> ChainReport:
    """Verify ``links`` in order and report the first break (see the module docstring).

    ``pinned_key`` is the expected genesis public key; ``trusted`` the verifier's record of
    the last checkpoint it accepted (its key is pinned too unless ``pinned_key`` is given).
    ``empty_ok``: no links at all is a chain not begun (a workspace whose daemon never
    surfaced anything), not a truncated one, unless ``trusted`` accepted links before.
    """
    return _Verifier(links, pinned_key, trusted, empty_ok).run()


def peek_log_id(links: Sequence[bytes]) -> bytes | None:
    """The log id the first link claims (unverified), to find the matching trust record."""
    if not links:
        return None
    first = parse_link(bytes(links[0]))
    return None if first.error is not None else bytes(first.core["log"])
