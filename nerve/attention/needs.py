"""What attention needs of the daemon that runs it (the kernel fits this shape).

Attention sits below the runtime, so it names only what it uses: its settings, two folders,
the committer (to hear committed tables and append its records), a log reader and a way to
record a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from nerve.attention.settings import AttentionConfig
from nerve.log.drafts import Draft


class Configured(Protocol):
    @property
    def attention(self) -> AttentionConfig: ...


class Folders(Protocol):
    @property
    def root(self) -> Path: ...

    @property
    def log_root(self) -> Path: ...

    @property
    def data(self) -> Path: ...


class Commits(Protocol):
    listeners: list[Callable[[pa.Table], None]]

    async def append(self, drafts: Sequence[Draft]) -> pa.Table: ...


class Records(Protocol):
    async def record(self, kind: str, subject: str, line: str, payload: Any) -> pa.Table: ...


class AttentionNeeds(Records, Protocol):
    """What attention may use of the kernel that runs it."""

    @property
    def config(self) -> Configured: ...

    @property
    def ws(self) -> Folders: ...

    @property
    def committer(self) -> Commits: ...

    def connect(self, *, projections: bool = True) -> Any: ...
