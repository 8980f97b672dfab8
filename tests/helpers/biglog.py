"""A large, realistic workspace for speed figures (`nerve tail` on a million events).

The mix is what a day of the daemon looks like: per compute a ``sense.state`` record, an
observation, now and then a ``signal``; the log is sealed so it reads as segments.
``python -m tests.helpers.biglog DIR 1000000`` builds one from the shell.
"""

from __future__ import annotations

import sys
from pathlib import Path

from nerve.events import NERVE_SOURCE, SourceClass
from nerve.log.fields import EventFields
from nerve.workspace import WorkspaceDir, init_workspace

SENSES = (
    ("cpu", SourceClass.ENDPOINT),
    ("memory", SourceClass.ENDPOINT),
    ("files", SourceClass.FILE_CHANGE),
    ("shell", SourceClass.SHELL),
    ("network", SourceClass.NETWORK),
)
BATCH = 50_000


def _columns(start: int, count: int) -> dict[str, list[object]]:
    kind, subject, source, line, payload = [], [], [], [], []
    for i in range(start, start + count):
        sense, cls = SENSES[(i // 3) % len(SENSES)]
        step = i % 3
        if step == 0:
            row = ("sense.state", sense, NERVE_SOURCE, f"{sense}: state", b'{"n":%d}' % i)
        elif step == 1:
            row = ("observation", sense, int(cls), f"{sense} sample {i}", b'{"v":%d}' % i)
        elif i % 30 == 2:
            row = ("signal", sense, NERVE_SOURCE, f"{sense} signalled", b'{"reason":"interval"}')
        else:
            row = ("observation", sense, int(cls), f"{sense} detail {i}", b"")
        for column, value in zip((kind, subject, source, line, payload), row, strict=True):
            column.append(value)
    return {"kind": kind, "subject": subject, "source": source, "line": line, "payload": payload}


def build_log(root: Path, events: int, *, seal_every: int = 1_000_000) -> WorkspaceDir:
    """A new workspace at ``root`` holding ``events`` events, sealed (each segment at most
    ``seal_every`` events); returns it."""
    ws = init_workspace(root)
    (root / "nerve.yaml").write_text(
        f"log:\n  durability: os\n  seal_max_events: {max(seal_every, BATCH)}\n"
    )
    ws = WorkspaceDir.at(root)
    with ws.open_log() as log:
        for start in range(0, events, BATCH):
            count = min(BATCH, events - start)
            cols = _columns(start, count)
            log.append_columns(EventFields(trust=[3] * count, valid_time_ns=[None] * count, **cols))
        log.seal()
    return ws


if __name__ == "__main__":
    build_log(Path(sys.argv[1]), int(sys.argv[2]))
