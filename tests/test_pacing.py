"""Rate-limit pacing: parsing the Hub's headers and deciding when to wait."""

from __future__ import annotations

import pytest

from hubwatch.sources.pacing import Pacer, Quota, bucket_of, parse_policy, parse_ratelimit


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('"api";r=985;t=9', [Quota("api", 985, 9.0)]),
        ('"resolvers";r=0;t=201', [Quota("resolvers", 0, 201.0)]),
        ('"api";r=1;t=2, "resolvers";r=3;t=4', [Quota("api", 1, 2.0), Quota("resolvers", 3, 4.0)]),
        ("garbage", []),
        (None, []),
        ('"api";r=x;t=1', []),
    ],
)
def test_parse_ratelimit(header: str | None, expected: list[Quota]) -> None:
    assert parse_ratelimit(header) == expected


def test_parse_policy_reads_the_quota_per_bucket() -> None:
    assert parse_policy('"fixed window";"api";q=1000;w=300') == {"api": 1000}


@pytest.mark.parametrize(
    ("path", "bucket"),
    [("/api/models/a/b", "api"), ("/a/b/resolve/main/x.json", "resolvers"), ("/cdn/abc", None)],
)
def test_bucket_of(path: str, bucket: str | None) -> None:
    assert bucket_of(path) == bucket


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_no_wait_while_plenty_is_left() -> None:
    clock = FakeClock()
    pacer = Pacer(clock, clock.sleep)
    pacer.after('"api";r=900;t=300', '"fixed window";"api";q=1000;w=300')
    assert [pacer.before("api") for _ in range(10)] == [0.0] * 10


def test_exhausted_bucket_waits_for_the_reset() -> None:
    clock = FakeClock()
    pacer = Pacer(clock, clock.sleep)
    pacer.after('"api";r=0;t=42')
    assert pacer.before("api") == 42.0
    assert pacer.before("api") == 0.0  # new window: nothing known until the next answer
    assert pacer.before("resolvers") == 0.0


def test_low_budget_is_spread_over_the_window() -> None:
    clock = FakeClock()
    pacer = Pacer(clock, clock.sleep)
    pacer.after('"api";r=4;t=40', '"fixed window";"api";q=1000;w=300')
    waits = [pacer.before("api") for _ in range(4)]
    assert waits[0] == 0.0 and all(w == pytest.approx(10.0, rel=0.2) for w in waits[1:])
    assert sum(waits) < 40
