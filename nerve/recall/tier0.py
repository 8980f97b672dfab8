"""Tier 0 of the synthesis cascade: factual recall answered from the envelope, no model call.

Tier 0 is conservative (Sense v0.1 §6): it answers only when the query and the spans agree,
and otherwise returns ``None`` so the cascade escalates.

**Query side.** Every intent has trigger word sets (one must be wholly in the query's
tokens) and a vocabulary; a query matches when it fires a trigger and every other token is a
stop word (:data:`nerve.recall.core.STOPWORDS`) or in the intent's vocabulary — "which files
changed in src?" carries ``src``, which ``recent_files`` cannot honour, so it escalates. Only
``held`` takes free words (``why was the cpu spike held``), which must then match a held
decision. Exactly one intent may match; two (``what did I edit and run``) escalate.

**Span side.** Answers about "the latest" need proof that the envelope holds the newest spans
of a stratum: the spans with ranks ``0 .. m-1`` (the *run*). With no run there is no answer —
except that an empty stratum in a window holding the whole log answers "none".

=================  ==============================  =====================================
intent             e.g.                            answered from
=================  ==============================  =====================================
``recent_files``   which files changed?            ``file_change`` run: distinct paths
``last_command``   what did I run? last commands   ``shell`` run: the newest (or newest few)
``surfaced``       what did you show me?           ``attention.decision`` run, ``surface``
``held``           why was the cpu spike held?     decisions held (matching the free words)
``budget``         how much budget is left?        the newest ``attention.decision``
``last_error``     what was the last error?        the newest ``sense.error``
=================  ==============================  =====================================

Every answer's text is a deterministic function of the envelope and its spans' payloads; it
costs :meth:`Energy.zero`, the honest zero estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb

from nerve.attention.energy import Energy
from nerve.recall.core import (
    STOPWORDS,
    Envelope,
    Retrieval,
    RetrievalParams,
    Span,
    retrieve,
    tokenize,
)

__all__ = ["INTENTS", "Intent", "Tier0Answer", "answer", "match_intent", "retrieve_for"]

_LIST_MAX = 8
_HELD_MAX = 3


@dataclass(frozen=True)
class Tier0Answer:
    """A deterministic answer: the intent, its text and the spans it used."""

    intent: str
    text: str
    spans: tuple[str, ...]
    energy: Energy = field(default_factory=Energy.zero)
    answered: bool = True  # False: it says what it understood and asks for the missing part
    plan: dict[str, Any] | None = None  # the window, subject and measure a plan used
    left_out: int = 0  # how many matching events the text did not list
    final: bool = False  # a plan that understood the question: no looser tier may retry it

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "intent": self.intent,
            "text": self.text,
            "spans": list(self.spans),
            "energy": self.energy.to_json(),
        }
        if self.plan is not None:
            out |= {"answered": self.answered, "plan": self.plan, "left_out": self.left_out}
        return out


@dataclass(frozen=True)
class _Evidence:
    """What an intent's renderer may read: the envelope, its payloads, the free words."""

    retrieval: Retrieval
    tokens: frozenset[str]
    free: tuple[str, ...]

    @property
    def envelope(self) -> Envelope:
        return self.retrieval.envelope

    def data(self, span: Span) -> dict[str, Any]:
        value = self.retrieval.payloads.get(span.id)
        return value if isinstance(value, dict) else {}

    def run(self, stratum: str) -> list[Span]:
        """The stratum's spans with ranks 0, 1, … present in the envelope, newest first."""
        by_rank = {s.rank: s for s in self.envelope.spans if s.stratum == stratum}
        run: list[Span] = []
        while len(run) in by_rank:
            run.append(by_rank[len(run)])
        return run

    def total(self, stratum: str) -> int:
        found = self.envelope.stratum(stratum)
        return found.spans if found else 0

    def none_in_log(self, stratum: str, kind: str) -> bool:
        """True when the window holds the whole log, reads ``kind``, and has no such span."""
        env = self.envelope
        return env.complete and kind in env.params.kinds and self.total(stratum) == 0


Render = Callable[[_Evidence], Tier0Answer | None]


@dataclass(frozen=True)
class Intent:
    """A factual-recall intent: its triggers, its vocabulary and how it answers."""

    name: str
    stratum: str
    triggers: tuple[frozenset[str], ...]
    vocabulary: frozenset[str]
    render: Render
    free_words: bool = False

    def free(self, tokens: Sequence[str]) -> tuple[str, ...] | None:
        """Tokens outside stop words and vocabulary; None if the query does not fire a trigger."""
        present = set(tokens)
        if not any(trigger <= present for trigger in self.triggers):
            return None
        known = self.vocabulary.union(*self.triggers)
        return tuple(dict.fromkeys(t for t in tokens if t not in STOPWORDS and t not in known))


# -- formatting ----------------------------------------------------------------------------------


def _when(span: Span) -> str:
    moment = datetime.fromtimestamp(span.hlc[0] // 10**9, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%SZ")


def _milli(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return "?"
    return f"{value // 1000}.{value % 1000:03d}"


def _uj(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return "? µJ"
    return f"{value:,} µJ"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _listing(title: str, lines: Sequence[str]) -> str:
    return title + "\n" + "\n".join(f"- {line}" for line in lines)


# -- renderers -----------------------------------------------------------------------------------


def _recent_files(ev: _Evidence) -> Tier0Answer | None:
    run = ev.run("file_change")
    if not run:
        return _none(ev, "recent_files", "file_change", "observation", "No file changes")
    seen: dict[str, tuple[Span, str]] = {}
    for span in run:
        data = ev.data(span)
        path, change = _text(data.get("path")), _text(data.get("change")) or "changed"
        if path is not None and path not in seen:
            seen[path] = (span, change)
    if not seen:
        return None
    entries = list(seen.items())[:_LIST_MAX]
    lines = [f"{path} ({change}, {_when(span)})" for path, (span, change) in entries]
    title = f"Files changed most recently, newest first (from the {len(run)} newest changes):"
    return Tier0Answer("recent_files", _listing(title, lines), tuple(s.id for _, (s, _) in entries))


def _command(ev: _Evidence, span: Span) -> str:
    return _text(ev.data(span).get("command")) or span.line.removeprefix("$ ")


def _last_command(ev: _Evidence) -> Tier0Answer | None:
    run = ev.run("shell")
    if not run:
        return _none(ev, "last_command", "shell", "observation", "No shell commands")
    if "commands" not in ev.tokens:
        text = f"Your last command ({_when(run[0])}): {_command(ev, run[0])}"
        return Tier0Answer("last_command", text, (run[0].id,))
    used = run[:_LIST_MAX]
    lines = [f"{_when(s)}  {_command(ev, s)}" for s in used]
    text = _listing("Your most recent commands, newest first:", lines)
    return Tier0Answer("last_command", text, tuple(s.id for s in used))


def _decision_line(ev: _Evidence, span: Span) -> str:
    data = ev.data(span)
    what = _text(data.get("source_line")) or span.line
    probe = _text(data.get("probe")) or "?"
    value, cost = _milli(data.get("value_milli")), _milli(data.get("cost_milli"))
    return f"{_when(span)}  {probe} {value} vs cost {cost}: {what}"


def _decisions(ev: _Evidence, outcome: Callable[[str], bool]) -> tuple[list[Span], list[Span]]:
    run = ev.run("attention.decision")
    chosen = [s for s in run if outcome(str(ev.data(s).get("outcome", "")))]
    return run, chosen


def _scope(ev: _Evidence, run: Sequence[Span]) -> str:
    total = ev.total("attention.decision")
    if len(run) == total and ev.envelope.complete:
        return f"all {total} attention decisions in the log"
    return f"the {len(run)} most recent attention decisions"


def _surfaced(ev: _Evidence) -> Tier0Answer | None:
    run, chosen = _decisions(ev, lambda o: o == "surface")
    if not run:
        return _none(
            ev,
            "surfaced",
            "attention.decision",
            "attention.decision",
            "Nothing was surfaced: no attention decisions",
        )
    if not chosen:
        text = f"Nothing was surfaced among {_scope(ev, run)}; every one was held."
        return Tier0Answer("surfaced", text, tuple(s.id for s in run))
    lines = [
        _decision_line(ev, s) + f" (charged {_uj(ev.data(s).get('charged_uj'))})"
        for s in chosen[:_LIST_MAX]
    ]
    title = f"Surfaced, newest first, among {_scope(ev, run)}:"
    return Tier0Answer("surfaced", _listing(title, lines), tuple(s.id for s in chosen[:_LIST_MAX]))


def _hold_reason(data: dict[str, Any]) -> str:
    outcome = data.get("outcome")
    if outcome == "hold:value":
        return "hold:value — its value did not clear the interruption cost plus margin"
    if outcome == "hold:direction":
        return "hold:direction — it moved the way that is no trouble for this reading"
    if outcome == "hold:transient":
        return "hold:transient — the excursion did not last (see attention.rules.confirm_s)"
    before = _uj(data.get("budget_before_uj"))
    return f"hold:budget — worth surfacing, but the attention budget ({before}) could not pay"


def _held(ev: _Evidence) -> Tier0Answer | None:
    if ev.free:
        return _held_matching(ev)
    run, chosen = _decisions(ev, lambda o: o.startswith("hold:"))
    if not run:
        return _none(
            ev,
            "held",
            "attention.decision",
            "attention.decision",
            "Nothing was held: no attention decisions",
        )
    if not chosen:
        text = f"Nothing was held among {_scope(ev, run)}; every one surfaced."
        return Tier0Answer("held", text, tuple(s.id for s in run))
    used = chosen[:_LIST_MAX]
    lines = [f"{_decision_line(ev, s)} ({_hold_reason(ev.data(s))})" for s in used]
    title = f"Held, newest first, among {_scope(ev, run)}:"
    return Tier0Answer("held", _listing(title, lines), tuple(s.id for s in used))


def _decision_words(ev: _Evidence, span: Span) -> set[str]:
    data = ev.data(span)
    parts = [span.line, str(data.get("source_line", "")), str(data.get("probe", ""))]
    return set(tokenize(" ".join(parts)))


def _is_held(ev: _Evidence, span: Span) -> bool:
    outcome = str(ev.data(span).get("outcome", ""))
    return span.kind == "attention.decision" and outcome.startswith("hold:")


def _held_matching(ev: _Evidence) -> Tier0Answer | None:
    """Held decisions in the envelope sharing the most free words with the query."""
    newest_first = sorted(ev.envelope.spans, key=lambda s: (-s.hlc[0], -s.hlc[1]))
    scored = [(len(set(ev.free) & _decision_words(ev, s)), s) for s in newest_first]
    best = sorted((item for item in scored if item[0] and _is_held(ev, item[1])), key=_first_neg)
    if not best:
        return None
    used = [s for _, s in best[:_HELD_MAX]]
    lines = [f"{_decision_line(ev, s)} ({_hold_reason(ev.data(s))})" for s in used]
    title = f"Held decisions matching {' '.join(ev.free)!r}, best match first:"
    return Tier0Answer("held", _listing(title, lines), tuple(s.id for s in used))


def _first_neg(item: tuple[int, Span]) -> int:
    return -item[0]


def _budget(ev: _Evidence) -> Tier0Answer | None:
    run = ev.run("attention.decision")
    data = ev.data(run[0]) if run else {}
    after = data.get("budget_after_uj")
    if not run or isinstance(after, bool) or not isinstance(after, int):
        return None
    text = (
        f"The attention budget held {_uj(after)} after the last decision "
        f"({data.get('outcome', '?')}, {_when(run[0])}); it refills over time, "
        "so it may be higher now."
    )
    return Tier0Answer("budget", text, (run[0].id,))


def _last_error(ev: _Evidence) -> Tier0Answer | None:
    run = ev.run("sense.error")
    if not run:
        return _none(ev, "last_error", "sense.error", "sense.error", "No sense errors")
    span = run[0]
    who = f" in {span.subject}" if span.subject else ""
    text = f"The last error ({_when(span)}){who}: {span.line}"
    return Tier0Answer("last_error", text, (span.id,))


def _none(ev: _Evidence, intent: str, stratum: str, kind: str, what: str) -> Tier0Answer | None:
    if not ev.none_in_log(stratum, kind):
        return None
    text = f"{what} are in the log ({ev.envelope.window_spans} events searched, the whole log)."
    return Tier0Answer(intent, text, ())


# -- the intents ---------------------------------------------------------------------------------


def _sets(*groups: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(group.split()) for group in groups)


def _vocab(text: str) -> frozenset[str]:
    return frozenset(text.split())


INTENTS: tuple[Intent, ...] = (
    Intent(
        "recent_files",
        "file_change",
        _sets("file", "files", "edit", "edited", "edits", "modified", "saved", "wrote", "touched"),
        _vocab("changed change changes work worked working save write written touch recently"),
        _recent_files,
    ),
    Intent(
        "last_command",
        "shell",
        _sets("command", "commands", "ran", "run", "typed", "executed", "shell"),
        _vocab("type execute executed enter entered terminal previous"),
        _last_command,
    ),
    Intent(
        "surfaced",
        "attention.decision",
        _sets(
            "surfaced",
            "surface",
            "showed",
            "shown",
            "you show",
            "alerted",
            "notified",
            "interrupted",
        ),
        _vocab("attention interrupt alert alerts notify notification notifications"),
        _surfaced,
    ),
    Intent(
        "held",
        "attention.decision",
        _sets("held", "hold", "withheld", "holds"),
        _vocab("attention not back kept keep decision decisions"),
        _held,
        free_words=True,
    ),
    Intent(
        "budget",
        "attention.decision",
        _sets("budget"),
        _vocab("attention left remaining remains remain much energy joules spent"),
        _budget,
    ),
    Intent(
        "last_error",
        "sense.error",
        _sets("error", "errors", "failed", "failure", "failures", "crashed", "crash"),
        _vocab("sense senses went wrong happened occurred"),
        _last_error,
    ),
)
"""The built-in intents, in the order they are tried."""


def match_intent(query: str) -> tuple[Intent, tuple[str, ...]] | None:
    """The single intent the query's words fit, with its free words; None if zero or many."""
    tokens = tokenize(query)
    found = []
    for intent in INTENTS:
        free = intent.free(tokens)
        if free is not None and (intent.free_words or not free):
            found.append((intent, free))
    return found[0] if len(found) == 1 else None


def retrieve_for(
    conn: duckdb.DuckDBPyConnection, query: str, params: RetrievalParams | None = None
) -> Retrieval:
    """The cascade's envelope: :func:`retrieve`, serving the matched intent's stratum first."""
    matched = match_intent(query)
    return retrieve(conn, query, params, first=(matched[0].stratum,) if matched else ())


def answer(retrieval: Retrieval) -> Tier0Answer | None:
    """A Tier-0 answer for the envelope's query, or None to escalate."""
    matched = match_intent(retrieval.envelope.query)
    if matched is None:
        return None
    intent, free = matched
    tokens = frozenset(tokenize(retrieval.envelope.query))
    return intent.render(_Evidence(retrieval, tokens, free))
