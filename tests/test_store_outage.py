"""Outage: one log line when the database stops answering, one when it answers again."""

from __future__ import annotations

from structlog.testing import capture_logs

from hubwatch.store.outage import SETTLE_S, Outage


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_logged_once_when_it_starts_and_once_when_it_ends() -> None:
    clock = Clock()
    outage = Outage(clock)
    with capture_logs() as logs:
        outage.recovered()  # nothing to end
        for _ in range(50):  # every request and job of a restart fails
            outage.failed("the database system is shutting down")
            outage.refused()
        clock.now += 3
        outage.failed("connection refused")
        assert outage.down
        outage.recovered()  # a statement on a session the server has not closed yet
        clock.now += SETTLE_S / 2
        outage.failed("terminating connection due to administrator command")
        outage.refused()
        clock.now += SETTLE_S
        outage.recovered()
        outage.recovered()
    assert not outage.down
    assert logs == [
        {
            "event": "database_unavailable",
            "reason": "the database system is shutting down",
            "log_level": "warning",
        },
        {
            "event": "database_available",
            "down_s": 4.5,
            "failed": 52,
            "refused": 51,
            "log_level": "info",
        },
    ]


def test_the_next_outage_counts_from_nought() -> None:
    clock = Clock()
    outage = Outage(clock)
    with capture_logs() as logs:
        for _ in range(2):
            outage.failed("down")
            outage.refused()
            clock.now += SETTLE_S
            outage.recovered()
    assert [(e["event"], e.get("refused")) for e in logs] == [
        ("database_unavailable", None),
        ("database_available", 1),
        ("database_unavailable", None),
        ("database_available", 1),
    ]
