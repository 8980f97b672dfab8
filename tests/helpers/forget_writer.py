"""A writer that forgets every shell event's payload, printing each step as it begins.

``#scan`` (reading segments and writing their erased copies), ``#event`` (appending the
payload.erased event), ``#record`` (the manifest record that swaps the segments),
``#drop`` (deleting replaced files) and ``#done``; then it waits to be killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from nerve.log import erasure, store
from nerve.log.store import EventLog


def _say(step: str) -> None:
    sys.stdout.write(f"#{step}\n")
    sys.stdout.flush()


def _announced(step: str, fn: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        _say(step)
        return fn(*args, **kwargs)

    return call


def main(root: Path) -> None:
    """Forget every shell event's payload in the log at ``root``, announcing each step."""
    store.erasure.rewrite = _announced("scan", erasure.rewrite)  # type: ignore[attr-defined]
    EventLog.append_drafts = _announced("event", EventLog.append_drafts)  # type: ignore[method-assign]
    EventLog._record_rewrite = _announced("record", EventLog._record_rewrite)  # type: ignore[method-assign]
    EventLog._drop_retired = _announced("drop", EventLog._drop_retired)  # type: ignore[method-assign]
    with EventLog(root, node="forget", retire_grace_ns=0) as log:
        _say("ready")
        log.erase(lambda t: pc.equal(t.column("source"), 5), reason="crash", selection={})
        _say("done")
        time.sleep(60)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
