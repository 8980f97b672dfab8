"""The ``recall:`` section of nerve.yaml: how ``nerve ask`` retrieves, and what it asks when
the deterministic Tier 0 cannot answer.

    recall:
      k: 12                  # spans in the envelope
      window: 50000          # newest events searched
      kinds: [observation, attention.highlight, attention.decision, sense.error]
      fallback:              # optional: an OpenAI-compatible endpoint, or a program
        kind: http
        endpoint: http://127.0.0.1:8080/v1
        model: local
        timeout: 30s

Here, not in ``nerve.recall``, so that loading nerve.yaml does not load the recall engine.
"""

from __future__ import annotations

import urllib.parse
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from nerve.durations import PositiveDuration
from nerve.errors import NerveError
from nerve.events import check_kind

__all__ = [
    "DEFAULT_K",
    "DEFAULT_KINDS",
    "DEFAULT_UJ_PER_TOKEN",
    "DEFAULT_WATTS",
    "DEFAULT_WINDOW_SPANS",
    "MODELS",
    "CommandFallback",
    "HttpFallback",
    "RecallConfig",
]

DEFAULT_K = 12
DEFAULT_WINDOW_SPANS = 50_000
DEFAULT_KINDS = ("observation", "attention.highlight", "attention.decision", "sense.error")
DEFAULT_UJ_PER_TOKEN = 1_000_000
DEFAULT_WATTS = 30


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _http_url(value: str) -> str:
    parts = urllib.parse.urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http(s) URL, got {value!r}")
    return value


def _kind_name(value: str) -> str:
    try:
        return check_kind(value)
    except NerveError as exc:
        raise ValueError(str(exc)) from None


class HttpFallback(_Strict):
    """An OpenAI-compatible ``{endpoint}/chat/completions``."""

    kind: Literal["http"]
    endpoint: Annotated[str, AfterValidator(_http_url)]
    model: str = Field(min_length=1)
    api_key_env: str | None = Field(default=None, min_length=1)
    timeout: PositiveDuration = 30_000
    max_tokens: int | None = Field(default=None, ge=1)
    uj_per_token: int = Field(default=DEFAULT_UJ_PER_TOKEN, ge=0)


class CommandFallback(_Strict):
    """A program run with argv (no shell): envelope JSON on stdin, the answer on stdout."""

    kind: Literal["command"]
    argv: list[str] = Field(min_length=1)
    timeout: PositiveDuration = 30_000
    watts: int = Field(default=DEFAULT_WATTS, ge=0)


Fallback = Annotated[HttpFallback | CommandFallback, Field(discriminator="kind")]


class RecallConfig(_Strict):
    """The ``recall:`` section of ``nerve.yaml`` (see the module docstring)."""

    k: int = Field(default=DEFAULT_K, ge=1, le=1_000)
    window: int = Field(default=DEFAULT_WINDOW_SPANS, ge=1, le=100_000_000)
    kinds: list[Annotated[str, AfterValidator(_kind_name)]] = Field(
        default_factory=lambda: list(DEFAULT_KINDS), min_length=1
    )
    fallback: Fallback | None = None


MODELS = (RecallConfig, HttpFallback, CommandFallback)
