"""When the daemon's next sync round is due, and whether it fetches: rounds only when there is
something to do, so a device at an ordinary rate spends almost nothing on sync.

- **Send**: events committed on this device are sent ``interval`` seconds after the first of
  them, and at most one send round every ``SEND_EVERY`` intervals while they keep coming
  (the ones committed meanwhile go in the same round): a lone event leaves within
  ``interval`` seconds, a steady stream within ``SEND_EVERY`` × ``interval``, in a few
  fuller rounds instead of one per event.
- **Bell**: a transport that can push (NATS: a small message on the group's bell subject after
  each batch another device publishes) rings; a round fetches ``BELL_S`` later.
- **Poll**: a round that fetches regardless: ``interval`` seconds after the last one while
  uneven (a peer short of what was sent, a batch waiting for a gap, a peer ahead of what
  this device holds), then backing off, doubling each quiet round, to ``LISTEN_TIMES`` ×
  ``interval`` while the transport can ring (30 s by default: a missed bell costs at most
  that), else to ``QUIET_TIMES`` × ``interval`` (S3 cannot push: a new batch is seen within
  8 s by default).
- **Look**: what a round sent is seen taken in the peers' statuses by the next round (a send
  round reads them first while the last send is not yet seen taken); after the last send of
  a stream, a poll ``QUIET_TIMES`` intervals later reads them.
"""

from __future__ import annotations

__all__ = ["BELL_S", "LISTEN_TIMES", "QUIET_TIMES", "SEND_EVERY", "Pace"]

BELL_S = 0.2  # a ring waits this long, so a few boxes published together take one round
LISTEN_TIMES = 15  # idle polls while bells can ring back off to this many intervals
QUIET_TIMES = 4  # idle polls without bells back off to this many intervals
SEND_EVERY = 4  # intervals between send rounds while events keep coming


class Pace:
    """The schedule of one daemon's rounds (times are ``time.monotonic`` seconds)."""

    def __init__(self, interval: float, now: float) -> None:
        self.interval = interval
        self.listening = False  # the transport rings when another device publishes
        self._send_at: float | None = None
        self._sent_at = now - SEND_EVERY * interval  # when the last round that sent began
        self._committed_at = now  # the last commit
        self._begun, self._fetching = now, True  # the round under way
        self._bell_at: float | None = None
        self._look_at: float | None = None
        self._poll_at = now  # the first round polls at once
        self._quiet = 0  # polls in a row that found nothing to do

    def committed(self, now: float) -> None:
        """This device committed events: a round sends them ``interval`` seconds after the
        first not yet sent, and not sooner than ``SEND_EVERY`` intervals after the last."""
        self._committed_at = now
        if self._send_at is None:
            self._send_at = max(now + self.interval, self._sent_at + SEND_EVERY * self.interval)

    def rang(self, now: float) -> None:
        """The transport rang: another device published."""
        if self._bell_at is None:
            self._bell_at = now + BELL_S

    def due(self) -> float:
        """When the next round is due."""
        return min(t for t in self._timers(False) if t is not None)

    def begin(self, now: float) -> bool:
        """A round begins at ``now``; whether it fetches (anything but a send is due)."""
        self._begun = now
        self._fetching = any(t is not None and t <= now for t in self._timers(True))
        return self._fetching

    def done(self, now: float, received: bool, even: bool, settled: bool) -> None:
        """The round ended: ``received`` (events came in), ``even`` and ``settled``
        (:attr:`Engine.even`, :attr:`Engine.settled`). Every round sends what was committed
        before it began; what came during it is sent ``SEND_EVERY`` intervals later."""
        if self._send_at is not None:
            later = self._committed_at >= self._begun
            self._sent_at = self._begun
            self._send_at = self._begun + SEND_EVERY * self.interval if later else None
        self._look_at = None if settled else now + QUIET_TIMES * self.interval
        if self._fetching:
            self._bell_at = None
            self._quiet = self._quiet + 1 if even and not received else 0
            self._poll_at = now + (self._idle_wait() if even else self.interval)
        elif not even:
            self._poll_at = min(self._poll_at, now + self.interval)

    def failed(self, retry_at: float) -> None:
        """A round failed: the next one is a poll at ``retry_at`` (sooner if events are
        committed meanwhile)."""
        self._send_at = self._bell_at = self._look_at = None
        self._poll_at, self._quiet = retry_at, 0

    def _timers(self, fetching: bool) -> list[float | None]:
        others = [self._bell_at, self._look_at, self._poll_at]
        return others if fetching else [self._send_at, *others]

    def _idle_wait(self) -> float:
        cap = (LISTEN_TIMES if self.listening else QUIET_TIMES) * self.interval
        return min(self.interval * 2.0 ** min(self._quiet, 16), cap)
