"""The seven fields a writer gives of each event, as columns: :class:`EventFields`.

One sequence per field, all of one length; row ``i`` across them is one event. The log adds
the rest as it stores them: the stamp, the node, the payload's address and the id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nerve.log.drafts import Draft

__all__ = ["EventFields"]


@dataclass(frozen=True, slots=True)
class EventFields:
    """Events to append, field by field (``EventLog.append_columns``, ``build_table``)."""

    kind: Sequence[str]
    subject: Sequence[str]
    source: Sequence[int]
    trust: Sequence[int]
    valid_time_ns: Sequence[int | None]
    payload: Sequence[bytes]
    line: Sequence[str]

    def __len__(self) -> int:
        """How many events (rows) they hold."""
        return len(self.kind)

    @classmethod
    def of(cls, drafts: Sequence[Draft]) -> EventFields:
        return cls(
            kind=[d.kind for d in drafts],
            subject=[d.subject for d in drafts],
            source=[d.source for d in drafts],
            trust=[d.trust for d in drafts],
            valid_time_ns=[d.valid_time_ns for d in drafts],
            payload=[d.payload for d in drafts],
            line=[d.line for d in drafts],
        )
