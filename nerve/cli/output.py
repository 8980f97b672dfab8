"""Shared output: JSON lines, CSV, and tables — styled only on a terminal, bounded there.

Results arrive in chunks (a DuckDB record batch, or one list of rows) and are written as
they come: JSON keeps the columns' order, a terminal shows at most ``limit`` rows and says on
stderr how many it left out, pipes get every row.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from nerve.canonical import jsonable

if TYPE_CHECKING:  # rich's console is loaded when something is drawn, not at start-up
    from rich.console import Console

UNWRAPPED = 1 << 14  # rich's width when not on a terminal: piped text is never wrapped
DEFAULT_LIMIT = 100
FOR_ALL = "use --limit 0, --csv or --json for all"
GAP = "  "
MIN_WIDTH = 6
SAMPLE_ROWS = 1000  # rows that size a terminal table's columns


def console(file: TextIO | None = None) -> Console:
    """A console that styles only on a terminal, honours ``NO_COLOR``, and wraps nothing
    when piped or writing to a file."""
    from rich.console import Console

    out = file or sys.stdout
    return Console(
        file=out,
        no_color=bool(os.environ.get("NO_COLOR")),
        highlight=False,
        soft_wrap=False,
        width=None if is_terminal(out) else UNWRAPPED,
    )


def is_terminal(file: TextIO | None = None) -> bool:
    out = file or sys.stdout
    return bool(getattr(out, "isatty", lambda: False)())


def terminal_width(file: TextIO | None = None) -> int:
    out = file or sys.stdout
    try:
        return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return shutil.get_terminal_size().columns


def dumps(value: Any) -> str:
    """Byte-stable JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(jsonable(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def emit_json(value: Any, file: TextIO | None = None) -> None:
    (file or sys.stdout).write(dumps(value) + "\n")


def row_json(columns: Sequence[str], row: Sequence[Any]) -> str:
    """One result row as a JSON object in the columns' order (nested values as they came)."""
    obj = {name: jsonable(value) for name, value in zip(columns, row, strict=True)}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class Chunk(Protocol):
    """Rows of a result, turned into Python values only when asked."""

    @property
    def num_rows(self) -> int: ...

    def rows(self, stop: int | None = None) -> Sequence[Sequence[Any]]: ...


@dataclass(frozen=True)
class ListChunk:
    data: Sequence[Sequence[Any]]

    @property
    def num_rows(self) -> int:
        return len(self.data)

    def rows(self, stop: int | None = None) -> Sequence[Sequence[Any]]:
        return self.data if stop is None else self.data[:stop]


def render_rows(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    fmt: str,
    title: str | None = None,
    file: TextIO | None = None,
    limit: int = 0,
) -> int:
    """Print rows as ``json`` (one object per line), ``csv``, or a table (tab-separated
    when piped); see :func:`render_chunks`."""
    return render_chunks(columns, [ListChunk(rows)], fmt=fmt, title=title, file=file, limit=limit)


def render_chunks(
    columns: Sequence[str],
    chunks: Iterable[Chunk],
    *,
    fmt: str,
    title: str | None = None,
    file: TextIO | None = None,
    limit: int = 0,
) -> int:
    """Write each chunk as it comes. A table on a terminal shows at most ``limit`` rows
    (0: all) and counts the rest; the count left out is returned and said on stderr."""
    out = file or sys.stdout
    if fmt == "json":
        for chunk in chunks:
            out.write("".join(row_json(columns, row) + "\n" for row in chunk.rows()))
        return 0
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for chunk in chunks:
            writer.writerows([[_cell(v) for v in row] for row in chunk.rows()])
        return 0
    if not is_terminal(out):
        out.write("\t".join(columns) + "\n")
        for chunk in chunks:
            out.write("".join("\t".join(_cell(v) for v in row) + "\n" for row in chunk.rows()))
        return 0
    left = _terminal_table(columns, chunks, out, title, limit)
    if left:
        more_rows(left, FOR_ALL)
    return left


def more_rows(count: int, how: str) -> None:
    sys.stderr.write(f"… {count:,} more row{'s' if count != 1 else ''} ({how})\n")


def _terminal_table(
    columns: Sequence[str], chunks: Iterable[Chunk], out: TextIO, title: str | None, limit: int
) -> int:
    """Aligned columns sized from the first rows (up to ``SAMPLE_ROWS``, however the result
    is chunked); rows past the limit are only counted."""
    shown, left = 0, 0
    held: list[list[str]] = []  # rows waiting for the layout
    layout: Layout | None = None
    for chunk in chunks:
        take = chunk.num_rows if not limit else max(0, min(chunk.num_rows, limit - shown))
        left += chunk.num_rows - take
        if not take:
            continue
        rows = [[flat(_cell(v)) for v in row] for row in chunk.rows(take)]
        shown += take
        if layout is None:
            held += rows
            if len(held) < SAMPLE_ROWS and (not limit or shown < limit):
                continue
            layout, rows, held = _start_table(list(columns), held, out, title), held, []
        out.write("".join(layout.line(cells) + "\n" for cells in rows))
    if layout is None:
        layout = _start_table(list(columns), held, out, title)
        out.write("".join(layout.line(cells) + "\n" for cells in held))
    out.flush()
    return left


def _start_table(
    columns: list[str], rows: list[list[str]], out: TextIO, title: str | None
) -> Layout:
    layout = Layout.fit(columns, rows, terminal_width(out))
    _header(layout, columns, out, title)
    return layout


def _header(layout: Layout, columns: list[str], out: TextIO, title: str | None) -> None:
    from rich.text import Text

    term = console(out)
    if title:
        term.print(Text(title, style="bold"))
    term.print(Text(layout.line(columns).rstrip(), style="bold"))
    term.print(Text(GAP.join("─" * w for w in layout.widths), style="dim"))


@dataclass(frozen=True)
class Layout:
    """Column widths for one table: each fitted to its text, the widest cut first when
    the terminal is narrower; the last column is never padded."""

    widths: list[int]

    @classmethod
    def fit(cls, columns: list[str], rows: list[list[str]], width: int) -> Layout:
        widths = [len(name) for name in columns]
        for cells in rows:
            widths = [max(w, _width(c)) for w, c in zip(widths, cells, strict=True)]
        budget = width - len(GAP) * (len(columns) - 1)
        widths = [min(w, max(budget, MIN_WIDTH)) for w in widths]
        while sum(widths) > budget:
            widest = max(range(len(widths)), key=widths.__getitem__)
            if widths[widest] <= MIN_WIDTH:
                break  # too many columns: the terminal wraps rather than hide one
            widths[widest] -= 1
        return cls(widths)

    def line(self, cells: Sequence[str]) -> str:
        parts = [
            c.ljust(w) if c.isascii() and len(c) <= w else fit_cell(c, w)
            for c, w in zip(cells, self.widths, strict=True)
        ]
        parts[-1] = parts[-1].rstrip(" ") if len(cells[-1]) < self.widths[-1] else parts[-1]
        return GAP.join(parts)


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def fit_cell(text: str, width: int, *, pad: bool = True) -> str:
    """``text`` cut to ``width`` cells (ending ``…`` when cut), padded unless ``pad`` is off."""
    size = _width(text)
    if size > width:
        from rich.cells import set_cell_size

        text = text[: width - 1] if text.isascii() else set_cell_size(text, width - 1)
        return text.rstrip() + "…" + (" " * (width - _width(text.rstrip()) - 1) if pad else "")
    return text + " " * (width - size) if pad else text


_FLAT = str.maketrans({"\n": "↵", "\r": " ", "\t": " "})


def _cell(value: Any) -> str:
    if type(value) is str:  # most cells: skip the conversions below
        return value
    value = jsonable(value)
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def flat(text: str) -> str:
    """One line of text: newlines shown as ``↵``, tabs as spaces."""
    return text if text.isprintable() else text.translate(_FLAT)
