"""An event before the writer stamps it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nerve.errors import EventError
from nerve.events import NERVE_SOURCE, NERVE_TRUST, Trust, check_kind, check_source, payload_bytes


@dataclass(frozen=True, slots=True)
class Draft:
    """An event before the writer stamps it."""

    kind: str = "observation"
    source: int = NERVE_SOURCE
    trust: int = Trust.UNTRUSTED
    line: str = ""
    payload: bytes = b""
    subject: str = ""
    valid_time_ns: int | None = None

    @classmethod
    def of(
        cls,
        kind: str = "observation",
        *,
        source: int = NERVE_SOURCE,
        trust: int = Trust.UNTRUSTED,
        line: str = "",
        payload: Any = None,
        subject: str = "",
        valid_time_ns: int | None = None,
    ) -> Draft:
        """Validate fields and encode the payload (bytes as given, else canonical JSON)."""
        check_kind(kind)
        check_source(source)
        if int(trust) not in (0, 1, 2, 3):
            raise EventError(f"trust {trust!r} is not 0..3")
        return cls(
            kind, source, int(trust), str(line), payload_bytes(payload), str(subject), valid_time_ns
        )

    @classmethod
    def control(cls, kind: str, subject: str, line: str, payload: Any) -> Draft:
        """A first-party record of nerve's own doing (state, errors, runs, configuration).

        On the daemon's hot path: source and trust are constants, so only the kind is checked.
        """
        check_kind(kind)
        return cls(
            kind,
            NERVE_SOURCE,
            NERVE_TRUST,
            str(line),
            payload_bytes(payload),
            str(subject),
            None,
        )
