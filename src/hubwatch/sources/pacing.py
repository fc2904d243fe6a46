"""Pacing requests to stay inside the rate-limit policy a server announces.

The Hub sends IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers) on every answer:
`RateLimit: "api";r=985;t=9` (985 requests left in the window, which resets in 9 s) and
`RateLimit-Policy: "fixed window";"api";q=1000;w=300`. The pacer spreads the requests left over
the time left, and waits for the reset once none are left, so a well-behaved client never sees
a 429 from its own traffic. While plenty is left (more than a tenth of the quota) requests go
out at once: the windows are fixed, so bursts are allowed and small polls stay fast.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx2
import structlog

from hubwatch import metrics
from hubwatch.sources.base import Allowance

log = structlog.get_logger(__name__)

_ITEM = re.compile(r'"(?P<name>[^"]+)"\s*;(?P<params>[^,]*)')
_PARAM = re.compile(r"(?P<key>[a-z]+)=(?P<value>\d+)")
_POLICY_QUOTA = re.compile(r'"(?P<name>[^"]+)"\s*;\s*q=(?P<q>\d+)(?:\s*;\s*w=(?P<w>\d+))?')
MIN_RESERVE = 5


@dataclass(frozen=True, slots=True)
class Quota:
    """What a RateLimit header says about one bucket."""

    bucket: str
    remaining: int
    reset_s: float


def parse_ratelimit(header: str | None) -> list[Quota]:
    """The buckets in a `RateLimit` header; malformed items are skipped, never fatal."""
    quotas = []
    for item in _ITEM.finditer(header or ""):
        params = {m["key"]: int(m["value"]) for m in _PARAM.finditer(item["params"])}
        if "r" in params and "t" in params:
            quotas.append(Quota(item["name"], params["r"], float(params["t"])))
    return quotas


def parse_policy(header: str | None) -> dict[str, int]:
    """Quota per bucket from a `RateLimit-Policy` header (`"fixed window";"api";q=1000;w=300`)."""
    return {m["name"]: int(m["q"]) for m in _POLICY_QUOTA.finditer(header or "")}


def parse_allowances(header: str | None) -> dict[str, Allowance]:
    """Quota and window per bucket from a `RateLimit-Policy` header; items without `w=` or with
    a zero window are left out."""
    found = {}
    for m in _POLICY_QUOTA.finditer(header or ""):
        if m["w"] and int(m["w"]) > 0:
            found[m["name"]] = Allowance(int(m["q"]), float(m["w"]))
    return found


def bucket_of(path: str) -> str | None:
    """The Hub's bucket for a request path: "api" for /api/*, "resolvers" for file resolves,
    "cas" for Xet reconstructions."""
    if path.startswith("/api/"):
        return "api"
    if "/resolve/" in path:
        return "resolvers"
    if path.startswith(("/v1/reconstructions/", "/v2/reconstructions/")):
        return "cas"  # the Xet CAS server's own quota, apart from the Hub's
    return None


class Pacer:
    """Per-bucket pacing shared by every request of one process (thread-safe)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        max_wait_s: float = 330.0,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._max_wait = max_wait_s
        self._lock = threading.Lock()
        # bucket -> (remaining, reset at, earliest next send)
        self._state: dict[str, tuple[int, float, float]] = {}
        self._reserve: dict[str, int] = {}
        self._allowances: dict[str, Allowance] = {}
        self.waited_s = 0.0
        """Total time spent waiting, for metrics and benchmarks."""

    def before_request(self, request: httpx2.Request) -> None:
        """An httpx2 request hook: wait as `before` says for the request's bucket."""
        self.before(bucket_of(request.url.path))

    def before(self, bucket: str | None) -> float:
        """Wait, if needed, before sending a request to `bucket`; returns the seconds waited."""
        if bucket is None:
            return 0.0
        with self._lock:
            state = self._state.get(bucket)
            if state is None:
                return 0.0
            remaining, reset_at, next_at = state
            now = self._clock()
            if now >= reset_at:
                self._state.pop(bucket)  # the window is over: the next answer tells us anew
                return 0.0
            if remaining <= 0:
                wait = reset_at - now
                self._state[bucket] = (remaining, reset_at, reset_at)
            elif remaining > self._reserve.get(bucket, MIN_RESERVE):
                wait = 0.0
                self._state[bucket] = (remaining - 1, reset_at, now)
            else:
                # Spread what is left evenly over what remains of the window.
                send_at = max(now, next_at)
                wait = send_at - now
                spacing = (reset_at - send_at) / remaining
                self._state[bucket] = (remaining - 1, reset_at, send_at + spacing)
        wait = min(wait, self._max_wait)
        if wait > 0:
            log.info("rate_limit_wait", bucket=bucket, wait_s=round(wait, 3))
            metrics.RATE_LIMIT_WAITS.labels(bucket).inc()
            metrics.RATE_LIMIT_WAIT_SECONDS.inc(wait)
            self.waited_s += wait
            self._sleep(wait)
        return wait

    def allowance(self, bucket: str) -> Allowance | None:
        """The policy the server last announced for `bucket` (RateLimit-Policy), if any."""
        with self._lock:
            return self._allowances.get(bucket)

    def after(self, header: str | None, policy: str | None = None) -> None:
        """Learn from an answer's `RateLimit` (and `RateLimit-Policy`) headers."""
        now = self._clock()
        with self._lock:
            for bucket, limit in parse_policy(policy).items():
                self._reserve[bucket] = max(MIN_RESERVE, limit // 10)
            self._allowances.update(parse_allowances(policy))
            for quota in parse_ratelimit(header):
                _, _, next_at = self._state.get(quota.bucket, (0, 0.0, now))
                self._state[quota.bucket] = (quota.remaining, now + quota.reset_s, next_at)
