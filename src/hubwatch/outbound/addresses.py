"""Which addresses hubwatch may connect to: globally routable ones, in every spelling of them,
unless a setting allows a network deliberately. Webhook URLs and git URLs are checked here."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence

from hubwatch.errors import UrlRefused

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


ALLOW_SETTING = "HUBWATCH_WEBHOOK_ALLOWED_NETWORKS"
"""The one setting that allows private networks, for webhook and git hosts alike."""


def parse_networks(cidrs: Sequence[str], error: type[UrlRefused] = UrlRefused) -> list[IpNetwork]:
    """The allowed networks from settings; `error` names a malformed one."""
    try:
        return [ipaddress.ip_network(c, strict=False) for c in cidrs]
    except ValueError as exc:
        raise error(f"bad network in webhook_allowed_networks: {exc}") from None


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


def allowed_addresses(
    host: str,
    port: int,
    *,
    allowed: Sequence[IpNetwork] = (),
    resolve: Resolver = resolve_host,
    error: type[UrlRefused] = UrlRefused,
    what: str = "",
) -> list[IpAddress]:
    """The addresses `host` resolves to now, each globally routable or in `allowed`; `error`
    otherwise (or when it does not resolve), its message naming the `what` host."""
    named = f"{what} host" if what else "host"
    try:
        addresses = resolve(host, port)
    except (OSError, ValueError, UnicodeError) as exc:
        raise error(f"{named} {host!r} does not resolve: {exc}") from None
    if not addresses:
        raise error(f"{named} {host!r} resolves to no address")
    for address in addresses:
        reason = refused_reason(address)
        if reason and not any(address in network for network in allowed):
            raise error(
                f"{named} {host!r} resolves to {reason} address {address}; allow it with "
                f"{ALLOW_SETTING}"
            )
    return addresses
