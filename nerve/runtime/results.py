"""What a batch of computes stores, and when a sense's state is recorded.

A group's worker answers a batch of computes; :class:`Results` turns the replies into the
events of one commit, laid out as columns: each compute's ``sense.state`` (when the state
changed, a checkpoint is due or observations were withheld), its observations, a ``signal``
when a sense listens, a workflow request or rejection, and a ``sense.error`` for a reply
that failed. Nothing here waits or writes: :meth:`Results.take` says what to store and
:meth:`Results.stored` moves memory once it is durable (see ``nerve.runtime.sensing``).
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from nerve.canonical import canonical_json, jcs_number
from nerve.contract import WorkflowTrigger
from nerve.errors import NerveError
from nerve.events import NERVE_SOURCE, NERVE_TRUST
from nerve.log.drafts import Draft
from nerve.log.wire import draft_from_json
from nerve.privacy.policy import Policy
from nerve.runtime.committer import Columns
from nerve.runtime.groups import Reply
from nerve.runtime.latest import unavailable_note

# A compute that leaves the state as it was is counted, not stored; the count is stored with
# the next `sense.state`, which is written at the latest this long after the previous one
# (and when the daemon stops), so `sense history` still shows the sense running.
STATE_CHECKPOINT_NS = 600 * 1_000_000_000
LATENESS_KEPT = 100_000  # lateness samples kept per sense (status and benches read them)
STATE = "sense.state"


@dataclass
class SenseStats:
    group: str
    computes: int = 0
    errors: int = 0
    last_wall_ns: int | None = None
    last_duration_ms: float | None = None
    last_line: str = ""  # the last reading (an observation's line), kept until the next
    last_line_ns: int | None = None  # when it was read (wall clock)
    unavailable: str = ""  # why the sense cannot observe at all (its state says), else ""
    last_error: str = ""
    last_signal_ns: int | None = None
    lateness_us: list[int] = field(default_factory=list)
    unrecorded: int = 0  # computes since the last `sense.state`, not stored yet
    recorded_ns: int | None = None  # monotonic time of the last `sense.state` since start

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "computes": self.computes,
            "errors": self.errors,
            "last_ns": self.last_wall_ns,
            "last_duration_ms": self.last_duration_ms,
            "last_line": self.last_line,
            "last_line_ns": self.last_line_ns,
            "unavailable": self.unavailable,
            "last_error": self.last_error,
            "last_signal_ns": self.last_signal_ns,
        }


class Screens(Protocol):
    """The pause switch: which observations of a result may be stored."""

    def screen(self, sense: str, observations: list[Draft]) -> list[Draft]: ...


class Private(Protocol):
    """Where the privacy rules in force are found (they change with a reload)."""

    @property
    def privacy(self) -> Policy: ...


Workflow = Callable[[str, Any], tuple[WorkflowTrigger | None, list[Draft]]]


def storable(text: str) -> str:
    """``text`` with anything UTF-8 cannot store (lone surrogates) shown as escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@functools.lru_cache(maxsize=256)
def _text(value: str) -> bytes:
    """A string as canonical JSON; reasons repeat, so their encoding is kept."""
    return canonical_json(value)


def _number(value: Any) -> bytes:
    if value is None:
        return b"null"
    if type(value) is int:
        return b"%d" % value
    if type(value) is float and math.isfinite(value):
        return jcs_number(value).encode()
    return canonical_json(value)


def state_payload(
    state: bytes,
    reason: str,
    duration_ms: Any,
    lateness_us: int,
    computes: int,
    withheld: int | None = None,
) -> bytes:
    """A compute's ``sense.state`` payload, byte for byte what ``canonical_json`` makes of
    the same object (keys in RFC 8785 order), from the state's canonical bytes."""
    out = b'{"computes":%d,"duration_ms":%s,"lateness_us":%d,"reason":%s,"state":%s' % (
        computes,
        _number(duration_ms),
        lateness_us,
        _text(reason),
        state,
    )
    if withheld is not None:
        out += b',"withheld":%d' % withheld
    return out + b"}"


def state_line(sense: str, summary: str | None, computes: int) -> str:
    line = f"{sense}: {summary or 'state updated'}"
    if computes > 1:
        line += f" ({computes} computes since the last record)"
    return line


def error_draft(sense: str, kind: str, message: str) -> Draft:
    first = message.splitlines()[0] if message else ""
    payload = {"sense": sense, "kind": kind, "error": message}
    return Draft.control("sense.error", sense, f"{sense}: {kind}: {first}", payload)


@functools.lru_cache(maxsize=256)
def _reason(reason: str) -> bytes:
    """A signal's payload; reasons repeat, so their encoding is kept."""
    return canonical_json({"reason": reason})


def observation(sense: str, obs: dict[str, Any]) -> Draft:
    fields = draft_from_json(
        {k: v for k, v in obs.items() if k != "subject" and v is not None} | {"kind": "observation"}
    )
    return Draft(**{**fields, "subject": obs.get("subject") or sense})


class Memory:
    """Each sense's state as stored, its initial state, and how it records its state.

    A state is kept as its canonical bytes (what the next compute is sent, and what a
    change is told by); the object is decoded only when something reads it."""

    def __init__(self) -> None:
        self.initial: dict[str, Any] = {}
        self.state_records: dict[str, str] = {}  # sense -> "changes" | "checkpoints"
        self._objects: dict[str, Any] = {}  # sense -> its state, once decoded or given
        self._canonical: dict[str, bytes] = {}  # sense -> canonical bytes of its state

    def has(self, sense: str) -> bool:
        return sense in self._canonical or sense in self._objects

    def state_of(self, sense: str) -> Any:
        if sense in self._objects:
            return self._objects[sense]
        if sense in self._canonical:
            state = self._objects[sense] = json.loads(self._canonical[sense])
            return state
        return self.initial.get(sense)

    def canonical(self, sense: str) -> bytes:
        known = self._canonical.get(sense)
        if known is None:
            known = self._canonical[sense] = canonical_json(self.state_of(sense))
        return known

    def set(self, sense: str, state: Any, canonical: bytes | None = None) -> None:
        self._objects[sense] = state
        if canonical is None:
            self._canonical.pop(sense, None)
        else:
            self._canonical[sense] = canonical

    def set_canonical(self, sense: str, canonical: bytes) -> None:
        """The state as canonical bytes only (decoded if and when it is read)."""
        self._canonical[sense] = canonical
        self._objects.pop(sense, None)

    def checkpointed(self, sense: str) -> bool:
        """True when ``sense`` stores its state at checkpoints only (``state_records``)."""
        return self.state_records.get(sense) == "checkpoints"


_UNREAD = object()  # a state known by its canonical bytes only


@dataclass(frozen=True, slots=True)
class Moved:
    """A compute whose state moves once its batch is durable."""

    reply: Reply
    state: Any
    canonical: bytes
    lateness_us: int
    line: str | None  # the first observation's line; None: nothing observed


@dataclass
class Outcome:
    """What one batch stores (``columns``), and what follows once it is stored."""

    columns: Columns = field(default_factory=Columns)
    moved: list[Moved] = field(default_factory=list)
    errors: list[tuple[str, str, str]] = field(default_factory=list)  # sense, kind, message
    skipped: list[tuple[str, str]] = field(default_factory=list)  # sense, reason
    workflows: list[tuple[WorkflowTrigger, str]] = field(default_factory=list)


def _state(body: dict[str, Any]) -> tuple[Any, bytes]:
    """A reply's state and its canonical bytes: the worker sends the bytes it checked
    (``state_jcs``), so they are not encoded again here."""
    text = body.get("state_jcs")
    if isinstance(text, str):
        return _UNREAD, text.encode("utf-8")
    return body["state"], canonical_json(body["state"], field="state")


class Results:
    """Turns replies into stored events; holds each sense's memory and counters."""

    def __init__(
        self,
        rules: Private,
        screens: Screens,
        listened: Callable[[str], bool],
        workflow: Workflow,
        *,
        now_ns: Callable[[], int] = time.monotonic_ns,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self._rules = rules
        self.memory = Memory()
        self.stats: dict[str, SenseStats] = {}
        self._screens = screens
        self._listened = listened
        self._workflow = workflow
        self._now = now_ns
        self._wall = wall_ns

    @property
    def policy(self) -> Policy:
        return self._rules.privacy

    def take(self, replies: list[Reply]) -> Outcome:
        """The events of one batch of replies, in the order the computes ran."""
        out = Outcome()
        for reply in replies:
            body, sense = reply.body, reply.job.sense
            if not body.get("ok"):
                kind = body.get("error_kind", "exception")
                self._error(out, sense, kind, body.get("error", ""))
            elif "skip" in body:  # the compute had nothing to do: counted, state unchanged
                out.skipped.append((sense, storable(str(body["skip"]))))
            else:
                try:
                    self._computed(out, reply)
                except NerveError as exc:  # e.g. an observation field the worker let through
                    self._error(out, sense, "unserialisable", f"result cannot be stored: {exc}")
        return out

    def error_record(self, sense: str, kind: str, message: str) -> tuple[str, Draft]:
        """A failure's message as it can be shown (redacted: the daemon log and ``nerve
        status`` hold it), and its ``sense.error`` record."""
        message = storable(message)
        draft = self.policy.redact(error_draft(sense, kind, message))
        return self.policy.clean(message, sense), draft

    def _error(self, out: Outcome, sense: str, kind: str, message: str) -> None:
        message, draft = self.error_record(sense, kind, message)
        out.errors.append((sense, kind, message))
        out.columns.add(draft)

    def _computed(self, out: Outcome, reply: Reply) -> None:
        """One compute's events; everything that may fail is done before any is kept."""
        job, body = reply.job, reply.body
        sense = job.sense
        observed = [observation(sense, obs) for obs in body.get("observations", ())]
        kept = self._screens.screen(sense, observed)
        drafts = self.policy.capture_all(kept)
        trigger, extra = self._workflow(sense, body.get("workflow"))
        lateness = max(0, (reply.started_ns - job.due_ns) // 1000)
        state, canonical = _state(body)
        withheld = len(observed) - len(kept) if len(kept) < len(observed) else None
        stats = self.stats[sense]
        now = self._now()
        if (
            withheld is not None
            or (canonical != self.memory.canonical(sense) and not self.memory.checkpointed(sense))
            or stats.recorded_ns is None  # the first compute since the daemon started
            or now - stats.recorded_ns >= STATE_CHECKPOINT_NS
        ):
            computes = stats.unrecorded + 1
            payload = state_payload(
                canonical, job.reason, body.get("duration_ms"), lateness, computes, withheld
            )
            line = state_line(sense, drafts[0].line if drafts else None, computes)
            state, canonical = self._record_state(
                out.columns, sense, job.reason, line, payload, state, canonical
            )
            stats.unrecorded, stats.recorded_ns = 0, now
        else:
            stats.unrecorded += 1
        out.columns.extend(drafts)
        if body.get("signal") and self._listened(sense):
            out.columns.add(self._signal(sense, job.reason, body.get("value")))
        out.columns.extend(extra)
        if trigger is not None:
            out.workflows.append((trigger, sense))
        shown = next((d.line for d in drafts if d.kind == "observation"), None)
        out.moved.append(Moved(reply, state, canonical, lateness, shown))

    def _record_state(
        self,
        columns: Columns,
        sense: str,
        reason: str,
        line: str,
        payload: bytes,
        state: Any,
        canon: bytes,
    ) -> tuple[Any, bytes]:
        """Add the ``sense.state`` record; a privacy rule that fires in it changes what
        memory keeps too (the state as stored, and its canonical bytes)."""
        plan = self.policy.plan(NERVE_SOURCE, STATE, sense)
        # Rules redact strings; the payload's strings are all in the state and the reason
        # (its numbers are counts and times), so the quick test needs only those.
        if plan.untouched(line, canon + _text(reason), sense):
            columns.record(STATE, sense, line, payload)
            return state, canon
        draft = Draft(STATE, NERVE_SOURCE, NERVE_TRUST, line, payload, sense, None)
        redacted = self.policy.redact(draft)
        columns.add(redacted)
        if redacted is draft:  # a detector looked, and nothing matched
            return state, canon
        kept = json.loads(redacted.payload)["state"]
        return kept, canonical_json(kept)

    def _signal(self, sense: str, reason: str, value: Any) -> Draft:
        """The ``signal`` event; a state-less return's value (seed 001) rides on it, redacted."""
        line = f"{sense} signalled"
        if value is None:
            return Draft.control("signal", sense, line, _reason(reason))
        payload = {"reason": reason, "value": value}
        return self.policy.redact(Draft.control("signal", sense, line, payload))

    def stored(self, outcome: Outcome) -> Iterator[str]:
        """Move memory and counters for a batch now durable; yields the senses that signal."""
        wall = self._wall()
        for moved in outcome.moved:
            sense, body = moved.reply.job.sense, moved.reply.body
            if moved.state is _UNREAD:
                self.memory.set_canonical(sense, moved.canonical)
            else:
                self.memory.set(sense, moved.state, moved.canonical)
            stats = self.stats[sense]
            stats.computes += 1
            stats.last_wall_ns = wall
            stats.last_duration_ms = body.get("duration_ms")
            if moved.line is not None:  # a compute that observed nothing keeps the last reading
                stats.last_line, stats.last_line_ns = moved.line, wall
            stats.unavailable = self._unavailable(sense, moved.state)
            if len(stats.lateness_us) < LATENESS_KEPT:
                stats.lateness_us.append(moved.lateness_us)
            if body.get("signal"):
                stats.last_signal_ns = wall
                yield sense

    def _unavailable(self, sense: str, state: Any) -> str:
        """Why ``sense`` cannot observe, from the state it now holds (``""``: it can)."""
        return unavailable_note(self.memory.canonical(sense), None if state is _UNREAD else state)

    def counted_error(self, sense: str, kind: str, message: str) -> None:
        stats = self.stats.setdefault(sense, SenseStats(group="?"))
        stats.errors += 1
        stats.last_error = f"{kind}: {message}"

    def checkpoints(self) -> Columns:
        """The counts of computes not recorded yet, as ``sense.state`` records (at a stop)."""
        columns = Columns()
        for name, stats in sorted(self.stats.items()):
            if stats.unrecorded and self.memory.has(name):
                payload = {
                    "state": self.memory.state_of(name),
                    "reason": "checkpoint",
                    "computes": stats.unrecorded,
                }
                line = state_line(name, None, stats.unrecorded)
                columns.add(self.policy.redact(Draft.control(STATE, name, line, payload)))
                stats.unrecorded = 0
        return columns
