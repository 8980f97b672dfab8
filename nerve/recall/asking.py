"""``nerve ask``: :func:`ask` builds the envelope (:mod:`nerve.recall.core`), tries Tier 0
(:mod:`nerve.recall.tier0`, then :mod:`nerve.recall.facts`) and escalates to the fallback
(:mod:`nerve.recall.fallback`) only when Tier 0 cannot answer."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from typing import TYPE_CHECKING

from nerve.config.recall import RecallConfig
from nerve.errors import UsageError
from nerve.log.drafts import Draft
from nerve.logops import emit
from nerve.recall.answers import (
    AskResult,
    answer_draft,
    error_draft,
    fallback_result,
    new_question_id,
    question_draft,
    tier0_result,
    unanswered_result,
)
from nerve.recall.core import Retrieval, RetrievalParams
from nerve.recall.facts import answer_facts
from nerve.recall.fallback import FallbackError, call_fallback
from nerve.recall.plans import answer_plan, mend
from nerve.recall.tier0 import Tier0Answer, answer, retrieve_for
from nerve.workspace import WorkspaceDir

if TYPE_CHECKING:
    import duckdb

__all__ = ["MAX_QUESTION_CHARS", "ask", "build_retrieval", "load_recall_config"]

MAX_QUESTION_CHARS = 4_000
_NO_MODEL = "(No other part of Tier 0 could answer, and no language model is set up to try.)"


def load_recall_config(ws: WorkspaceDir) -> RecallConfig:
    """The ``recall:`` section; ``InvalidConfig`` naming ``recall.<field>`` and its line."""
    return ws.config.recall  # checked as nerve.yaml loads (nerve.config.recall)


def _salience_window(ws: WorkspaceDir) -> int:
    """The attention observer's window from ``attention.window``, else its default."""
    return ws.config.attention.window


def _checked_question(question: str) -> str:
    text = question.strip()
    if not text:
        raise UsageError("the question is empty", hint='nerve ask "which files changed?"')
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is {len(text)} characters; at most {MAX_QUESTION_CHARS}")
    return text


def build_retrieval(
    ws: WorkspaceDir,
    question: str,
    *,
    k: int | None = None,
    config: RecallConfig | None = None,
    connect: Callable[[], duckdb.DuckDBPyConnection] | None = None,
) -> Retrieval:
    """The envelope (and its spans' payloads) for ``question`` over the workspace's log;
    ``connect`` opens the connection it reads (an agent's: privacy applied to the rows)."""
    cfg = config or load_recall_config(ws)
    conn = (connect or ws.connect)()
    try:
        return retrieve_for(conn, _checked_question(question), _params(ws, cfg, k))
    finally:
        conn.close()


def _params(ws: WorkspaceDir, cfg: RecallConfig, k: int | None) -> RetrievalParams:
    return RetrievalParams(
        k=cfg.k if k is None else k,
        window=cfg.window,
        kinds=tuple(cfg.kinds),
        salience_window=_salience_window(ws),
    )


@dataclass
class _Recorder:
    """Appends the question's events (nothing when ``enabled`` is false); keeps their ids."""

    ws: WorkspaceDir
    enabled: bool
    ids: list[str] = field(default_factory=list)

    def emit(self, *drafts: Draft) -> None:
        if self.enabled:
            self.ids += [event.id.hex() for event in emit(self.ws, list(drafts))]

    def finish(self, result: AskResult, *before: Draft) -> AskResult:
        """Record ``before`` and the answer as one group commit; the result with their ids."""
        self.emit(*before, answer_draft(result))
        return replace(result, recorded=tuple(self.ids))


def _planned(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    now_ns: int,
    tz: tzinfo | None,
    last_word: bool,
) -> Tier0Answer | None:
    """Tier 0 by parts (:mod:`nerve.recall.plans`): window, subject and measure, read by SQL."""
    planned = answer_plan(conn, question, now_ns=now_ns, tz=tz, last_word=last_word)
    if planned is None:
        return None
    plan, found = planned
    intent = f"plan:{plan.subject.kind}.{plan.measure}"
    return Tier0Answer(intent, found.text, found.spans, answered=found.answered,
                       plan=plan.to_json(), left_out=found.left_out, final=found.final)  # fmt: skip


def _tier0(
    conn: duckdb.DuckDBPyConnection,
    retrieval: Retrieval,
    question: str,
    now: int,
    tz: tzinfo | None,
    last_word: bool,
) -> Tier0Answer | None:
    """The plan's answer, else the envelope's intents, else the period intents; when none
    answers and nothing comes after (``last_word``), the plan's question back, if it had one.
    A plan that understood the question and found the log cannot answer it (``final``: a
    time the log does not cover, words it cannot place) is the answer: a looser tier would
    only answer another question."""
    question = mend(conn, question)  # "waht comands failed?"
    planned = _planned(conn, question, now, tz, last_word)
    if planned is not None and (planned.answered or planned.final):
        return planned
    found = answer(retrieval) or answer_facts(conn, question, now_ns=now, tz=tz)
    if found is None and planned is not None and last_word:
        return replace(planned, text=f"{planned.text} {_NO_MODEL}")  # what it understood
    return found


def ask(
    ws: WorkspaceDir,
    question: str,
    *,
    k: int | None = None,
    record: bool = True,
    environ: Mapping[str, str] | None = None,
    question_id: str | None = None,
    connect: Callable[[], duckdb.DuckDBPyConnection] | None = None,
    now_ns: int | None = None,
    tz: tzinfo | None = None,
) -> AskResult:
    """Answer ``question`` from the log: Tier 0 first, the fallback only if Tier 0 cannot.

    Tier 0 is the question parsed into a plan (:mod:`nerve.recall.plans`: window, subject,
    measure), then the envelope's intents, then those read over the question's period ("in
    the last 5 minutes", "yesterday"; ``now_ns`` and ``tz`` fix "now" and the local zone). A
    plan that understood part of the question and asks for the rest is not answered.

    Records ``ask.question`` and ``ask.answer`` (or ``ask.error``) unless ``record`` is
    false. Raises ``InvalidConfig`` for a bad ``recall:`` section, ``UsageError`` for an empty
    question and :class:`FallbackError` when the fallback fails (after recording it).
    """
    cfg = load_recall_config(ws)
    now = time.time_ns() if now_ns is None else now_ns
    conn = (connect or ws.connect)()  # every Tier-0 read (an agent's rows: screened)
    try:
        retrieval = retrieve_for(conn, _checked_question(question), _params(ws, cfg, k))
        found = _tier0(conn, retrieval, question, now, tz, cfg.fallback is None)
    finally:
        conn.close()
    envelope, qid = retrieval.envelope, question_id or new_question_id()
    recorder, asked = _Recorder(ws, record), question_draft(qid, envelope)
    if found is not None:
        return recorder.finish(tier0_result(qid, envelope, found), asked)
    if cfg.fallback is None:
        return recorder.finish(unanswered_result(qid, envelope), asked)
    recorder.emit(asked)
    try:
        reply = call_fallback(cfg.fallback, envelope, environ)
    except FallbackError as exc:
        recorder.emit(error_draft(qid, exc, cfg.fallback.kind))
        raise
    return recorder.finish(fallback_result(qid, envelope, reply))
