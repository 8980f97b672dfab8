"""A batch of events to print, read from the log (a table) or pushed by the daemon (wire
JSON lines): either gives the exact ``tail --json`` text and the columns people read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from nerve.clock import HLC_ZERO, Hlc
from nerve.events import parse_source, parse_trust
from nerve.log.codec import wire_lines
from nerve.log.wire import ERASED_TEXT

SHOWN = ("physical_ns", "logical", "node", "kind", "subject", "source", "trust", "line")


@dataclass
class Batch:
    """Events in HLC order; ``table`` or ``wire`` (one JSON text per event) is set, and
    with ``devices`` (``tail --all-devices``) each event's device name."""

    table: pa.Table | None = None
    wire: list[str] | None = None
    devices: list[str] | None = None
    _parsed: list[dict[str, Any]] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return self.table.num_rows if self.table is not None else len(self.wire or ())

    def lines(self) -> list[str]:
        """Each event exactly as ``tail --json`` prints it (what ``nerve import`` reads)."""
        if self.wire is not None:
            return self.wire
        lines = wire_lines(self.table) if self.table is not None else []
        if self.devices is None:
            return lines
        # "device" sorts first among the keys, so the line stays in sorted-key form
        named = (json.dumps(name, ensure_ascii=False) for name in self.devices)
        return [f'{{"device":{name},{line[1:]}' for name, line in zip(named, lines, strict=True)]

    def columns(self) -> dict[str, list[Any]]:
        """The shown fields, column by column (``source`` and ``trust`` as codes); an erased
        event's line reads ``<erased>``."""
        if self.table is not None:
            shown = {name: self.table.column(name).to_pylist() for name in SHOWN}
            shown["line"] = [ERASED_TEXT if x is None else x for x in shown["line"]]
            if self.devices is not None:
                shown["device"] = list(self.devices)
            return shown
        rows = self._rows()
        cols: dict[str, list[Any]] = {
            "physical_ns": [r["hlc"][0] for r in rows],
            "logical": [r["hlc"][1] for r in rows],
        }
        for name in ("node", "kind", "subject"):
            cols[name] = [r[name] for r in rows]
        cols["line"] = [r.get("line", ERASED_TEXT) for r in rows]
        sources = {name: parse_source(name) for name in {r["source"] for r in rows}}
        trusts = {name: int(parse_trust(name)) for name in {r["trust"] for r in rows}}
        cols["source"] = [sources[r["source"]] for r in rows]
        cols["trust"] = [trusts[r["trust"]] for r in rows]
        return cols

    @property
    def newest(self) -> Hlc:
        """The stamp of the last event (``HLC_ZERO`` when empty)."""
        if not len(self):
            return HLC_ZERO
        if self.table is not None:
            col_p, col_l = self.table.column("physical_ns"), self.table.column("logical")
            return Hlc(col_p[-1].as_py(), col_l[-1].as_py())
        return wire_stamp(self.lines()[-1])

    def _rows(self) -> list[dict[str, Any]]:
        if self._parsed is None:
            self._parsed = [json.loads(text) for text in self.wire or ()]
        return self._parsed


def wire_stamp(text: str) -> Hlc:
    """The stamp of one wire line: it starts ``{"hlc":[PHYSICAL,LOGICAL]``."""
    head = text[len('{"hlc":[') : text.index("]")]
    physical, logical = head.split(",")
    return Hlc(int(physical), int(logical))
