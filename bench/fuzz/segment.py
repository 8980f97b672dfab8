"""A sealed Parquet segment (``nerve.log.segments``): read whole, read after a stamp, its
footer's schema, and its rows as events, as the readers do."""

from __future__ import annotations

import tempfile
from pathlib import Path

from nerve.clock import Hlc
from nerve.errors import NerveError
from nerve.log import segments as seg
from nerve.log.codec import stored_events
from nerve.log.drafts import Draft
from nerve.log.store import EventLog

from . import placed

_FOLDER = Path(tempfile.mkdtemp(prefix="nerve-fuzz-segment-"))
_PATH = seg.segment_path(_FOLDER, "0" * 64)

# The modules whose branches guide the fuzzer (only they are instrumented).
COVERED = ("nerve.log.segments", "nerve.log.codec")


def seeds() -> list[bytes]:
    """A real log's sealed segment: a few events, and two hundred."""
    out = []
    for count in (3, 200):
        with tempfile.TemporaryDirectory(prefix="nerve-fuzz-seed-") as tmp:
            root = Path(tmp) / "log"
            with EventLog(root, node="fuzz", durability="os") as log:
                drafts = [
                    Draft(source=2, subject=f"s{i % 7}", payload=b'{"i":%d}' % i, line=f"line {i}")
                    for i in range(count)
                ]
                log.append_drafts(drafts)
                log.seal()
            out += [path.read_bytes() for path in (root / "segments").glob("*.parquet")]
    return out


def _events() -> None:
    """The rows as events, as ``nerve.log.reader.events_since`` reads them."""
    with seg.reading(_PATH):
        stored_events(seg.read_segment(_PATH))


def TestOneInput(data: bytes) -> None:
    """The bytes as a segment file, through each reader."""
    _PATH.write_bytes(data)
    for read in (
        _events,
        lambda: seg.read_since(_PATH, Hlc(1, 0)),
        lambda: seg.read_segment(_PATH, ["id", "payload_cid", "kind"]),
        lambda: seg.stored_v1(_PATH),
    ):
        try:
            read()
        except NerveError as exc:
            placed(exc, str(_PATH))
