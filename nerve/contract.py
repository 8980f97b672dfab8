"""The sense contract: what ``compute(state)`` may return, in one documented Python shape.

A sense is a folder ``senses/<name>/`` holding ``sense.py`` that exports::

    initial_state = {...}                    # any JSON-serialisable value
    def compute(state): ...                  # or async def; may also take (state, ctx)
    state_records = "checkpoints"            # optional; the default is "changes"

``state_records`` says when a changed state is stored. ``"changes"`` (the default): every
change is a ``sense.state`` event, so a restart, even after SIGKILL, resumes from the exact
state. ``"checkpoints"``: for a state that only carries the previous reading (counters to take
a difference from), stored at most every 10 minutes and at stop. A clean restart resumes from
it; after a daemon that did not stop cleanly the sense starts from ``initial_state`` (a new
baseline), never from a stale reading that would count an interval twice.

``compute`` returns one of:

- ``nerve.Result(state=..., observations=[...], workflow=...)``;
- a mapping ``{"state": ..., "observations": [...], "workflow": ...}`` (seed 000's shape);
- a mapping without ``state`` (the TypeScript nerve's ``{path, workflow}``): state unchanged;
  its keys other than ``observations``, ``workflow`` and ``signal`` are the signal's
  ``value``;
- ``None``: state unchanged, nothing observed, no signal;
- ``nerve.Skip("reason")``: nothing to do this time; state unchanged, and the reason is counted
  and recorded as a ``sense.skipped`` event (repeats folded, see ``nerve.runtime.skips``).

A compute signals its ``on:`` listeners unless it launches a workflow (seed 001: a return
that starts a workflow is not a signal); ``signal=True`` signals anyway, ``signal=False``
never. A trigger that does not parse launches nothing, so that return signals.

``workflow`` may be a :class:`WorkflowTrigger`, a mapping
``{"name", "max_rounds", "prompt", "dry_run", "key"}`` (``maxRounds``/``dryRun`` also read;
``key`` dedupes runs: a key that already started a run starts none), or the
string ``"name|max_rounds|prompt"`` (only the first two ``|`` delimit; the rest is the prompt).
A trigger that does not parse is rejected with an event; the compute itself still counts.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nerve.errors import SenseError, WorkflowError
from nerve.events import Trust, parse_source, parse_trust

MAX_ROUNDS_LIMIT = 10_000
MAX_SKIP_REASON = 200  # characters
MAX_KEY = 200  # characters of a workflow trigger's dedupe key


def _is_attested(trust: object) -> bool:
    try:
        return parse_trust(trust) == Trust.ATTESTED  # type: ignore[arg-type]
    except Exception:
        return False  # normalised() names the bad value


@dataclass(frozen=True, slots=True)
class Observation:
    """A Sense v0.1 event a sense reports; the kernel stamps and stores it."""

    source: int | str
    line: str
    payload: Any = None
    trust: Trust | str | int = Trust.UNTRUSTED
    valid_time_ns: int | None = None
    subject: str | None = None

    def normalised(self) -> Observation:
        """Same observation with ``source`` and ``trust`` as codes; raises ``SenseError``
        (also for ``Attested``: a sense holds no key the workspace pins, see
        ``nerve.log.attest``)."""
        if _is_attested(self.trust):
            raise SenseError(
                "invalid observation: trust Attested refused: a sense cannot attest (rule: "
                "Attested needs an Ed25519 signature over the event's claim by a key pinned "
                "in nerve.yaml attestation.keys)",
                hint="report FirstParty for an OS API the sense called; a device that signs "
                "emits through the socket",
            )
        try:
            return Observation(
                source=parse_source(self.source),
                line=str(self.line),
                payload=self.payload,
                trust=parse_trust(self.trust),
                valid_time_ns=self.valid_time_ns,
                subject=self.subject,
            )
        except Exception as exc:
            raise SenseError(f"invalid observation: {exc}") from None


@dataclass(frozen=True, slots=True)
class WorkflowTrigger:
    """A request to run a workflow. ``max_rounds=None`` means the configured default."""

    name: str
    max_rounds: int | None = None
    prompt: str = ""
    dry_run: bool = False
    key: str | None = None

    @classmethod
    def parse(cls, value: Any) -> WorkflowTrigger:
        """Accept a trigger, a mapping or a ``name|rounds|prompt`` string; raise WorkflowError."""
        if isinstance(value, WorkflowTrigger):
            return value.checked()
        if isinstance(value, str):
            return _parse_directive(value)
        if isinstance(value, Mapping):
            return _parse_mapping(value)
        raise WorkflowError(
            f"workflow trigger must be a string or mapping, got {type(value).__name__}"
        )

    def checked(self) -> WorkflowTrigger:
        if not isinstance(self.name, str) or not self.name.strip():
            raise WorkflowError("workflow trigger needs a non-empty name")
        if not isinstance(self.prompt, str):
            raise WorkflowError(
                f"workflow prompt must be a string, got {type(self.prompt).__name__}"
            )
        rounds = self.max_rounds
        if rounds is not None and (
            isinstance(rounds, bool)
            or not isinstance(rounds, int)
            or not 1 <= rounds <= MAX_ROUNDS_LIMIT
        ):
            raise WorkflowError(
                f"max_rounds {rounds!r} must be an integer in 1..{MAX_ROUNDS_LIMIT}"
            )
        if not isinstance(self.dry_run, bool):
            raise WorkflowError(f"dry_run must be true or false, got {self.dry_run!r}")
        key = self.key
        if key is not None and (not isinstance(key, str) or not key or len(key) > MAX_KEY):
            raise WorkflowError(
                f"workflow key must be a non-empty string of at most {MAX_KEY} characters,"
                f" got {key!r}"
            )
        return self

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "max_rounds": self.max_rounds,
            "prompt": self.prompt,
            "dry_run": self.dry_run,
        }
        if self.key is not None:  # absent when unset: older payloads stay as they were
            out["key"] = self.key
        return out


def _parse_directive(text: str) -> WorkflowTrigger:
    parts = text.split("|", 2)
    if len(parts) != 3:
        raise WorkflowError(f"workflow directive {text!r} must look like 'name|max_rounds|prompt'")
    name, rounds, prompt = parts
    try:
        max_rounds = int(rounds.strip())
    except ValueError:
        raise WorkflowError(
            f"workflow directive {text!r}: max_rounds {rounds!r} is not an integer"
        ) from None
    return WorkflowTrigger(name.strip(), max_rounds, prompt).checked()


def _parse_mapping(value: Mapping[str, Any]) -> WorkflowTrigger:
    known = {"name", "max_rounds", "maxRounds", "prompt", "dry_run", "dryRun", "key"}
    extra = sorted(set(value) - known)
    if extra:
        raise WorkflowError(f"workflow trigger has unknown keys: {', '.join(map(str, extra))}")
    return WorkflowTrigger(
        name=value.get("name", ""),
        max_rounds=value.get("max_rounds", value.get("maxRounds")),
        prompt=value.get("prompt", ""),
        dry_run=value.get("dry_run", value.get("dryRun", False)),
        key=value.get("key"),
    ).checked()


@dataclass(frozen=True, slots=True)
class Result:
    """What a compute returns. ``workflow`` is validated by the kernel, not here."""

    state: Any
    observations: Sequence[Observation] = ()
    workflow: Any = None
    signal: bool | None = None  # None: signal unless a workflow is launched
    value: Any = None  # what a state-less mapping returned, carried by its signal


@dataclass(frozen=True, slots=True)
class Skip:
    """What a compute returns when it has nothing to do: ``return nerve.Skip("no new mail")``."""

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise SenseError(f"Skip needs a non-empty reason string, got {self.reason!r}")
        if len(self.reason) > MAX_SKIP_REASON:
            raise SenseError(f"Skip reason is longer than {MAX_SKIP_REASON} characters")


@dataclass(frozen=True, slots=True)
class SenseContext:
    """Passed as the second argument to ``compute(state, ctx)`` when it takes one.

    ``cancelled`` turns true when the compute has run past its timeout: a long compute
    should check it and return (or raise) soon; it has the grace period before its worker
    is killed. An ``async`` compute is cancelled instead (``asyncio.CancelledError``).
    """

    name: str
    workspace: Path
    options: Mapping[str, Any] = field(default_factory=dict)
    cancel_event: threading.Event = field(
        default_factory=threading.Event, repr=False, compare=False
    )

    @property
    def cancelled(self) -> bool:
        """Whether this compute has been asked to stop (its timeout ran out)."""
        return self.cancel_event.is_set()


_NO_RESULT = object()


def normalise_result(returned: Any, previous_state: Any) -> Result:
    """Turn any accepted return shape into a :class:`Result`; raise ``SenseError`` otherwise."""
    if returned is None:
        return Result(state=previous_state, signal=False)
    if isinstance(returned, Result):
        result = returned
    elif isinstance(returned, Mapping) and "state" in returned:
        extra = sorted(set(returned) - {"state", "observations", "workflow", "signal"})
        if extra:
            raise SenseError(f"compute returned unknown keys: {', '.join(map(str, extra))}")
        result = Result(
            state=returned["state"],
            observations=returned.get("observations") or (),
            workflow=returned.get("workflow"),
            signal=_signal(returned),
        )
    elif isinstance(returned, Mapping):
        value = {k: v for k, v in returned.items() if k not in _RESULT_KEYS}
        result = Result(
            state=previous_state,
            observations=returned.get("observations") or (),
            workflow=returned.get("workflow"),
            signal=_signal(returned),
            value=value or None,
        )
    else:
        raise SenseError(
            "compute must return nerve.Result, a mapping with a 'state' key, or None; "
            f"got {type(returned).__name__}"
        )
    if not isinstance(result.observations, Sequence) or isinstance(
        result.observations, str | bytes
    ):
        raise SenseError("observations must be a list of nerve.Observation")
    obs = []
    for raw in result.observations:
        item = Observation(**raw) if isinstance(raw, Mapping) else raw
        if not isinstance(item, Observation):
            raise SenseError(
                f"observation must be nerve.Observation or a mapping, got {type(item).__name__}"
            )
        obs.append(item.normalised())
    return Result(
        state=result.state,
        observations=tuple(obs),
        workflow=result.workflow,
        signal=result.signal,
        value=result.value,
    )


_RESULT_KEYS = frozenset({"observations", "workflow", "signal"})


def _signal(returned: Mapping[str, Any]) -> bool | None:
    raw = returned.get("signal")
    return None if raw is None else bool(raw)
