"""The ``mcp:`` section of nerve.yaml (validated with the rest of the file)::

    mcp:
      max_rows: {call: 500, session: 50000}         # rows an agent may take: per call, session
      max_bytes: {call: 262144, session: 16777216}  # bytes of results (their JSON), the same
      query_timeout: 5s                             # a `query` still running is interrupted
      allow_write: [emit]                           # emit, trigger_workflow, answer: off unless
                                                    # named here

A session is one stdio server process, or one MCP session over HTTP (or, where the protocol
has no sessions, one client name and version for the life of the server).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from nerve.durations import PositiveDuration

__all__ = ["WRITE_TOOLS", "Budget", "McpConfig"]

WRITE_TOOLS = ("emit", "trigger_workflow", "answer")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Budget(_Model):
    """How much one call, and one whole session, may return."""

    call: int = Field(ge=1)
    session: int = Field(ge=1)


class McpConfig(_Model):
    """A whole ``mcp:`` section."""

    max_rows: Budget = Budget(call=500, session=50_000)
    max_bytes: Budget = Budget(call=256 * 1024, session=16 * 1024 * 1024)
    query_timeout: PositiveDuration = 5_000
    allow_write: list[Literal["emit", "trigger_workflow", "answer"]] = Field(default_factory=list)


MODELS = (McpConfig, Budget)
