"""Files: which changed, optionally under a folder."""

from __future__ import annotations

from nerve.events import SourceClass
from nerve.recall.facts.ask import Ask, Row, answer, never, nothing
from nerve.recall.facts.commands import subpath, within
from nerve.recall.tier0 import Tier0Answer

__all__ = ["files_changed"]


def files_changed(ask: Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.FILE_CHANGE):
        return never("files_changed", "file changes")
    seen: dict[str, tuple[Row, str]] = {}
    folder = subpath(ask.text)
    for row in reversed(ask.rows(SourceClass.FILE_CHANGE)):
        path = row.data.get("path")
        if folder is not None and not (isinstance(path, str) and within(path, folder)):
            continue
        if isinstance(path, str) and path not in seen:
            seen[path] = (row, f"{path} ({row.data.get('change', 'changed')}, {ask.when(row.t)})")
    where = f" in {folder}" if folder is not None else ""
    if not seen:
        return nothing(ask, "files_changed", f"file changes{where}")
    title = f"{len(seen)} file(s) changed{where} {ask.scope()}, newest first:"
    return answer("files_changed", title, list(seen.values()))
