"""Webhook attempts connect to the addresses their URL check approved, never a second lookup's."""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx2
import pytest
import trustme

from hubwatch.models import DeliveryAttempt
from hubwatch.notify.delivery import WebhookDeliverer
from hubwatch.notify.outbox import WebhookNotifier
from hubwatch.notify.signing import new_secret
from hubwatch.notify.urls import IpAddress, UrlPolicy, parse_networks
from hubwatch.store.sql import SqlStore
from tests.support.receiver import WebhookReceiver
from tests.support.served import REPO, fill

LOOPBACK_NETWORKS = parse_networks(["127.0.0.0/8", "::1/128"])


@dataclass
class FakeDns:
    """A resolver with fixed answers that records every lookup it is asked."""

    answers: dict[str, list[str]]
    lookups: list[tuple[str, int]] = field(default_factory=list)

    def __call__(self, host: str, port: int) -> list[IpAddress]:
        self.lookups.append((host, port))
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [ipaddress.ip_address(a) for a in self.answers[host]]


def deliver_once(
    store: SqlStore, client: httpx2.Client, url: str, urls: UrlPolicy
) -> list[DeliveryAttempt]:
    """Subscribe `url`, enqueue one message, attempt it once; the subscription's delivery log."""
    sub = store.add_subscription(
        url, new_secret(), repo_id=None, org=None, kinds=[], min_severity=None
    )
    WebhookNotifier(store).enqueue_revision(REPO.repo_id, fill(store)[1])
    WebhookDeliverer(store, client, urls=urls).deliver_due()
    return store.deliveries(sub.id)


def test_a_host_name_is_delivered_with_its_name_in_host(store: SqlStore) -> None:
    # localhost may answer ::1 first; the receiver listens on 127.0.0.1 only, the next address.
    policy = UrlPolicy(allow_http=True, allowed_networks=LOOPBACK_NETWORKS)
    with WebhookReceiver() as receiver, httpx2.Client(timeout=5) as client:
        [attempt] = deliver_once(store, client, f"http://localhost:{receiver.port}/hook", policy)
    assert attempt.error is None and attempt.status_code == 204
    [request] = receiver.requests
    assert request.headers["host"] == f"localhost:{receiver.port}"


def test_the_connection_goes_to_the_checked_address_without_a_second_lookup(
    store: SqlStore,
) -> None:
    # .invalid never resolves (RFC 6761 §6.4): had the client looked the name up again when
    # connecting, instead of using the checked address, the delivery would fail.
    with WebhookReceiver() as receiver, httpx2.Client(timeout=5) as client:
        dns = FakeDns({"hook.invalid": ["127.0.0.1"]})
        policy = UrlPolicy(allow_http=True, allowed_networks=LOOPBACK_NETWORKS, resolve=dns)
        url = f"http://hook.invalid:{receiver.port}/hook"
        [attempt] = deliver_once(store, client, url, policy)
    assert attempt.error is None and attempt.status_code == 204
    assert dns.lookups == [("hook.invalid", receiver.port)]
    [request] = receiver.requests
    assert request.headers["host"] == f"hook.invalid:{receiver.port}"


def test_the_next_checked_address_is_tried_when_one_refuses_to_connect(store: SqlStore) -> None:
    # Linux routes all of 127.0.0.0/8 to lo; nothing listens on 127.0.0.2 at the receiver's port.
    with WebhookReceiver() as receiver, httpx2.Client(timeout=5) as client:
        dns = FakeDns({"hook.invalid": ["127.0.0.2", "127.0.0.1"]})
        policy = UrlPolicy(allow_http=True, allowed_networks=LOOPBACK_NETWORKS, resolve=dns)
        [attempt] = deliver_once(store, client, f"http://hook.invalid:{receiver.port}/h", policy)
    assert attempt.error is None
    assert len(receiver.requests) == 1


def test_an_address_the_check_refuses_is_never_connected_to(store: SqlStore) -> None:
    with WebhookReceiver() as receiver, httpx2.Client(timeout=5) as client:
        dns = FakeDns({"hook.invalid": ["127.0.0.1"]})
        policy = UrlPolicy(allow_http=True, resolve=dns)  # loopback not allowed
        [attempt] = deliver_once(store, client, f"http://hook.invalid:{receiver.port}/h", policy)
    assert "loopback" in (attempt.error or "")
    assert receiver.requests == []


def test_redirects_are_not_followed_even_when_the_client_would(store: SqlStore) -> None:
    policy = UrlPolicy(allow_http=True, allowed_networks=LOOPBACK_NETWORKS)
    with (
        WebhookReceiver() as elsewhere,
        WebhookReceiver(redirect_to=elsewhere.url) as receiver,
        httpx2.Client(timeout=5, follow_redirects=True) as client,
    ):
        [attempt] = deliver_once(store, client, receiver.url, policy)
    assert attempt.status_code == 307 and attempt.error == "HTTP 307"
    assert elsewhere.requests == []


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_receiver(ca: trustme.CA) -> Iterator[WebhookReceiver]:
    """An https receiver on 127.0.0.1 whose certificate names only hook.test (no IP)."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("hook.test").configure_cert(server)
    with WebhookReceiver(tls=server) as receiver:
        yield receiver


@pytest.fixture
def trusting_client(ca: trustme.CA) -> Iterator[httpx2.Client]:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    with httpx2.Client(timeout=5, verify=context) as client:
        yield client


HTTPS_DNS = {"hook.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}


def test_https_to_a_pinned_address_verifies_the_certificate_for_the_url_host(
    store: SqlStore, tls_receiver: WebhookReceiver, trusting_client: httpx2.Client
) -> None:
    # The certificate has no IP in it: this only passes if SNI and the check use hook.test.
    policy = UrlPolicy(allowed_networks=LOOPBACK_NETWORKS, resolve=FakeDns(HTTPS_DNS))
    url = f"https://hook.test:{tls_receiver.port}/hook"
    [attempt] = deliver_once(store, trusting_client, url, policy)
    assert attempt.error is None and attempt.status_code == 204
    [request] = tls_receiver.requests
    assert request.headers["host"] == f"hook.test:{tls_receiver.port}"


def test_https_refuses_a_certificate_for_another_host_at_the_pinned_address(
    store: SqlStore, tls_receiver: WebhookReceiver, trusting_client: httpx2.Client
) -> None:
    policy = UrlPolicy(allowed_networks=LOOPBACK_NETWORKS, resolve=FakeDns(HTTPS_DNS))
    url = f"https://other.test:{tls_receiver.port}/hook"
    [attempt] = deliver_once(store, trusting_client, url, policy)
    assert "CERTIFICATE_VERIFY_FAILED" in (attempt.error or "")
    assert "other.test" in (attempt.error or "")
    assert tls_receiver.requests == []


def test_a_kept_alive_https_connection_is_not_reused_for_another_host_name(
    store: SqlStore, tls_receiver: WebhookReceiver, trusting_client: httpx2.Client
) -> None:
    # Both names pin to 127.0.0.1; the connection verified for hook.test must not carry the
    # request for other.test, whose name that certificate does not cover (due in enqueue order).
    policy = UrlPolicy(allowed_networks=LOOPBACK_NETWORKS, resolve=FakeDns(HTTPS_DNS))
    good, bad = (
        store.add_subscription(
            f"https://{host}:{tls_receiver.port}/hook",
            new_secret(),
            repo_id=None,
            org=None,
            kinds=[],
            min_severity=None,
        )
        for host in ("hook.test", "other.test")
    )
    WebhookNotifier(store).enqueue_revision(REPO.repo_id, fill(store)[1])
    assert WebhookDeliverer(store, trusting_client, urls=policy).deliver_due() == 1
    assert store.deliveries(good.id)[0].error is None
    assert "CERTIFICATE_VERIFY_FAILED" in (store.deliveries(bad.id)[0].error or "")
    assert [r.headers["host"] for r in tls_receiver.requests] == [f"hook.test:{tls_receiver.port}"]
