"""Prometheus metrics of polling, discovery and delivery, in prometheus_client's default registry.

Defined once at import (prometheus_client registers each name once per process); they hold no
connection or thread, so this is no import-time client. `hubwatch worker --metrics-port N`
serves them; the HTTP API exposes the same registry at `/metrics`.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram, start_http_server

from hubwatch.models import Change

POLLS = Counter(
    "hubwatch_polls", "Polls of one repo, by outcome (new, idle, failed, released).", ["outcome"]
)
REVISIONS = Counter("hubwatch_revisions", "Revisions recorded.")
CHANGES = Counter("hubwatch_changes", "Changes detected between revisions, by kind.", ["kind"])
HUB_REQUESTS = Counter(
    "hubwatch_hub_requests",
    "HTTP requests to the Hub, by rate-limit bucket and status.",
    ["bucket", "status"],
)
RATE_LIMIT_WAITS = Counter(
    "hubwatch_rate_limit_waits", "Waits before a request to stay inside a rate limit.", ["bucket"]
)
RATE_LIMIT_WAIT_SECONDS = Counter(
    "hubwatch_rate_limit_wait_seconds", "Seconds spent waiting to stay inside rate limits."
)
RETRIES = Counter("hubwatch_retries", "Retries of a transient source error.")
WEBHOOK_DELIVERIES = Counter(
    "hubwatch_webhook_deliveries",
    "Webhook delivery attempts, by outcome (delivered, failed).",
    ["outcome"],
)
HUB_WEBHOOKS = Counter(
    "hubwatch_hub_webhooks",
    "Hub webhooks received, by outcome (polled, ignored, refused).",
    ["outcome"],
)
HUB_WEBHOOK_TRIGGERS_TODAY = Gauge(
    "hubwatch_hub_webhook_triggers_today",
    "Hub webhook triggers received today (UTC); the Hub delivers at most 1,000 a day.",
)
DISCOVERY_WOKEN = Counter("hubwatch_discovery_woken", "Repos woken for a poll by discovery.")
HEAD_CHECKS = Counter(
    "hubwatch_head_checks", "Per-repo cheap checks (resolver HEAD, git ls-remote)."
)
TOKEN_REFUSED = Counter(
    "hubwatch_token_refused",
    "Checks (whoami, at most one per poll interval) that found HF_TOKEN refused by the Hub.",
)
AUTH_FAILED = Counter(
    "hubwatch_auth_failed_polls", "Polls that ended in state auth_failed: the Hub refused HF_TOKEN."
)
DETECTION_LAG = Histogram(
    "hubwatch_detection_lag_seconds",
    "From a revision's upstream commit time to its detection.",
    buckets=(10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600, 86400, float("inf")),
)


def count_changes(changes: Iterable[Change]) -> None:
    """Count detected changes by kind (the tracker calls this for each stored revision)."""
    for change in changes:
        CHANGES.labels(change.kind).inc()


def serve(port: int, addr: str = "0.0.0.0") -> None:
    """Serve the metrics at http://addr:port/metrics from a daemon thread."""
    start_http_server(port, addr)
