"""When the daemon's next sync round is due, and whether it fetches: rounds only when there is
something to do, so a device at an ordinary rate spends almost nothing on sync.

- **Send**: events committed on this device are sent ``interval`` seconds after the first of
  them (the ones committed meanwhile go in the same round), so a busy device sends a few
  fuller rounds instead of one per event, and an event leaves within ``interval`` seconds.
- **Bell**: a transport that can push (NATS: a small message on the group's bell subject after
  each batch another device publishes) rings; a round fetches ``BELL_S`` later.
- **Poll**: a round that fetches regardless, ``interval`` seconds after the last one while
  anything moved or is unsettled (a peer short of what was sent, a batch waiting for a gap,
  a peer ahead of what this device holds), then backing off, doubling each quiet round, to
  ``LISTEN_MAX_S`` while the transport can ring (a missed bell costs at most that), else to
  ``QUIET_TIMES`` × ``interval`` (S3 cannot push: a new batch is seen within that).

A round due only to send does not fetch (the bell or the next poll does that).
"""

from __future__ import annotations

__all__ = ["BELL_S", "LISTEN_MAX_S", "QUIET_TIMES", "Pace"]

BELL_S = 0.2  # a ring waits this long, so a few boxes published together take one round
LISTEN_MAX_S = 15.0  # idle polls while bells can ring: a bell lost in a reconnect costs this
QUIET_TIMES = 4  # idle polls without bells back off to this many intervals


class Pace:
    """The schedule of one daemon's rounds (times are ``time.monotonic`` seconds)."""

    def __init__(self, interval: float, now: float) -> None:
        self.interval = interval
        self.listening = False  # the transport rings when another device publishes
        self._send_at: float | None = None
        self._bell_at: float | None = None
        self._poll_at = now  # the first round polls at once
        self._quiet = 0  # polls in a row that found nothing to do

    def committed(self, now: float) -> None:
        """This device committed events: a round sends them ``interval`` seconds after the
        first not yet sent."""
        if self._send_at is None:
            self._send_at = now + self.interval

    def rang(self, now: float) -> None:
        """The transport rang: another device published."""
        if self._bell_at is None:
            self._bell_at = now + BELL_S

    def due(self) -> float:
        """When the next round is due."""
        return min(t for t in (self._send_at, self._bell_at, self._poll_at) if t is not None)

    def fetches(self, now: float) -> bool:
        """Whether the round due at ``now`` fetches (a bell or a poll is due, not only a send)."""
        return any(t is not None and t <= now for t in (self._bell_at, self._poll_at))

    def done(self, now: float, fetched: bool, moved: bool, settled: bool) -> None:
        """A round ended: ``fetched`` (it polled), ``moved`` (it sent, received or rewound
        events), ``settled`` (nothing left to chase, :attr:`Engine.settled`)."""
        self._send_at = None
        if fetched:
            self._bell_at = None
            self._quiet = 0 if moved or not settled else self._quiet + 1
            self._poll_at = now + self._idle_wait()
        elif not settled:
            self._poll_at = min(self._poll_at, now + self.interval)  # look again soon

    def failed(self, retry_at: float) -> None:
        """A round failed: the next one is a poll at ``retry_at`` (sooner if events are
        committed meanwhile)."""
        self._send_at = self._bell_at = None
        self._poll_at, self._quiet = retry_at, 0

    def _idle_wait(self) -> float:
        cap = LISTEN_MAX_S if self.listening else QUIET_TIMES * self.interval
        return min(self.interval * 2.0 ** min(self._quiet, 16), max(cap, self.interval))
