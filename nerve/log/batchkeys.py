"""Idempotency keys: a client that retries a batch gets it stored once.

A keyed batch is committed in the same WAL frame as one ``batch.key`` event placed right
after it: subject = the key, payload = ``{"events": n, "first": [p, l], "last": [p, l]}``
(the batch's first and last stamps; ``null`` for an empty batch). Because the marker and the
batch share a frame, they are durable together or not at all.

A key is remembered for :data:`KEY_WINDOW_NS` (24 hours) after it was stored, as payment
APIs do: within that window a batch sent again with the same key appends nothing and returns
the rows stored the first time. Keys are found again after a restart by reading only the
segments sealed within the window.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa

from nerve.clock import Hlc
from nerve.errors import EventError
from nerve.log import segments as seg
from nerve.log.drafts import Draft
from nerve.log.manifest import SegmentInfo

KEY_KIND = "batch.key"
KEY_WINDOW_NS = 24 * 3600 * 10**9
MAX_KEY_CHARS = 200

Fetch = Callable[[Hlc, Hlc], pa.Table]


def check_key(key: str) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS or not key.isprintable():
        raise EventError(f"batch key {key!r} must be 1..{MAX_KEY_CHARS} printable characters")
    return key


def key_draft(key: str, count: int, first: Hlc | None, last: Hlc | None) -> Draft:
    payload = {
        "events": count,
        "first": list(first) if first is not None else None,
        "last": list(last) if last is not None else None,
    }
    return Draft.control(KEY_KIND, key, f"batch {key}: {count} events", payload)


class BatchKeys:
    """The keys stored within the window, and where each batch's rows are."""

    def __init__(self, now_ns: Callable[[], int], fetch: Fetch) -> None:
        self._now = now_ns
        self._fetch = fetch
        self._seen: dict[str, tuple[int, Hlc | None, Hlc | None]] = {}

    def load(self, folder: Path, segments: list[SegmentInfo], unsealed: Iterable[pa.Table]) -> None:
        horizon = self._now() - KEY_WINDOW_NS
        for info in segments:
            if info.max_hlc.physical_ns >= horizon:
                path = seg.segment_path(folder, info.name)
                self.observe(seg.read_segment(path, ["physical_ns", "kind", "subject", "payload"]))
        for table in unsealed:
            self.observe(table)

    def observe(self, table: pa.Table) -> None:
        """Remember the keys of a table of committed rows."""
        marks = seg.of_kind(table, KEY_KIND)  # on every commit once keys are in use
        if marks is None:
            return
        for row in marks.select(["physical_ns", "subject", "payload"]).to_pylist():
            body = json.loads(row["payload"])
            first, last = body.get("first"), body.get("last")
            self._seen[row["subject"]] = (
                row["physical_ns"],
                Hlc(*first) if first else None,
                Hlc(*last) if last else None,
            )

    def lookup(self, key: str) -> pa.Table | None:
        """The rows a key stored, or None if the key is new (or older than the window)."""
        found = self._seen.get(key)
        if found is None or found[0] < self._now() - KEY_WINDOW_NS:
            return None
        _, first, last = found
        if first is None or last is None:
            return self._fetch(Hlc(0, 0), Hlc(0, 0)).slice(0, 0)
        return self._fetch(first, last)
