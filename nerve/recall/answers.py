"""What one question comes to: :class:`AskResult`, and the ``ask.*`` events recording it
(source ``vendor:1024``, trust ``FirstParty``, subject the question id)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from nerve.attention.energy import Energy
from nerve.events import NERVE_SOURCE, Trust
from nerve.log.drafts import Draft
from nerve.recall.core import Envelope
from nerve.recall.fallback import FallbackError, FallbackReply
from nerve.recall.tier0 import Tier0Answer

__all__ = [
    "AskResult",
    "answer_draft",
    "error_draft",
    "fallback_result",
    "new_question_id",
    "question_draft",
    "tier0_result",
    "unanswered_result",
]

_LINE_CHARS = 160


@dataclass(frozen=True)
class AskResult:
    """One question's outcome; :meth:`to_json` is what ``nerve ask --json`` prints."""

    question_id: str
    envelope: Envelope
    text: str
    answered: bool
    tier: int | None
    intent: str | None
    model_call: bool
    energy: Energy
    spans: tuple[str, ...]
    fallback: dict[str, Any] | None = None
    recorded: tuple[str, ...] = field(default=())
    plan: dict[str, Any] | None = None  # the window, subject and measure Tier 0 read
    left_out: int = 0  # matching events the text did not list

    @property
    def question(self) -> str:
        return self.envelope.query

    def answer_payload(self) -> dict[str, Any]:
        """The ``ask.answer`` event's payload."""
        return {
            "question_id": self.question_id,
            "tier": self.tier,
            "intent": self.intent,
            "model_call": self.model_call,
            "answered": self.answered,
            "answer": self.text,
            "spans": list(self.spans),
            "energy": self.energy.to_json(),
            "fallback": self.fallback,
            "envelope_digest": self.envelope.digest,
            **({"plan": self.plan, "left_out": self.left_out} if self.plan is not None else {}),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **self.answer_payload(),
            "question": self.question,
            "envelope": self.envelope.to_json(),
            "recorded": list(self.recorded),
        }


def new_question_id() -> str:
    return "q-" + uuid.uuid4().hex[:16]


def _one_line(text: str) -> str:
    first = " ".join(text.split())
    return first if len(first) <= _LINE_CHARS else first[: _LINE_CHARS - 1] + "…"


def _draft(kind: str, question_id: str, line: str, payload: dict[str, Any]) -> Draft:
    return Draft.of(
        kind,
        source=NERVE_SOURCE,
        trust=Trust.FIRST_PARTY,
        subject=question_id,
        line=_one_line(line),
        payload=payload,
    )


def question_draft(question_id: str, envelope: Envelope) -> Draft:
    payload = {
        "question": envelope.query,
        "envelope_digest": envelope.digest,
        "envelope": envelope.to_json(),
    }
    return _draft("ask.question", question_id, f"ask: {envelope.query}", payload)


def answer_draft(result: AskResult) -> Draft:
    how = result.intent or (result.fallback or {}).get("kind")
    line = f"answer (tier {result.tier}, {how}): {result.text}"
    if not result.answered:
        line = f"unanswered: {result.text}"
    return _draft("ask.answer", result.question_id, line, result.answer_payload())


def error_draft(question_id: str, exc: FallbackError, fallback: str) -> Draft:
    payload = {
        "question_id": question_id,
        "error": type(exc).__name__,
        "kind": exc.kind,
        "message": str(exc),
        "fallback": fallback,
    }
    return _draft("ask.error", question_id, f"ask failed ({exc.kind}): {exc}", payload)


def _unanswered_text() -> str:
    return (
        "I could not answer that from what this machine has recorded, and no language model is "
        "set up to try harder. Try a question about commands, processes, windows, files or "
        'a time ("what did cpu do in the last hour?", "which commands failed today?"), or set '
        "up a model under `recall.fallback` in nerve.yaml (kind: http or command)."
    )


def tier0_result(question_id: str, envelope: Envelope, found: Tier0Answer) -> AskResult:
    """Tier 0's answer; one that asks for a missing part is not answered (tier None)."""
    return AskResult(
        question_id,
        envelope,
        found.text,
        found.answered,
        0 if found.answered else None,
        found.intent,
        False,
        found.energy,
        found.spans,
        plan=found.plan,
        left_out=found.left_out,
    )


def unanswered_result(question_id: str, envelope: Envelope) -> AskResult:
    return AskResult(
        question_id, envelope, _unanswered_text(), False, None, None, False, Energy.zero(), ()
    )


def fallback_result(question_id: str, envelope: Envelope, reply: FallbackReply) -> AskResult:
    spans = tuple(s.id for s in envelope.spans)
    return AskResult(
        question_id, envelope, reply.text, True, 1, None, True, reply.energy, spans, reply.detail
    )
