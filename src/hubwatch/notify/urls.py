"""Webhook URL safety: https only by default, and no hosts inside private networks (the address
check itself is `outbound/addresses.py`, which git URLs go through too)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hubwatch.errors import WebhookUrlRefused
from hubwatch.outbound.addresses import (
    IpAddress,
    IpNetwork,
    Resolver,
    allowed_addresses,
    parse_networks,
    refused_reason,
    resolve_host,
)

if TYPE_CHECKING:
    from hubwatch.settings import Settings


def check_webhook_url(
    url: str,
    *,
    allow_http: bool = False,
    allowed: Sequence[IpNetwork] = (),
    resolve: Resolver = resolve_host,
) -> list[IpAddress]:
    """Check `url` and return the addresses its host resolves to now (connect only to these).

    Raises WebhookUrlRefused for another scheme, credentials in the URL, a host that does not
    resolve, or one resolving into loopback, link-local or private ranges not in `allowed`.
    """
    parts = urlsplit(url)
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes:
        raise WebhookUrlRefused(f"webhook URLs must use {' or '.join(schemes)}")
    if parts.username or parts.password:
        raise WebhookUrlRefused("webhook URLs must not carry credentials")
    host = parts.hostname
    if not host:
        raise WebhookUrlRefused("webhook URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise WebhookUrlRefused(f"webhook host {host!r} does not resolve: {exc}") from None
    return allowed_addresses(
        host, port, allowed=allowed, resolve=resolve, error=WebhookUrlRefused, what="webhook"
    )


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """Which webhook URLs may be sent to (checked again at each attempt: DNS may change)."""

    allow_http: bool = False
    allowed_networks: Sequence[IpNetwork] = ()
    resolve: Resolver = resolve_host
    """Looks up a host once per attempt; the attempt connects only to what it answered."""

    @classmethod
    def from_settings(cls, settings: Settings) -> UrlPolicy:
        """The policy `HUBWATCH_WEBHOOK_ALLOW_HTTP` and `…_ALLOWED_NETWORKS` describe."""
        networks = parse_networks(settings.webhook_allowed_networks, WebhookUrlRefused)
        return cls(settings.webhook_allow_http, networks)

    def check(self, url: str) -> list[IpAddress]:
        """The addresses `url` may be sent to now; WebhookUrlRefused if none may."""
        return check_webhook_url(
            url, allow_http=self.allow_http, allowed=self.allowed_networks, resolve=self.resolve
        )


__all__ = [
    "IpAddress",
    "IpNetwork",
    "Resolver",
    "UrlPolicy",
    "check_webhook_url",
    "parse_networks",
    "refused_reason",
    "resolve_host",
]
