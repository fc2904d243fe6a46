"""Webhook URL safety: https only by default, and no hosts inside private networks."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hubwatch.errors import WebhookUrlRefused

if TYPE_CHECKING:
    from hubwatch.settings import Settings

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_networks(cidrs: Sequence[str]) -> list[IpNetwork]:
    """The allowed networks from settings; WebhookUrlRefused names a malformed one."""
    try:
        return [ipaddress.ip_network(c, strict=False) for c in cidrs]
    except ValueError as exc:
        raise WebhookUrlRefused(f"bad network in webhook_allowed_networks: {exc}") from None


def _refused(address: IpAddress) -> str | None:
    """Why an address is off limits, if it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    for reason, flag in (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("private", address.is_private),
        ("multicast", address.is_multicast),
        ("unspecified", address.is_unspecified),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return reason
    return None


def check_webhook_url(
    url: str, *, allow_http: bool = False, allowed: Sequence[IpNetwork] = ()
) -> list[IpAddress]:
    """Check `url` and return the addresses its host resolves to now.

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
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError, UnicodeError) as exc:
        raise WebhookUrlRefused(f"webhook host {host!r} does not resolve: {exc}") from None
    addresses = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        reason = _refused(address)
        if reason and not any(address in network for network in allowed):
            raise WebhookUrlRefused(
                f"webhook host {host!r} resolves to {reason} address {address}; allow it with "
                "HUBWATCH_WEBHOOK_ALLOWED_NETWORKS"
            )
        addresses.append(address)
    return addresses


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """Which webhook URLs may be sent to (checked again at each attempt: DNS may change)."""

    allow_http: bool = False
    allowed_networks: Sequence[IpNetwork] = ()

    @classmethod
    def from_settings(cls, settings: Settings) -> UrlPolicy:
        """The policy `HUBWATCH_WEBHOOK_ALLOW_HTTP` and `…_ALLOWED_NETWORKS` describe."""
        return cls(settings.webhook_allow_http, parse_networks(settings.webhook_allowed_networks))

    def check(self, url: str) -> None:
        """WebhookUrlRefused unless `url` may be sent to now."""
        check_webhook_url(url, allow_http=self.allow_http, allowed=self.allowed_networks)
