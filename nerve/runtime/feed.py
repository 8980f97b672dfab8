"""The dev view's feed, as a kernel extension: the newest attention decisions and agent
calls, picked out of committed events.

Attention and ``nerve mcp`` only write their records; the feed reads them as any listener
of the committer does, so neither knows the view exists. It sees every commit from the
log's open (the kernel hands it to the committer first), including agent calls emitted
while the daemon warms up. It shows what the log holds; ``nerve audit verify`` is what
proves a decision was attention's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nerve.attention.kinds import DECISION
from nerve.log.segments import of_kind
from nerve.runtime import journal
from nerve.runtime.extensions import Plain
from nerve.runtime.frame import AgentReads, Highlights, json_object

if TYPE_CHECKING:
    import pyarrow as pa


class ViewFeed(Plain):
    def __init__(self) -> None:
        self.highlights = Highlights()  # surfaced or held: the dev view shows both
        self.agents = AgentReads()  # calls through `nerve mcp`, for the dev view and status

    async def start(self, kernel: object) -> None:
        return None  # listening since the log opened (see the module docstring)

    async def stop(self, kernel: object) -> None:
        return None

    def on_commit(self, table: pa.Table) -> None:
        """A committer listener: the commit's decisions and agent calls, if any."""
        self.agents.note(table)
        decided = of_kind(table, DECISION)
        for raw in decided.column("payload").to_pylist() if decided is not None else ():
            self.decided(json_object(raw))

    def decided(self, payload: dict[str, object]) -> None:
        if not {"outcome", "probe", "source_line"} <= payload.keys():
            return  # not a decision attention wrote: nothing to show
        seen = self.highlights.decided(payload)
        if seen.surfaced:
            journal.say(f"surfaced {seen.probe}: {seen.line}")
