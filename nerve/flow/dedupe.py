"""Dedupe keys: a workflow trigger with a ``key`` that already started a run starts none.

A key is claimed by the run it admitted (queued or started; a run refused at once, ``dropped``
or ``failed``, claims nothing) and stays claimed for the workflow's ``dedupe_window``, or for
ever when none is set. A later request with the key records ``workflow.deduped`` naming the
earlier run. Claims are rebuilt from the log on start (the first status of a run carries its
request, key included), so they hold across restarts.
"""

from __future__ import annotations

from typing import Any

DEDUPED = "workflow.deduped"
_NS_PER_MS = 1_000_000

CLAIMS_SQL = """
SELECT data ->> 'workflow' AS workflow, data -> 'request' ->> 'key' AS key,
       subject AS run, physical_ns
FROM events
WHERE kind = 'workflow.status' AND data -> 'request' ->> 'key' IS NOT NULL
  AND data ->> 'status' NOT IN ('dropped', 'failed')
ORDER BY physical_ns, logical
"""


class Keys:
    """The newest claim of every (workflow, key): the run and when (wall ns)."""

    def __init__(self) -> None:
        self._claims: dict[tuple[str, str], tuple[str, int]] = {}

    def load(self, conn: Any) -> None:
        """Rebuild the claims from the log (a DuckDB connection with the ``events`` view)."""
        for workflow, key, run, ns in conn.execute(CLAIMS_SQL).fetchall():
            self._claims[(str(workflow), str(key))] = (str(run), int(ns))

    def earlier(self, workflow: str, key: str, window_ms: int | None, now_ns: int) -> str | None:
        """The run that holds ``key`` now, if any (claims older than the window lapse)."""
        claim = self._claims.get((workflow, key))
        if claim is None:
            return None
        run, at = claim
        if window_ms is not None and now_ns - at >= window_ms * _NS_PER_MS:
            return None
        return run

    def claim(self, workflow: str, key: str, run: str, now_ns: int) -> None:
        self._claims[(workflow, key)] = (run, now_ns)

    def release(self, workflow: str, key: str, run: str) -> None:
        """Give a claim back (the run was refused); a newer claim is kept."""
        if self._claims.get((workflow, key), ("", 0))[0] == run:
            del self._claims[(workflow, key)]
