"""The nouns of the front door about attention and senses: ``ws.audit``, ``ws.senses`` and
``ws.sense(name)`` (:mod:`nerve.door.nouns` says what a noun is; ``ws.fleet``, ``ws.sync``,
``ws.runs`` and ``ws.run(id)`` are in :mod:`nerve.door.fleet`, ``sync`` and ``runs``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve.door.nouns import Noun

if TYPE_CHECKING:
    from nerve.attention.audit import Verdict
    from nerve.attention.reason import Reason
    from nerve.attention.service import Recomputed, ReplayResult
    from nerve.attention.whatif import WhatIf
    from nerve.door.core import Core
    from nerve.door.reads import StoredSense
    from nerve.pkcs11token import TokenRef
    from nerve.query import QueryResult, QueryStream
    from nerve.seal import SealReport, Seed
    from nerve.seal.witness import Cosigned

__all__ = ["Audit", "Bundle", "Decision", "Link", "Sense", "Senses"]


@dataclass(frozen=True)
class Bundle:
    """The surfacing chain written as a bundle that verifies offline (``nerve audit
    export``): where, how many links, and the public key they verify under."""

    path: str
    links: int
    public_key: str | None  # hex; None for a chain whose genesis names no key


@dataclass(frozen=True)
class Decision:
    """One attention decision as the log holds it: its event's ``hlc`` and ``ts``, its
    ``outcome`` (``surface``, ``hold:value``, ``hold:budget``), its ``chain_seq`` in the
    sealed chain, and the whole stored payload in ``fields`` (figures, highlight, cause)."""

    hlc: str
    ts: str | None
    outcome: str
    chain_seq: int | None
    fields: dict[str, Any]

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Decision:
        """A decision from a stored row (the payload with ``hlc`` and ``ts``)."""
        seq = row.get("chain_seq")
        return cls(
            hlc=str(row.get("hlc", "")),
            ts=row.get("ts"),
            outcome=str(row.get("outcome", "")),
            chain_seq=seq if isinstance(seq, int) else None,
            fields=dict(row),
        )

    def why(self) -> Reason:
        """Why it was decided so: the rule and the figures it compared (``.words()``)."""
        from nerve.attention.reason import reason_of

        return reason_of(self.fields)

    def to_json(self) -> dict[str, Any]:
        return dict(self.fields)


@dataclass(frozen=True)
class Link:
    """One link of the sealed surfacing chain decoded (``nerve audit show``): its ``seq``,
    its ``kind`` (``genesis``, ``decision``, ``rotation`` ...), whether the chain verifies up
    to and through it, and every decoded field in ``fields``, whose names depend on the kind
    (a decision's add its ``source_line``, ``cause`` and ``why``)."""

    seq: int
    kind: str
    verified: bool
    fields: dict[str, Any]

    @classmethod
    def of(cls, decoded: Mapping[str, Any]) -> Link:
        """A link from its decoded fields (``verified_through_here`` among them)."""
        seq = decoded.get("seq")
        verified = decoded.get("verified_through_here") is True
        return cls(
            seq if isinstance(seq, int) else -1,
            str(decoded.get("kind", "")),
            verified,
            dict(decoded),
        )

    def to_json(self) -> dict[str, Any]:
        return dict(self.fields)


class Audit(Noun):
    """The attention decisions and the sealed surfacing chain they are written to
    (``ws.audit``): what was held and why, one link shown, the chain verified or exported,
    decisions recomputed, the chain's key rotated, and epoch seals set up and verified."""

    def verify(self, *, record: bool = False, key: bytes | None = None) -> Verdict:
        """Verify the sealed surfacing chain (``nerve audit verify``); ``record`` advances
        the trust record as the CLI does."""
        return self._ws._audit_verify(record=record, key=key)

    def verify_with(self, *, key: bytes | None, key_from: str, record: bool) -> Verdict:
        """The surfacing chain verified against ``key`` (said to come from ``key_from``),
        else the pinned one; an empty chain is fine (none was ever written)."""
        from nerve.attention import audit

        return audit.verify(
            audit.chain_links(self._dir.log_root),
            origin=f"workspace:{self._dir.root}",
            key=key,
            key_from=key_from,
            record=record and not self._ws.read_only,
            empty_ok=True,
        )

    def links(self) -> list[bytes]:
        """The sealed surfacing chain's links, as stored, in order."""
        return self._ws._chain_links()

    def held(self, since_ns: int | None = None) -> list[Decision]:
        """Every decision the gate held back (decided after ``since_ns``), and why: its
        outcome (``hold:value``, ``hold:budget``), figures and the highlight it answered."""
        return [Decision.of(row) for row in self._ws._held(since_ns)]

    def show(self, seq: int) -> Link:
        """One sealed link by chain seq, the chain verified up to it (``nerve audit show``)."""
        return Link.of(self._ws._audit_show(seq))

    def export(self, out: Path) -> Bundle:
        """Write the surfacing chain as a bundle that verifies offline elsewhere."""
        from nerve.attention import bundle

        return Bundle(**bundle.export(self._dir.log_root, out))

    def decisions(self) -> list[Decision]:
        """Every attention decision stored, oldest first, with its figures and chain seq."""
        from nerve.attention import audit

        return [Decision.of(row) for row in audit.decisions(self._dir.log_root)]

    def why(self, seq: int) -> Reason | None:
        """Why the decision sealed as chain link ``seq`` was decided so (``.words()``), or
        None when the log holds no decision at that seq."""
        found = [d for d in self.decisions() if d.chain_seq == seq]
        return found[0].why() if found else None

    def follow(self, *, poll_s: float = 0.2) -> Iterator[Decision]:
        """Each attention decision as it is stored from now on: its payload, with the
        event's ``hlc`` (what ``nerve attend --follow`` prints)."""
        return (Decision.of(row) for row in self._ws._follow_decisions(poll_s=poll_s))

    def attend(self) -> ReplayResult:
        """Attend to the observations not yet attended, as the daemon would (no daemon may
        run: it attends as it runs)."""
        return self._ws._attend_replay()

    def recompute(self) -> Recomputed:
        """Recompute every attention decision from the log and compare (``.ok``)."""
        return self._ws._attend_recompute()

    def what_if(self, settings_file: Path, since_ns: int = 0) -> WhatIf:
        """The log's observations attended again under the ``attention:`` settings of
        ``settings_file`` laid over this workspace's (``nerve attend --replay --with``);
        nothing is written."""
        return self._ws._attend_what_if(settings_file, since_ns)

    def rotate_key(self) -> int:
        """Move the surfacing chain to a new signing key; the new key epoch."""
        return self._ws._rotate_key()

    def seal_setup(self, epoch_s: int, *, bits: int = 16, token: TokenRef | None = None) -> Seed:
        """Set epoch sealing up (once): the verification seed to keep off this machine; a
        token's identity key, if given, certifies it."""
        from nerve.seal import setup
        from nerve.seal.token import certifier

        folder = self._writable().data / "seals"
        return setup(
            folder, epoch_s, bits=bits, certify=None if token is None else certifier(token)
        )

    def seal_verify(self, seed: Seed, *, now_ns: int | None = None) -> SealReport:
        """Every epoch seal verified against ``seed`` and the log as it is now."""
        import time

        from nerve.seal import SealDir, read_log, verify

        now = time.time_ns() if now_ns is None else now_ns
        seals = SealDir(self._dir.data / "seals")
        return verify(seed, seals.notes(), read_log(self._dir.log_root), now)

    def witness(self, other: Path, seed: Seed) -> Cosigned:
        """Cosign the newest seal of the workspace at ``other`` (this workspace witnesses
        it): its seals verified with ``seed``, and no other history than the one cosigned
        before."""
        from nerve.seal import SealDir, read_log
        from nerve.seal.witness import cosign
        from nerve.workspace import WorkspaceDir

        theirs = WorkspaceDir(Path(other).resolve())
        notes = SealDir(theirs.data / "seals").notes()
        folder = self._writable().data / "witness"
        return cosign(folder, seed, notes, read_log(theirs.log_root))


class Senses(Noun):
    """Every sense of the workspace (``ws.senses``); one by name is ``ws.sense(name)``."""

    def all(self) -> list[dict[str, Any]]:
        """Every sense: live figures from the daemon when it runs, else nerve.yaml's. Rows
        are dicts by design: ``name`` is always there, the other figures depend on the sense
        and on whether a daemon answered (a vendor sense reports its own)."""
        return self._ws._senses()

    def stored(self) -> list[str]:
        """Every sense with a stored state, by name (what ``ws.sense(name).state()`` can show)."""
        return self._ws._stored_senses()

    def live(self, *, timeout: float = 10) -> dict[str, dict[str, Any]]:
        """The running daemon's own figures per sense, by name (the log records a steady
        sense's state only at checkpoints); empty when no daemon answers. Dicts by design,
        as :meth:`all`'s rows: the figures depend on the sense."""
        return self._ws._live_senses(timeout=timeout)


class Sense(Noun):
    """One sense by name (``ws.sense("cpu")``): its newest stored state, its history, its
    data's schema, SQL over that data, and a compute asked of the daemon now."""

    def __init__(self, ws: Core, name: str) -> None:
        super().__init__(ws)
        self.name = name  # the sense's name

    def __repr__(self) -> str:
        return f"{self._ws!r}.sense({self.name!r})"

    def state(self) -> StoredSense | None:
        """The newest ``sense.state`` of sense ``name``, or None if none is stored."""
        return self._ws._sense_state(self.name)

    def history(self, n: int = 20) -> QueryResult:
        """The newest ``n`` events about sense ``name`` (computes, errors, signals,
        observations), oldest first: ``hlc``, ``ts``, ``kind``, ``line``."""
        return self._ws._sense_history(self.name, n)

    def schema(self) -> list[tuple[str, str, str]]:
        """``(view, column, type)`` of sense ``name``'s data: ``observations`` flattened,
        ``states``, and the views its ``senses/<name>/*.sql`` define."""
        return self._ws._sense_schema(self.name)

    def query(self, sql: str) -> QueryStream:
        """SQL over one sense's data (``observations``, ``states``, its own views), read
        lazily as ``ws.query`` does."""
        return self._ws._sense_query(self.name, sql)

    def trigger(self) -> None:
        """Ask the running daemon to compute a sense now (``UsageError`` without one)."""
        return self._ws._trigger_sense(self.name)
