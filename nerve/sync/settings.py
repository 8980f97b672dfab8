"""The ``sync:`` section of nerve.yaml (validated with the rest of the file)::

    sync:
      auto: true              # the daemon syncs on its own while the workspace is in a group
      interval: 2             # new events leave within this (see nerve.sync.pace)
      keep_local:             # what never leaves this device (and is outside the shared digest)
        sources: [shell]      # by source class name or code
        kinds: [ask.question]
        senses: [window]      # by sense (the subject of a sense's events)

The group itself (its name, key and transport) is not here: ``nerve sync init`` / ``join``
keep it under ``data/sync/`` with the key file private (see :mod:`nerve.sync.group`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MODELS", "KeepLocal", "SyncConfig"]


class KeepLocal(BaseModel):
    """What a device keeps to itself: events matching any list never leave it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sources: list[str | int] = Field(default_factory=list)
    kinds: list[str] = Field(default_factory=list)
    senses: list[str] = Field(default_factory=list)


class SyncConfig(BaseModel):
    """A whole ``sync:`` section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    auto: bool = True
    interval: float = Field(default=2.0, gt=0, le=3600)
    keep_local: KeepLocal = Field(default_factory=KeepLocal)


MODELS = (SyncConfig, KeepLocal)
