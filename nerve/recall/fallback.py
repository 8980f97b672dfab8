"""Recall's fallback (the cascade's escalation): ask the configured HTTP endpoint or command
about an envelope, with an estimated energy, or raise :class:`FallbackError`.

The HTTP fallback sends the envelope's canonical JSON as the user message, so the prompt is
byte-identical for the same log and question. Redirects are refused (the key must not travel
to another host).
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nerve.attention.energy import Energy
from nerve.canonical import canonical_json
from nerve.config.recall import CommandFallback, HttpFallback
from nerve.errors import NerveError
from nerve.flow.utils.run import CommandFailed, CommandResult, run_argv
from nerve.recall.core import Envelope

__all__ = ["SYSTEM_PROMPT", "FallbackError", "FallbackReply", "call_fallback"]

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
