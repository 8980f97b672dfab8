"""Choosing events by kind and source: what `nerve tail` and a daemon follower keep."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from nerve.errors import UsageError
from nerve.events import BOOKKEEPING_KINDS, check_kind, parse_source
from nerve.log.lazy import pc


@dataclass(frozen=True)
class TailFilter:
    """Keep events of these kinds (any if empty) and sources (any if empty), except the
    ``hidden`` kinds. :meth:`of` hides nerve's bookkeeping unless asked not to."""

    kinds: tuple[str, ...] = ()
    sources: tuple[int, ...] = ()
    hidden: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, kinds: list[str] | None, sources: list[str] | None, *, all_kinds: bool = True
    ) -> TailFilter:
        """Kinds and source names as given; bookkeeping hidden when ``all_kinds`` is false
        and no kind is named (naming a kind shows it, bookkeeping or not)."""
        hidden = () if all_kinds or kinds else tuple(sorted(BOOKKEEPING_KINDS))
        return cls(tuple(kinds or ()), tuple(parse_source(s) for s in sources or ()), hidden)

    @property
    def everything(self) -> bool:
        return not (self.kinds or self.sources or self.hidden)

    @property
    def columns(self) -> list[str]:
        """The columns :meth:`mask` reads (besides the stamp a window clips by)."""
        return ["kind", "source"]

    def apply(self, table: pa.Table) -> pa.Table:
        if self.everything or not table.num_rows:
            return table
        return table.filter(self.mask(table))

    def mask(self, table: pa.Table | pa.RecordBatch) -> pa.ChunkedArray | pa.Array:
        """True for the rows kept (``kind`` and ``source`` columns are all it reads)."""
        kind, source = table.column("kind"), table.column("source")
        keep = pc.is_valid(kind)  # every row (pa.scalar would import pandas)
        if self.kinds:
            keep = pc.and_(keep, pc.is_in(kind, pa.array(self.kinds, pa.string())))
        if self.hidden:
            keep = pc.and_(keep, pc.invert(pc.is_in(kind, pa.array(self.hidden, pa.string()))))
        if self.sources:
            keep = pc.and_(keep, pc.is_in(source, pa.array(self.sources, pa.int64())))
        return keep

    def to_json(self) -> dict[str, Any]:
        return {
            "kinds": list(self.kinds),
            "sources": list(self.sources),
            "hidden": list(self.hidden),
        }

    @classmethod
    def from_json(cls, obj: Any) -> TailFilter:
        """A filter sent over the socket; junk is a :class:`UsageError` naming the field."""
        if not isinstance(obj, dict):
            raise UsageError('request field "filter" must be an object', field="filter")
        kinds = _strings(obj, "kinds")
        hidden = _strings(obj, "hidden")
        for kind in (*kinds, *hidden):
            check_kind(kind)
        sources = obj.get("sources", [])
        if not isinstance(sources, list) or not all(
            type(s) is int and parse_source(s) == s for s in sources
        ):
            raise UsageError("filter.sources must be a list of source codes", field="filter")
        return cls(kinds, tuple(sources), hidden)


def _strings(obj: dict[str, Any], key: str) -> tuple[str, ...]:
    value = obj.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"filter.{key} must be a list of strings", field="filter")
    return tuple(value)
