"""Which privacy rules apply to an event, and applying them before it is stored.

A :class:`Policy` is built from the ``privacy:`` section. For each (source, kind, subject)
it makes a :class:`Plan` once: the drop rules and exclusions that apply, and a
:class:`~nerve.privacy.scan.Redactor` with the detectors and regex rules that do.
``capture`` drops or redacts a draft; ``redact`` only redacts (nerve's own records, such
as a sense's state, are never dropped); ``screen`` refuses whole events it would change.
A plan is chosen by the subject as sent (a ``sense:`` scope names it); the subject itself is
then redacted like the line, and a drop rule's regex or detector looks at it too.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from nerve.canonical import canonical_json
from nerve.errors import PrivacyError
from nerve.events import NERVE_SOURCE, Event, SourceClass, decode_payload, parse_source
from nerve.log.drafts import Draft
from nerve.privacy.scan import Counts, Pass, Redactor, detector_pass
from nerve.privacy.settings import PrivacyConfig, RuleConfig

__all__ = ["Plan", "Policy", "Verdict", "path_glob", "program_of"]

_MAX_PLANS = 4096
_STATE = "sense.state"  # a sense's state: nerve's own, never dropped, so pruned
_PROCESSES = "processes.exclude"
_Test = Callable[[str, str, Any], bool]  # (line, subject, decoded payload) -> it matches
# The payload field each built-in sense reports what it saw in, by source class.
_FIELD: dict[int, str] = {
    SourceClass.SHELL: "command",
    SourceClass.FILE_CHANGE: "path",
    SourceClass.PROCESS_TREE: "name",
}


def path_glob(pattern: str) -> re.Pattern[str]:
    """A path glob: ``**`` spans folders, ``*`` and ``?`` stay within one name; a glob with
    no ``/`` matches a name at any depth; a match also covers everything under it."""
    text = pattern.removeprefix("./").rstrip("/") or "/"
    pieces = {"**/": "(?:.*/)?", "/**": "(?:/.*)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    tokens = re.split(r"(\*\*/|/\*\*$|\*\*|\*|\?)", text)
    body = "".join(pieces.get(t, re.escape(t)) for t in tokens)
    anywhere = "(?:.*/)?" if "/" not in text else ""
    return re.compile(f"{anywhere}{body}(?:/.*)?")


def program_of(command: str) -> str:
    """The program a shell command runs: its first word past ``VAR=value`` and ``sudo``,
    without its folder."""
    for word in command.split():
        if word == "sudo" or ("=" in word and not word.startswith("=")):
            continue
        return word.rsplit("/", 1)[-1]
    return ""


@dataclass(frozen=True, slots=True)
class _Scope:
    sources: frozenset[int] = frozenset()
    kinds: frozenset[str] = frozenset()
    senses: frozenset[str] = frozenset()

    @classmethod
    def of(cls, rule: RuleConfig) -> _Scope:
        return cls(
            frozenset(parse_source(s) for s in rule.source),
            frozenset(rule.kind),
            frozenset(rule.sense),
        )

    def covers(self, source: int, kind: str, subject: str) -> bool:
        return (
            (not self.sources or source in self.sources)
            and (not self.kinds or kind in self.kinds)
            and (not self.senses or subject in self.senses)
        )


@dataclass(frozen=True, slots=True)
class _Drop:
    name: str
    scope: _Scope
    test: _Test


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):  # a key is text too: {"<secret>": 1}
        for key, item in value.items():
            yield key
            yield from _strings(item)


def _finds(step: Pass) -> _Test:
    def test(line: str, subject: str, payload: Any) -> bool:
        return any(step.found(s) for s in (line, subject, *_strings(payload)))

    return test


def _field_matches(key: str, match: Callable[[str], bool]) -> _Test:
    def test(line: str, subject: str, payload: Any) -> bool:
        value = payload.get(key) if isinstance(payload, dict) else None
        return isinstance(value, str) and match(value)

    return test


def _always(line: str, subject: str, payload: Any) -> bool:
    return True


def _rule_drop(rule: RuleConfig) -> _Drop:
    test: _Test = _always
    if rule.regex is not None:
        test = _finds(Pass(rule.label, re.compile(rule.regex)))
    elif rule.detector is not None:
        test = _finds(detector_pass(rule.detector))
    return _Drop(rule.label, _Scope.of(rule), test)


def _exclusions(config: PrivacyConfig) -> list[_Drop]:
    """``files``, ``shell`` and ``processes`` exclusions, on the payload field each sense
    reports (``path``, ``command``, ``name``) of any event of its source class."""
    drops = []
    if config.files.exclude:
        globs = [path_glob(p) for p in config.files.exclude]
        drops.append(_exclusion("files", "path", lambda p: any(g.fullmatch(p) for g in globs)))
    if shell := config.shell.exclude:

        def command(text: str) -> bool:
            text, program = text.strip(), program_of(text)
            return any(
                fnmatch.fnmatchcase(text, p) or fnmatch.fnmatchcase(program, p) for p in shell
            )

        drops.append(_exclusion("shell", "command", command))
    if match := _process_match(config):
        # the network sense names the process that holds a port it saw open or close
        scope = _Scope(frozenset({int(SourceClass.PROCESS_TREE), int(SourceClass.NETWORK)}))
        drops.append(_Drop(_PROCESSES, scope, _any_process(match)))
    return drops


def _process_match(config: PrivacyConfig) -> Callable[[str], bool] | None:
    """Whether ``processes.exclude`` names a process (None: it names none)."""
    names = config.processes.exclude
    return (lambda n: any(fnmatch.fnmatchcase(n, p) for p in names)) if names else None


def _process_names(payload: Any) -> Iterator[str]:
    """Every process a process event names: its own ``name``, each listed one's (a ``top``'s
    ``cpu``, ``memory`` and ``over``) and each one a ``brief`` counts."""
    if not isinstance(payload, dict):
        return
    if isinstance(payload.get("name"), str):
        yield payload["name"]
    if isinstance(counts := payload.get("counts"), dict):
        yield from (k for k in counts if isinstance(k, str))
    for value in payload.values():
        if isinstance(value, list):
            yield from (n for item in value for n in _process_names(item))


def _any_process(match: Callable[[str], bool]) -> _Test:
    """Whether a process event names a process ``match`` excludes: a top or brief listing
    one is withheld whole (its line names it as well), not only its start and exit."""

    def test(line: str, subject: str, payload: Any) -> bool:
        return any(match(name) for name in _process_names(payload))

    return test


def _pruner(match: Callable[[str], bool]) -> Callable[[bytes], tuple[bytes, int]]:
    """A sense's state (never dropped: nerve's own) with every excluded process taken out:
    an object whose ``name`` is one (the processes sense's notable ones, with their command
    lines) and its count under ``counts`` (a brief's); also how many went."""

    def gone(key: str, value: Any, under: str) -> bool:
        named = isinstance(value, dict) and isinstance(value.get("name"), str)
        return (named and match(value["name"])) or (under == "counts" and match(key))

    def prune(payload: bytes) -> tuple[bytes, int]:
        removed = 0

        def walk(value: Any, under: str) -> Any:
            nonlocal removed
            if isinstance(value, list):
                items = [walk(v, "") for v in value if not gone("", v, "")]
                removed += len(value) - len(items)
                return items
            if not isinstance(value, dict):
                return value
            kept = {k: walk(v, k) for k, v in value.items() if not gone(k, v, under)}
            removed += len(value) - len(kept)
            return kept

        kept = walk(decode_payload(payload), "")
        return (canonical_json(kept) if removed else payload), removed

    return prune


def _exclusion(section: str, key: str, match: Callable[[str], bool]) -> _Drop:
    source = next(s for s, k in _FIELD.items() if k == key)
    return _Drop(f"{section}.exclude", _Scope(frozenset({int(source)})), _field_matches(key, match))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the rules do to one event: the rule that drops it, or the redacted fields."""

    dropped_by: str | None
    line: str
    payload: bytes
    fired: Counts
    subject: str = ""

    @property
    def changed(self) -> bool:
        return self.dropped_by is not None or bool(self.fired)


@dataclass
class Plan:
    """The rules for one (source, kind, subject)."""

    drops: list[_Drop]
    redactor: Redactor
    prune: Callable[[bytes], tuple[bytes, int]] | None = None  # a state's excluded processes

    def untouched(self, line: str, payload: bytes, subject: str = "") -> bool:
        """Whether nothing can change this event but a drop (the quick test capture uses)."""
        return self.prune is None and self.redactor.untouched(line, payload, subject)

    def verdict(
        self, line: str, payload: bytes, subject: str = "", *, drops: bool = True
    ) -> Verdict:
        """What the rules do to an event with this ``line``, ``payload`` and ``subject``
        (the subject the plan was chosen by: drop rules and redaction see it too)."""
        if drops and self.drops:
            decoded = decode_payload(payload)
            for drop in self.drops:
                if drop.test(line, subject, decoded):
                    return Verdict(drop.name, line, payload, {}, subject)
        pruned: Counts = {}
        if self.prune is not None and payload:
            payload, removed = self.prune(payload)
            pruned = {_PROCESSES: removed} if removed else {}
        if not self.redactor:
            return Verdict(None, line, payload, pruned, subject)
        new_line, new_subject, new_payload, fired = self.redactor.fields(line, subject, payload)
        return Verdict(None, new_line, new_payload, {**pruned, **fired}, new_subject)


@dataclass
class Policy:
    """The ``privacy:`` section, compiled; counts what it dropped and redacted."""

    config: PrivacyConfig = field(default_factory=PrivacyConfig)
    dropped: int = 0
    redacted: int = 0
    _plans: dict[tuple[int, str, str], Plan] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # Subjects are open-ended (run ids, paths): key plans on them only when a rule looks.
        self._by_subject = any(rule.sense for rule in self.config.rules)

    def plan(self, source: int, kind: str, subject: str) -> Plan:
        key = (source, kind, subject if self._by_subject else "")
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:  # a bounded cache: a long-lived daemon
                self._plans.clear()
            plan = self._plans[key] = self._make(*key)
        return plan

    def _make(self, source: int, kind: str, subject: str) -> Plan:
        rules = [r for r in self.config.rules if _Scope.of(r).covers(source, kind, subject)]
        drops = [_rule_drop(r) for r in rules if r.action == "drop"]
        drops += [d for d in _exclusions(self.config) if d.scope.covers(source, kind, subject)]
        detectors = set(self.config.active_detectors)
        detectors |= {r.detector for r in rules if r.action == "redact" and r.detector}
        passes = [
            Pass(r.label, re.compile(r.regex))
            for r in rules
            if r.action == "redact" and r.regex is not None
        ]
        match = _process_match(self.config)
        prune = _pruner(match) if match and (source, kind) == (NERVE_SOURCE, _STATE) else None
        return Plan(drops, Redactor(detectors, passes), prune)

    def capture(self, draft: Draft) -> Draft | None:
        """``draft`` with the rules applied: None when a drop rule or exclusion matches."""
        plan = self.plan(draft.source, draft.kind, draft.subject)
        if not plan.drops and plan.untouched(draft.line, draft.payload, draft.subject):
            return draft  # the common case, kept cheap
        return self._counted(draft, plan.verdict(draft.line, draft.payload, draft.subject))

    def capture_all(self, drafts: Iterable[Draft]) -> list[Draft]:
        return [d for d in map(self.capture, drafts) if d is not None]

    def redact(self, draft: Draft) -> Draft:
        """``draft`` redacted, never dropped (for nerve's own records, such as state)."""
        plan = self.plan(draft.source, draft.kind, draft.subject)
        if plan.untouched(draft.line, draft.payload, draft.subject):
            return draft
        verdict = plan.verdict(draft.line, draft.payload, draft.subject, drops=False)
        out = self._counted(draft, verdict)
        assert out is not None
        return out

    def _counted(self, draft: Draft, verdict: Verdict) -> Draft | None:
        if verdict.dropped_by is not None:
            self.dropped += 1
            return None
        if not verdict.fired:
            return draft
        self.redacted += 1
        return dataclasses.replace(
            draft, line=verdict.line, payload=verdict.payload, subject=verdict.subject
        )

    def clean(self, text: str, subject: str = "", kind: str = "sense.error") -> str:
        """``text`` from a sense or role (an error, a traceback, a print) redacted as the
        rules would redact it in one of nerve's own records: before it is written to the
        daemon log or held for ``nerve status``. Never dropped, never counted."""
        plan = self.plan(NERVE_SOURCE, kind, subject)
        if not text or plan.redactor.untouched(text, b""):
            return text
        return plan.redactor.text(text, {})

    def screen(self, events: Sequence[Event], numbers: Sequence[int] | None = None) -> None:
        """Refuse events to import that a rule would drop or redact (an imported event keeps
        its id, which binds its payload, so it cannot be changed); ``numbers`` are their
        places in a larger request (0-based), for the error's text and field."""
        for index, event in enumerate(events):
            plan = self.plan(event.source, event.kind, event.subject)
            verdict = plan.verdict(event.line, event.payload, event.subject)
            if verdict.changed:
                number = numbers[index] if numbers else index
                raise _refusal(f"event {number + 1}", verdict, field=f"events[{number}]")

    def test(self, text: str, *, source: int, kind: str, subject: str) -> Verdict:
        """What the rules do to ``text`` as the line (and, for shell, file and process
        sources, the command, path or name) of such an event."""
        key = _FIELD.get(source)
        payload = {key: text} if key else None
        draft = Draft.of(kind, source=source, line=text, payload=payload, subject=subject)
        return self.plan(source, kind, subject).verdict(draft.line, draft.payload)


def _refusal(where: str, verdict: Verdict, *, field: str) -> PrivacyError:
    if verdict.dropped_by is not None:
        why = f"the privacy rule {verdict.dropped_by!r} would drop it"
    else:
        fired = ", ".join(f"{rule} ×{n}" for rule, n in verdict.fired.items())
        why = f"the privacy rules would redact it ({fired})"
    return PrivacyError(
        f"{where}: {why}; an imported event keeps its id, which binds its payload, so it "
        "cannot be changed; nothing was imported",
        hint="remove or fix that event (`nerve privacy test` shows what fires), "
        "or send it with `nerve emit`, which redacts",
        field=field,
    )
