"""What a workspace file's validation reports: one :class:`ConfigIssue` per problem, all
raised together in one :class:`InvalidConfig`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nerve.errors import ConfigError

__all__ = ["ConfigIssue", "InvalidConfig"]


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem in a workspace file; ``line``/``column`` are 1-based, None when unknown."""

    file: str
    line: int | None
    column: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class InvalidConfig(ConfigError):
    """A :class:`ConfigError` listing every problem found; ``.issues`` holds them one by one."""

    def __init__(self, issues: Iterable[ConfigIssue], *, hint: str | None = None) -> None:
        self.issues: list[ConfigIssue] = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues), hint=hint)
