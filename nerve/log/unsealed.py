"""One WAL generation's committed rows in memory, in commit order, until they are sealed.

Small batches (``codec.small_rows``) are kept as Python rows and built into Arrow in bulk
when something reads the generation (a seal, a reader of the tail) or once
:data:`FLUSH_ROWS` of them have gathered, so a small append builds no table of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

import pyarrow as pa

from nerve.log.codec import Row, table_from_rows

FLUSH_ROWS = 4096  # rows kept as tuples at most (memory), then built into one table
# Commits' tables are merged this many at a time: a seal then frees a few dozen tables, not
# thousands (freeing 3,000 small tables at once holds the GIL for ~30 ms), and a reader of
# the tail walks fewer pieces.
MERGE_TABLES = 64


class Unsealed:
    """The tables and rows of one generation.

    Only the writer adds to a generation, holding the log's append lock, and the open
    generation is read under that lock too; a rotated (pending) one may be read by several
    threads at once, so reading takes this object's own lock.
    """

    def __init__(self, tables: Iterable[pa.Table] = ()) -> None:
        self._tables: list[pa.Table] = list(tables)
        self._rows: list[Row] = []
        self._lock = threading.Lock()
        self.rows = sum(t.num_rows for t in self._tables)
        self._loose = 0  # tables at the end of ``_tables`` not merged yet

    def __bool__(self) -> bool:
        return self.rows > 0 or bool(self._tables)

    def add_table(self, table: pa.Table) -> None:
        self._flush()
        self._tables.append(table)
        self.rows += table.num_rows
        self._loose += 1
        if self._loose >= MERGE_TABLES:
            loose = self._tables[-self._loose :]
            self._tables[-self._loose :] = [pa.concat_tables(loose).combine_chunks()]
            self._loose = 0

    def add_rows(self, rows: Sequence[Row]) -> None:
        self._rows += rows
        self.rows += len(rows)
        if len(self._rows) >= FLUSH_ROWS:
            self._flush()

    def tables(self) -> list[pa.Table]:
        """Every committed row, as tables in commit order."""
        with self._lock:
            self._flush()
            return list(self._tables)

    def _flush(self) -> None:
        if self._rows:
            self._tables.append(table_from_rows(self._rows))
            self._rows = []
            self._loose += 1
