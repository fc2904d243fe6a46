"""Webhook URL safety: https only by default, and no hosts inside private networks."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hubwatch.errors import WebhookUrlRefused

if TYPE_CHECKING:
    from hubwatch.settings import Settings

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[IpAddress]]
"""`(host, port) -> addresses`, in the order to try them; OSError when the host does not resolve."""


def resolve_host(host: str, port: int) -> list[IpAddress]:
    """The addresses `host` resolves to for TCP, in getaddrinfo's order, without duplicates."""
    infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    # A scope id (fe80::1%eth0) is not part of the address; link-local is refused anyway.
    found = (ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos)
    return list(dict.fromkeys(found))


def parse_networks(cidrs: Sequence[str]) -> list[IpNetwork]:
    """The allowed networks from settings; WebhookUrlRefused names a malformed one."""
    try:
        return [ipaddress.ip_network(c, strict=False) for c in cidrs]
    except ValueError as exc:
        raise WebhookUrlRefused(f"bad network in webhook_allowed_networks: {exc}") from None


NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
"""RFC 6052's well-known prefix and RFC 8215's local-use one: the last 32 bits are IPv4."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and is routed to: IPv4-mapped (`::ffff:a.b.c.d`),
    IPv4-compatible (`::a.b.c.d`), 6to4 (`2002:AABB:CCDD::`), Teredo (`2001::/32`, the
    client's address), NAT64 (`64:ff9b::a.b.c.d`)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    packed = int(address)
    if any(address in net for net in NAT64) or (0 < packed < 2**32 and packed > 1):
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    return None


def _reason(address: IpAddress) -> str:
    for reason, flag in (
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return reason
    return "not globally routable"  # shared address space (100.64/10: cloud metadata), …


def refused_reason(address: IpAddress) -> str | None:
    """Why an address is off limits, if it is: anything not globally routable, itself or
    through the IPv4 address it embeds."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # it is that IPv4 address, nothing else
            return refused_reason(address.ipv4_mapped)
        inner = embedded_ipv4(address)
        why = refused_reason(inner) if inner is not None else None
        if why:
            return f"{why} (the IPv4 address {inner} embedded in it)"
    if address.is_global and not address.is_multicast:
        return None
    return _reason(address)


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
        addresses = resolve(host, port)
    except (OSError, ValueError, UnicodeError) as exc:
        raise WebhookUrlRefused(f"webhook host {host!r} does not resolve: {exc}") from None
    if not addresses:
        raise WebhookUrlRefused(f"webhook host {host!r} resolves to no address")
    for address in addresses:
        reason = refused_reason(address)
        if reason and not any(address in network for network in allowed):
            raise WebhookUrlRefused(
                f"webhook host {host!r} resolves to {reason} address {address}; allow it with "
                "HUBWATCH_WEBHOOK_ALLOWED_NETWORKS"
            )
    return addresses


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
        return cls(settings.webhook_allow_http, parse_networks(settings.webhook_allowed_networks))

    def check(self, url: str) -> list[IpAddress]:
        """The addresses `url` may be sent to now; WebhookUrlRefused if none may."""
        return check_webhook_url(
            url, allow_http=self.allow_http, allowed=self.allowed_networks, resolve=self.resolve
        )
