"""Webhooks: Standard Webhooks signatures, at-least-once delivery, backoff, disabling, safety."""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import UTC, datetime, timedelta

import httpx2
import pytest
from prometheus_client import REGISTRY
from standardwebhooks import Webhook
from structlog.testing import capture_logs

from hubwatch.errors import WebhookUrlRefused
from hubwatch.models import Change, EventKind, MessageState, RepoEvent, Severity
from hubwatch.notify.delivery import DeliveryRetry, WebhookDeliverer
from hubwatch.notify.outbox import WebhookNotifier, wanted
from hubwatch.notify.signing import new_secret, sign
from hubwatch.notify.urls import UrlPolicy, check_webhook_url, parse_networks
from hubwatch.store.sql import SqlStore
from tests.support.receiver import WebhookReceiver
from tests.support.served import REPO, fill
from tests.test_store import sha, snapshot

LOOPBACK = UrlPolicy(allow_http=True, allowed_networks=parse_networks(["127.0.0.0/8"]))


def verified(secret: str, received: list) -> list[dict]:  # type: ignore[type-arg]
    """Each body, after the standardwebhooks package verified its signature."""
    hook = Webhook(secret)
    return [hook.verify(r.body, r.headers) for r in received]


def deliver_until(deliverer: WebhookDeliverer, done, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "deliveries did not finish"
        deliverer.deliver_due()
        time.sleep(0.02)


def test_signature_matches_the_spec_example() -> None:
    # The example from the Standard Webhooks spec's test vectors (standard-webhooks/libraries).
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = '{"test": 2432232314}'
    expected = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    assert sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body) == expected


def test_receiver_failing_first_deliveries_gets_every_event_once_verified(
    store: SqlStore,
) -> None:
    with WebhookReceiver(fail_first=3) as receiver:
        secret = new_secret()
        store.add_subscription(
            receiver.url, secret, repo_id=None, org="org", kinds=[], min_severity=None
        )
        shas = fill(store)
        notifier = WebhookNotifier(store)
        for n in shas:
            notifier.enqueue_revision(REPO.repo_id, n)
        notifier.enqueue_revision(REPO.repo_id, shas[2])  # a second enqueue adds nothing
        with httpx2.Client(timeout=5) as client:
            deliverer = WebhookDeliverer(store, client, DeliveryRetry(base_s=0.01), LOOPBACK)
            deliver_until(deliverer, lambda: len(receiver.accepted()) >= 2)
            deliverer.deliver_due()
        payloads = verified(secret, receiver.accepted())
        failed = [r for r in receiver.requests if r.status == 500]
    assert len(failed) == 3
    by_id = {r.headers["webhook-id"]: p for r, p in zip(receiver.accepted(), payloads, strict=True)}
    assert len(by_id) == len(receiver.accepted()) == 2  # every event exactly once by webhook-id
    shas_seen = sorted(p["data"]["sha"] for p in by_id.values())
    assert shas_seen == [shas[1], shas[2]]  # the first revision has no changes
    stop = next(p for p in by_id.values() if p["data"]["sha"] == shas[1])
    assert stop["type"] == "revision.changed"
    assert [c["kind"] for c in stop["data"]["changes"]] == [
        "generation.stop_tokens",
        "card.license",
    ]
    # A retried message keeps its webhook-id; the failed attempts are in the delivery log.
    assert {r.headers["webhook-id"] for r in failed} <= set(by_id)
    log = store.deliveries(store.subscriptions()[0].id)
    assert [a.status_code for a in reversed(log)].count(500) == 3
    # each attempt says how it ended, not how its message did (issue 19)
    assert all(
        a.state is (MessageState.FAILED if a.status_code == 500 else MessageState.DELIVERED)
        for a in log
    )
    assert sum(a.state is MessageState.FAILED for a in log) == 3


def test_filters_by_kind_and_severity(store: SqlStore) -> None:
    with WebhookReceiver() as receiver:
        secret = new_secret()
        store.add_subscription(
            receiver.url,
            secret,
            repo_id=REPO.repo_id,
            org=None,
            kinds=["card.", "chat_template.rendered"],
            min_severity=Severity.BEHAVIOR,
        )
        shas = fill(store)
        notifier = WebhookNotifier(store)
        for n in shas:
            notifier.enqueue_revision(REPO.repo_id, n)
        with httpx2.Client(timeout=5) as client:
            WebhookDeliverer(store, client, urls=LOOPBACK).deliver_due()
        [payload] = verified(secret, receiver.accepted())
    assert [c["kind"] for c in payload["data"]["changes"]] == ["chat_template.rendered"]


def test_repo_events_are_delivered_from_a_cursor(store: SqlStore) -> None:
    fill(store)
    with WebhookReceiver() as receiver:
        secret = new_secret()
        store.add_subscription(
            receiver.url, secret, repo_id=None, org=None, kinds=[], min_severity=None
        )
        notifier = WebhookNotifier(store)
        assert notifier.collect_events() == 0  # the first run starts from now: no old events
        store.add_event(REPO.repo_id, RepoEvent(EventKind.REPO_DELETED, "gone", None))
        store.add_event(REPO.repo_id, RepoEvent(EventKind.POLL_FAILED, "timeout", None))
        assert notifier.collect_events() == 1  # a failed poll is not a change
        assert notifier.collect_events() == 0
        with httpx2.Client(timeout=5) as client:
            WebhookDeliverer(store, client, urls=LOOPBACK).deliver_due()
        [payload] = verified(secret, receiver.accepted())
    assert payload["type"] == "repo.event"
    assert payload["data"]["changes"][0]["kind"] == "repo.deleted"


def deliveries_counted(outcome: str) -> float:
    """hubwatch_webhook_deliveries_total{outcome} so far in this process."""
    sample = REGISTRY.get_sample_value("hubwatch_webhook_deliveries_total", {"outcome": outcome})
    return sample or 0.0


def test_each_attempt_is_counted_by_its_outcome(store: SqlStore) -> None:
    before = {outcome: deliveries_counted(outcome) for outcome in ("delivered", "failed")}
    with WebhookReceiver(fail_first=1) as receiver:
        store.add_subscription(
            receiver.url, new_secret(), repo_id=None, org=None, kinds=[], min_severity=None
        )
        shas = fill(store)
        WebhookNotifier(store).enqueue_revision(REPO.repo_id, shas[1])
        with httpx2.Client(timeout=5) as client:
            deliverer = WebhookDeliverer(store, client, DeliveryRetry(base_s=0.01), LOOPBACK)
            deliver_until(deliverer, lambda: len(receiver.accepted()) >= 1)
    assert len(receiver.requests) == 2
    assert deliveries_counted("failed") - before["failed"] == 1
    assert deliveries_counted("delivered") - before["delivered"] == 1


def test_persistent_failure_disables_the_subscription(store: SqlStore) -> None:
    with WebhookReceiver(fail_first=10**6) as receiver:
        store.add_subscription(
            receiver.url, new_secret(), repo_id=None, org=None, kinds=[], min_severity=None
        )
        shas = fill(store)
        WebhookNotifier(store).enqueue_revision(REPO.repo_id, shas[1])
        clock = [datetime.now(UTC)]
        with httpx2.Client(timeout=5) as client:
            deliverer = WebhookDeliverer(
                store, client, DeliveryRetry(), LOOPBACK, clock=lambda: clock[0]
            )
            with capture_logs() as logs:
                for _ in range(40):  # jump ahead to each next attempt, past three days
                    deliverer.deliver_due()
                    clock[0] += timedelta(hours=8, seconds=1)
    [subscription] = store.subscriptions()
    assert not subscription.enabled
    assert "undelivered after" in (subscription.disabled_reason or "")
    attempts = store.deliveries(subscription.id, limit=1000)
    assert 10 <= len(attempts) <= 25 and attempts[0].state is MessageState.FAILED
    assert any(e["event"] == "webhook_subscription_disabled" for e in logs)
    assert all(subscription.secret not in json.dumps(e, default=str) for e in logs)
    assert store.due_messages(clock[0] + timedelta(days=30)) == []


def test_backoff_doubles_and_gives_up_after_the_window() -> None:
    policy = DeliveryRetry(base_s=30, window_s=3 * 86400)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    at, delays = start, []
    for attempts in range(1, 100):
        following = policy.next_attempt(start, attempts, at)
        if following is None:
            break
        delays.append((following - at).total_seconds())
        at = following
    assert delays[:4] == [30, 60, 120, 240]
    assert max(delays) == 8 * 3600
    assert timedelta(days=2) < at - start <= timedelta(days=3)


def test_a_removed_subscription_takes_its_outbox_with_it(store: SqlStore) -> None:
    shas = fill(store)
    sub = store.add_subscription(
        "https://example.invalid/h",
        new_secret(),
        repo_id=None,
        org=None,
        kinds=[],
        min_severity=None,
    )
    WebhookNotifier(store).enqueue_revision(REPO.repo_id, shas[1])
    assert len(store.due_messages(datetime.now(UTC))) == 1
    store.remove_subscription(sub.id)
    assert store.due_messages(datetime.now(UTC)) == []


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/h", "must use https"),
        ("ftp://example.com/h", "must use https"),
        ("https://user:pw@example.com/h", "credentials"),
        ("https://127.0.0.1/h", "loopback"),
        ("https://localhost/h", "loopback"),
        ("https://10.1.2.3/h", "private"),
        ("https://192.168.0.1/h", "private"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://[::1]/h", "loopback"),
        ("https://[::ffff:127.0.0.1]/h", "loopback"),
        ("https://0.0.0.0/h", "private|unspecified"),
    ],
)
def test_unsafe_webhook_urls_are_refused(url: str, reason: str) -> None:
    with pytest.raises(WebhookUrlRefused, match=reason):
        check_webhook_url(url)


def test_allowed_networks_let_loopback_through() -> None:
    allowed = parse_networks(["127.0.0.0/8"])
    assert check_webhook_url("http://127.0.0.1:9/h", allow_http=True, allowed=allowed)
    with pytest.raises(WebhookUrlRefused, match="private"):
        check_webhook_url("https://10.0.0.1/h", allowed=allowed)


def test_public_addresses_pass() -> None:
    assert check_webhook_url("https://93.184.215.14/h")


def test_kind_prefixes_and_minimum_severity() -> None:
    changes = [
        Change("card.license", Severity.INFO, "l"),
        Change("chat_template.rendered", Severity.BEHAVIOR, "r"),
        Change("generation.stop_tokens", Severity.BREAKING, "s"),
    ]
    from hubwatch.models import Subscription

    def sub(kinds: tuple[str, ...], minimum: Severity | None) -> Subscription:
        return Subscription(1, "u", "s", None, None, kinds, minimum, True, None, datetime.now(UTC))

    assert [c.kind for c in wanted(sub((), None), changes)] == [c.kind for c in changes]
    assert [c.summary for c in wanted(sub(("card.",), None), changes)] == ["l"]
    assert [c.summary for c in wanted(sub((), Severity.BEHAVIOR), changes)] == ["r", "s"]
    assert wanted(sub(("card",), None), changes) == []  # no prefix without the dot


def test_new_revision_without_subscriptions_enqueues_nothing(store: SqlStore) -> None:
    fill(store)
    snap = dataclasses.replace(
        snapshot(4, {"a": b"1"}, parent=3),
        changes=(Change("card.license", Severity.INFO, "x"),),
        base=sha(3),
    )
    store.add_revision(REPO.repo_id, snap)
    assert WebhookNotifier(store).enqueue_revision(REPO.repo_id, sha(4)) == 0
