"""The daemon's sync schedule (nerve/sync/pace.py): a lone event leaves within an interval, a
stream in a few fuller rounds, a bell brings a fetch at once, polls back off while settled
and come back every interval while uneven, and nothing committed during a round is left
unsent."""

from __future__ import annotations

import itertools

from nerve.sync.pace import BELL_S, LISTEN_TIMES, QUIET_TIMES, SEND_EVERY, Pace

INTERVAL = 2.0


def _settled_pace(listening: bool = True) -> Pace:
    """A pace after its first round, which found everything even and taken."""
    pace = Pace(INTERVAL, 0.0)
    pace.listening = listening
    assert pace.begin(0.0) is True  # the first round polls at once
    pace.done(0.0, received=False, even=True, settled=True)
    return pace


def _backed_off() -> tuple[Pace, float]:
    """A settled pace whose polls backed off to the cap, and a time just after its last."""
    pace = _settled_pace()
    for _ in range(12):
        _round(pace)
    return pace, pace.due() - LISTEN_TIMES * INTERVAL + 0.5


def _round(pace: Pace, received: bool = False, even: bool = True, settled: bool = True) -> bool:
    """Run the round that is due; whether it fetched."""
    now = pace.due()
    fetched = pace.begin(now)
    pace.done(now, received, even, settled)
    return fetched


def test_a_lone_event_is_sent_an_interval_later_without_a_fetch() -> None:
    pace = _settled_pace()
    pace.committed(0.5)
    assert pace.due() == 0.5 + INTERVAL
    assert pace.begin(pace.due()) is False  # only a send is due


def test_a_stream_is_sent_in_few_rounds_each_event_within_a_few_intervals() -> None:
    pace = _settled_pace()
    commits, rounds = [100.0 + 1.5 * k for k in range(40)], []
    for now in commits:
        while pace.due() <= now:
            rounds.append(pace.due())
            _round(pace, settled=False)  # what it sent is not yet seen taken
        pace.committed(now)
    while pace.due() <= commits[-1] + SEND_EVERY * INTERVAL:
        rounds.append(pace.due())
        _round(pace, settled=False)
    during = [r for r in rounds if r > commits[0]]
    assert len(during) <= 60 / (SEND_EVERY * INTERVAL) + 2, during
    for commit in commits:
        first = min(r for r in rounds if r > commit)
        assert first - commit <= SEND_EVERY * INTERVAL + 1e-9, (commit, rounds)


def test_a_bell_brings_a_fetch_at_once() -> None:
    pace = _settled_pace()
    pace.rang(1.0)
    assert pace.due() == 1.0 + BELL_S and pace.begin(pace.due()) is True


def test_idle_polls_back_off_to_the_cap_and_come_every_interval_while_uneven() -> None:
    for listening, cap in ((True, LISTEN_TIMES * INTERVAL), (False, QUIET_TIMES * INTERVAL)):
        pace = _settled_pace(listening)
        times = []
        for _ in range(12):
            times.append(pace.due())
            assert _round(pace) is True
        waits = [b - a for a, b in itertools.pairwise(times)]
        assert waits == sorted(waits) and waits[-1] == cap, waits
        _round(pace, even=False, settled=False)
        assert pace.due() - times[-1] <= cap + INTERVAL
        now = pace.due()
        pace.begin(now)
        pace.done(now, False, even=False, settled=False)
        assert pace.due() == now + INTERVAL


def test_a_send_not_yet_seen_taken_is_looked_at_by_a_poll_soon() -> None:
    pace, now = _backed_off()
    pace.committed(now)
    assert _round(pace, settled=False) is False
    assert pace.due() == now + INTERVAL + QUIET_TIMES * INTERVAL
    assert pace.begin(pace.due()) is True


def test_an_event_committed_during_a_round_is_sent_by_a_later_one() -> None:
    pace, now = _backed_off()
    pace.committed(now)
    start = pace.due()
    assert pace.begin(start) is False
    pace.committed(start + 0.1)  # the round may not have seen it
    pace.done(start + 0.5, False, True, True)
    assert pace.due() == start + SEND_EVERY * INTERVAL


def test_a_failed_round_retries_at_the_backoff() -> None:
    pace = _settled_pace()
    pace.rang(1.0)
    pace.failed(40.0)
    assert pace.due() == 40.0 and pace.begin(40.0) is True
