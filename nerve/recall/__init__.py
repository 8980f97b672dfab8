"""The synthesis cascade (Sense v0.1 §6): ``nerve ask`` answers a question from the log.

:func:`ask` builds the envelope (:mod:`nerve.recall.core`), tries Tier 0
(:mod:`nerve.recall.tier0`) and escalates only when Tier 0 cannot answer, to the configured
fallback. With none configured it says so plainly and the answer is marked unanswered.

``recall:`` in ``nerve.yaml`` (every key optional, unknown keys rejected)::

    recall:
      k: 12                      # envelope slots
      window: 50000              # newest candidate events searched
      kinds: [observation, attention.highlight, attention.decision, sense.error]
      fallback:                  # absent: no fallback
        kind: http               # an OpenAI-compatible chat-completions endpoint
        endpoint: http://127.0.0.1:8080/v1
        model: some-model
        api_key_env: OPENAI_API_KEY   # the key is read from this variable, never stored
        timeout: 30s
        max_tokens: 512          # optional
        uj_per_token: 1000000    # energy estimate per token (see below)
      # or
      fallback:
        kind: command            # argv only, never a shell; the envelope JSON on stdin,
        argv: [llm-answer, --quiet]   # the answer on stdout
        timeout: 30s
        watts: 30                # energy estimate: wall time × this power

The HTTP fallback sends the envelope's canonical JSON as the user message, so the prompt is
byte-identical for the same log and question. Redirects are refused (the key must not travel
to another host).

**Energy** is always an ``Estimator`` figure, never a measurement: zero for a Tier-0 answer;
``usage.total_tokens`` (or request + reply bytes / 4 when the reply has no usage) times
``uj_per_token`` for HTTP — the default, 1 J per token, is an order-of-magnitude guess for a
large hosted model, to be set for yours; elapsed milliseconds × ``watts`` × 1000 µJ for a
command.

**Events** (source ``vendor:1024``, trust ``FirstParty``, subject the question id):
``ask.question`` {question, envelope_digest, envelope}; ``ask.answer`` {question_id, tier,
intent, model_call, answered, answer, spans, energy, fallback, envelope_digest}; and, when the
fallback fails, ``ask.error`` {question_id, error, kind, message, fallback} before the error is
raised. ``tier`` is 0 for Tier 0, 1 for the fallback, null when unanswered; ``model_call`` is
true exactly when the fallback ran. Asking never changes an envelope: ``ask.*`` kinds are not
candidates.

    NerveError (nerve.errors)
    └── FallbackError   the fallback failed: kind "config" (e.g. the key variable is unset),
                        "network", "timeout", "http_status", "invalid_reply", "spawn_failed"
                        or "exit"
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from nerve.attention.energy import Energy
from nerve.canonical import canonical_json
from nerve.config.recall import CommandFallback, HttpFallback, RecallConfig
from nerve.errors import NerveError, UsageError
from nerve.events import NERVE_SOURCE, Trust
from nerve.flow.utils import CommandFailed, CommandResult, run_argv
from nerve.log.drafts import Draft
from nerve.logops import emit
from nerve.recall.core import (
    Envelope,
    Retrieval,
    RetrievalParams,
)
from nerve.recall.facts import answer_facts
from nerve.recall.tier0 import Tier0Answer, answer, retrieve_for
from nerve.workspace import WorkspaceDir

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "SYSTEM_PROMPT",
    "AskResult",
    "FallbackError",
    "FallbackReply",
    "ask",
    "build_retrieval",
    "call_fallback",
    "load_recall_config",
]

MAX_QUESTION_CHARS = 4_000
_LINE_CHARS = 160
_MAX_REPLY_BYTES = 4 * 1024 * 1024
_EXCERPT_CHARS = 300
SYSTEM_PROMPT = (
    "You answer a person's question about what happened on their computer. The user message "
    "is a JSON envelope from nerve's event log: `query` is the question; `spans` are events "
    "retrieved for it (newest first within each source; `line` is the event's text; `hlc` "
    "[physical_ns, logical] is its time); `strata` counts events per source; `salience` is "
    "the attention projection. Answer from the envelope only, briefly; if it does not hold "
    "the answer, say so."
)


class FallbackError(NerveError):
    """Raised when the configured fallback fails; ``kind`` says how (module docstring)."""

    def __init__(self, message: str, *, kind: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind


# -- configuration ----------------------------------------------------------------------------


def load_recall_config(ws: WorkspaceDir) -> RecallConfig:
    """The ``recall:`` section; ``InvalidConfig`` naming ``recall.<field>`` and its line."""
    return ws.config.recall  # checked as nerve.yaml loads (nerve.config.recall)


def _salience_window(ws: WorkspaceDir) -> int:
    """The attention observer's window from ``attention.window``, else its default."""
    return ws.config.attention.window


# -- fallbacks --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FallbackReply:
    """What a fallback answered, its estimated energy, and details for the record."""

    text: str
    energy: Energy
    detail: dict[str, Any]


def call_fallback(
    fallback: HttpFallback | CommandFallback,
    envelope: Envelope,
    environ: Mapping[str, str] | None = None,
) -> FallbackReply:
    """Ask the fallback about the envelope; raise :class:`FallbackError` if it fails."""
    env = os.environ if environ is None else environ
    if isinstance(fallback, HttpFallback):
        return _ask_http(fallback, envelope, env)
    return _ask_command(fallback, envelope, env)


def _chat_request(cfg: HttpFallback, envelope: Envelope) -> bytes:
    body: dict[str, Any] = {
        "model": cfg.model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": envelope.canonical.decode("utf-8")},
        ],
        "temperature": 0,
    }
    if cfg.max_tokens is not None:
        body["max_tokens"] = cfg.max_tokens
    return canonical_json(body)


def _api_key(cfg: HttpFallback, env: Mapping[str, str]) -> str | None:
    if cfg.api_key_env is None:
        return None
    key = env.get(cfg.api_key_env)
    if not key:
        raise FallbackError(
            f"recall.fallback.api_key_env names {cfg.api_key_env}, which is not set",
            kind="config",
            hint=f"export {cfg.api_key_env}=... before `nerve ask`",
        )
    return key


def _ask_http(cfg: HttpFallback, envelope: Envelope, env: Mapping[str, str]) -> FallbackReply:
    url = cfg.endpoint.rstrip("/") + "/chat/completions"
    request = _chat_request(cfg, envelope)
    started = time.monotonic()
    raw = _post(url, request, _api_key(cfg, env), cfg.timeout / 1000)
    text, tokens = _read_chat(url, raw)
    counted = tokens if tokens is not None else (len(request) + len(raw)) // 4
    detail = {
        "kind": "http",
        "endpoint": cfg.endpoint,
        "model": cfg.model,
        "tokens": counted,
        "tokens_from": "usage" if tokens is not None else "bytes/4",
        "elapsed_ms": int((time.monotonic() - started) * 1000),
    }
    return FallbackReply(text, Energy.estimate(counted * cfg.uj_per_token), detail)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would resend the Authorization header to the new host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _post(url: str, body: bytes, api_key: str | None, timeout_s: float) -> bytes:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.build_opener(_NoRedirect).open(request, timeout=timeout_s) as reply:
            return bytes(reply.read(_MAX_REPLY_BYTES))
    except urllib.error.HTTPError as exc:
        with exc:
            excerpt = _excerpt(exc.read(_EXCERPT_CHARS * 4))
        raise FallbackError(
            f"{url} answered HTTP {exc.code}: {excerpt or '(empty body)'}", kind="http_status"
        ) from None
    except (OSError, http.client.HTTPException) as exc:
        raise _network_error(url, exc, timeout_s) from None


def _network_error(url: str, exc: BaseException, timeout_s: float) -> FallbackError:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError):
        return FallbackError(
            f"no answer from {url} within {timeout_s:g} s",
            kind="timeout",
            hint="raise recall.fallback.timeout in nerve.yaml",
        )
    return FallbackError(f"could not reach {url}: {reason}", kind="network")


def _excerpt(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")[:_EXCERPT_CHARS].strip()


def _read_chat(url: str, raw: bytes) -> tuple[str, int | None]:
    """The first choice's message content and ``usage.total_tokens`` (None if absent)."""
    try:
        reply = json.loads(raw)
        content = reply["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise FallbackError(
            f"{url} did not send a chat completion (choices[0].message.content): "
            f"{_excerpt(raw) or '(empty body)'}",
            kind="invalid_reply",
        ) from None
    if not isinstance(content, str) or not content.strip():
        raise FallbackError(f"{url} sent an empty answer", kind="invalid_reply")
    usage = reply.get("usage") if isinstance(reply, dict) else None
    tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
    valid = isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0
    return content.strip(), tokens if valid else None


def _ask_command(cfg: CommandFallback, envelope: Envelope, env: Mapping[str, str]) -> FallbackReply:
    try:
        result = run_argv(
            cfg.argv,
            timeout_s=cfg.timeout / 1000,
            env=env,
            inherit_env=False,
            input=envelope.canonical,
        )
    except CommandFailed as exc:
        raise FallbackError(str(exc), kind="spawn_failed", hint=exc.hint) from None
    _check_command(result, cfg.timeout)
    detail = {"kind": "command", "argv": list(cfg.argv), "elapsed_ms": result.duration_ms}
    energy = Energy.estimate(result.duration_ms * cfg.watts * 1000)
    return FallbackReply(result.stdout.strip(), energy, detail)


def _check_command(result: CommandResult, timeout_ms: int) -> None:
    program = result.argv[0]
    if result.timed_out:
        raise FallbackError(
            f"{program!r} gave no answer within {timeout_ms} ms",
            kind="timeout",
            hint="raise recall.fallback.timeout in nerve.yaml",
        )
    if result.exit_code != 0:
        tail = result.stderr.strip()[-_EXCERPT_CHARS:] or "no stderr"
        raise FallbackError(f"{program!r} exited with code {result.exit_code}: {tail}", kind="exit")
    if not result.stdout.strip():
        raise FallbackError(f"{program!r} printed no answer on stdout", kind="invalid_reply")


# -- asking -----------------------------------------------------------------------------------


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
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **self.answer_payload(),
            "question": self.question,
            "envelope": self.envelope.to_json(),
            "recorded": list(self.recorded),
        }


def _new_question_id() -> str:
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


def _question_draft(question_id: str, envelope: Envelope) -> Draft:
    payload = {
        "question": envelope.query,
        "envelope_digest": envelope.digest,
        "envelope": envelope.to_json(),
    }
    return _draft("ask.question", question_id, f"ask: {envelope.query}", payload)


def _answer_draft(result: AskResult) -> Draft:
    how = result.intent or (result.fallback or {}).get("kind")
    line = f"answer (tier {result.tier}, {how}): {result.text}"
    if not result.answered:
        line = f"unanswered: {result.text}"
    return _draft("ask.answer", result.question_id, line, result.answer_payload())


def _error_draft(question_id: str, exc: FallbackError, fallback: str) -> Draft:
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
    params = RetrievalParams(
        k=cfg.k if k is None else k,
        window=cfg.window,
        kinds=tuple(cfg.kinds),
        salience_window=_salience_window(ws),
    )
    conn = (connect or ws.connect)()
    try:
        return retrieve_for(conn, _checked_question(question), params)
    finally:
        conn.close()


def _tier0_result(question_id: str, envelope: Envelope, found: Tier0Answer) -> AskResult:
    return AskResult(
        question_id, envelope, found.text, True, 0, found.intent, False, found.energy, found.spans
    )


def _unanswered(question_id: str, envelope: Envelope) -> AskResult:
    return AskResult(
        question_id, envelope, _unanswered_text(), False, None, None, False, Energy.zero(), ()
    )


def _fallback_result(question_id: str, envelope: Envelope, reply: FallbackReply) -> AskResult:
    spans = tuple(s.id for s in envelope.spans)
    return AskResult(
        question_id, envelope, reply.text, True, 1, None, True, reply.energy, spans, reply.detail
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
        self.emit(*before, _answer_draft(result))
        return replace(result, recorded=tuple(self.ids))


def _facts(
    ws: WorkspaceDir,
    question: str,
    now_ns: int | None,
    tz: tzinfo | None,
    connect: Callable[[], duckdb.DuckDBPyConnection] | None,
) -> Tier0Answer | None:
    """Tier 0 over the question's period (:mod:`nerve.recall.facts`), over the same rows
    the envelope read (an agent's connection has privacy applied)."""
    conn = (connect or ws.connect)()
    try:
        return answer_facts(conn, question, now_ns=now_ns or time.time_ns(), tz=tz)
    finally:
        conn.close()


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

    Tier 0 is the envelope's intents, then those read over the question's period ("in the
    last 5 minutes", "yesterday"; ``now_ns`` and ``tz`` fix "now" and the local zone).

    Records ``ask.question`` and ``ask.answer`` (or ``ask.error``) unless ``record`` is
    false. Raises ``InvalidConfig`` for a bad ``recall:`` section, ``UsageError`` for an empty
    question and :class:`FallbackError` when the fallback fails (after recording it).
    """
    cfg = load_recall_config(ws)
    retrieval = build_retrieval(ws, question, k=k, config=cfg, connect=connect)
    envelope, qid = retrieval.envelope, question_id or _new_question_id()
    recorder, asked = _Recorder(ws, record), _question_draft(qid, envelope)
    found = answer(retrieval) or _facts(ws, question, now_ns, tz, connect)
    if found is not None:
        return recorder.finish(_tier0_result(qid, envelope, found), asked)
    if cfg.fallback is None:
        return recorder.finish(_unanswered(qid, envelope), asked)
    recorder.emit(asked)
    try:
        reply = call_fallback(cfg.fallback, envelope, environ)
    except FallbackError as exc:
        recorder.emit(_error_draft(qid, exc, cfg.fallback.kind))
        raise
    return recorder.finish(_fallback_result(qid, envelope, reply))
