"""The synthesis cascade (Sense v0.1 §6): ``nerve ask`` answers a question from the log.

:func:`ask` builds the envelope (:mod:`nerve.recall.core`), tries Tier 0
(:mod:`nerve.recall.tier0`) and escalates only when Tier 0 cannot answer, to the configured
fallback. With none configured it says so plainly and the answer is marked unanswered.
The modules, one job each: :mod:`~nerve.recall.asking` (the cascade),
:mod:`~nerve.recall.fallback` (the escalation, HTTP or a command), :mod:`~nerve.recall.answers`
(the result and the ``ask.*`` events); the envelope and Tier 0 in ``core``, ``tier0``, ``facts``.

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

from nerve.recall.answers import AskResult
from nerve.recall.asking import MAX_QUESTION_CHARS, ask, build_retrieval, load_recall_config
from nerve.recall.fallback import SYSTEM_PROMPT, FallbackError, FallbackReply, call_fallback

__all__ = [
    "MAX_QUESTION_CHARS",
    "SYSTEM_PROMPT",
    "AskResult",
    "FallbackError",
    "FallbackReply",
    "ask",
    "build_retrieval",
    "call_fallback",
    "load_recall_config",
]
