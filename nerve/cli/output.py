"""Shared output: JSON lines, CSV, and rich tables only when stdout is a terminal."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from nerve.query import jsonable


def console(file: TextIO | None = None) -> Console:
    """A console that styles only on a terminal and honours ``NO_COLOR``."""
    out = file or sys.stdout
    return Console(
        file=out, no_color=bool(os.environ.get("NO_COLOR")), highlight=False, soft_wrap=False
    )


def is_terminal(file: TextIO | None = None) -> bool:
    out = file or sys.stdout
    return bool(getattr(out, "isatty", lambda: False)())


def dumps(value: Any) -> str:
    """Byte-stable JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(jsonable(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def emit_json(value: Any, file: TextIO | None = None) -> None:
    (file or sys.stdout).write(dumps(value) + "\n")


def render_rows(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    fmt: str,
    title: str | None = None,
    file: TextIO | None = None,
) -> None:
    """Print rows as ``json`` (one object per line), ``csv``, or a table/tab-separated text."""
    out = file or sys.stdout
    if fmt == "json":
        for row in rows:
            emit_json(dict(zip(columns, row, strict=True)), out)
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_cell(v) for v in row] for row in rows])
        out.write(buf.getvalue())
    elif is_terminal(out):
        table = Table(*columns, title=title, expand=False)
        for row in rows:
            table.add_row(*(_cell(v) for v in row))
        console(out).print(table)
    else:
        out.write("\t".join(columns) + "\n")
        for row in rows:
            out.write("\t".join(_cell(v) for v in row) + "\n")


def _cell(value: Any) -> str:
    value = jsonable(value)
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return str(value)
