"""Which git URLs may be fetched: network URLs whose host resolves only to allowed addresses
(checked as webhook URLs are, `outbound/addresses.py`), local paths where the caller allows them;
and the git options that hold a fetch to the addresses checked."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hubwatch.errors import GitUrlRefused
from hubwatch.outbound.addresses import (
    IpAddress,
    IpNetwork,
    Resolver,
    allowed_addresses,
    parse_networks,
    resolve_host,
)

if TYPE_CHECKING:
    from hubwatch.settings import Settings

PORTS = {"https": 443, "http": 80, "ssh": 22, "git+ssh": 22, "ssh+git": 22, "git": 9418}
"""The schemes git may fetch over (as GIT_ALLOW_PROTOCOL lets it), with their default ports."""
_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?")
"""A host name as DNS, curl and Python all read it alike: no `%`, `\\`, `@`, non-ASCII or
trailing dot to be read apart (`https://evil\\@127.0.0.1/`, `%31%32%37.0.0.1`)."""
_BRACKETED = re.compile(r"\[([0-9a-f:.]+)\]")
_ODD = re.compile(r"[\\\s\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class GitTarget:
    """Where a git URL leads."""

    scheme: str
    """`https`, `http`, `ssh`, `git`; `file` for a local path."""
    host: str | None = None
    """None for a local path."""
    port: int = 0
    addresses: tuple[IpAddress, ...] = ()
    """What the host resolved to when checked: git connects to these only (http and https)."""

    @property
    def local(self) -> bool:
        return self.host is None

    def git_options(self) -> list[str]:
        """`-c` options holding git to the checked addresses: no redirect (it would lead to
        an unchecked host), and curl's resolve cache set to the addresses the check approved
        (no second lookup for a rebinding DNS server to answer). ssh and git:// resolve on
        their own: only the check guards them."""
        if self.local:
            return []
        options = ["-c", "http.followRedirects=false"]
        literal = _is_address(self.host or "")
        if self.scheme in ("http", "https") and self.addresses and not literal:
            pinned = ",".join(f"[{a}]" if a.version == 6 else str(a) for a in self.addresses)
            options += ["-c", f"http.curloptResolve={self.host}:{self.port}:{pinned}"]
        return options


def parse_git_url(url: str) -> GitTarget:
    """The scheme, host and port of a git URL (git's own rules: `scheme://`, scp-like
    `[user@]host:path`, else a local path); GitUrlRefused for a scheme git may not use or a
    host that is not plainly a name or an address."""
    if "::" in url.split("/", 1)[0] and not url.startswith("["):
        raise GitUrlRefused("git remote helpers (`ext::`, `fd::`…) are refused")
    if "://" in url:
        scheme, _, rest = url.partition("://")
        scheme = scheme.lower()
        if scheme == "file":
            return GitTarget("file")
        if scheme not in PORTS:
            raise GitUrlRefused(
                f"git URLs must use https, http, ssh or git (or be a local path), not {scheme!r}"
            )
        # the authority ends at the path, the query or the fragment (curl's reading too):
        # `https://127.0.0.1#@evil.example/` leads to 127.0.0.1
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    elif ":" in url.split("/", 1)[0]:  # scp-like: a colon before any slash (git's rule)
        scheme, authority = "ssh", url.split(":", 1)[0]
        if authority.startswith("[") and "]:" in url:  # `[::1]:path`
            scheme, authority = "ssh", url.split("]:", 1)[0] + "]"
    else:
        return GitTarget("file")
    if _ODD.search(authority):
        # one parser may read `a\@b` as host a, another as host b
        raise GitUrlRefused("git URL host part holds a backslash, a space or a control character")
    host, port = _host_port(authority.rpartition("@")[2], PORTS[scheme])
    return GitTarget(scheme, host, port)


def _host_port(hostport: str, default: int) -> tuple[str, int]:
    lowered = hostport.lower()
    bracketed = _BRACKETED.match(lowered)
    if bracketed is not None:
        host, rest = bracketed.group(1), lowered[bracketed.end() :]
        if not _is_address(host):
            raise GitUrlRefused(f"git URL host {hostport!r} is not an IPv6 address")
    else:
        host, _, port = lowered.partition(":")
        rest = f":{port}" if port else ""
        if not _NAME.fullmatch(host):
            raise GitUrlRefused(f"git URL host {hostport!r} is not a plain host name or address")
    if not rest:
        return host, default
    if not (rest.startswith(":") and rest[1:].isdigit() and 0 < int(rest[1:]) < 65536):
        raise GitUrlRefused(f"git URL port in {hostport!r} is not a port")
    return host, int(rest[1:])


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class GitUrlPolicy:
    """Which git URLs may be fetched; checked when a repo is added and again before each
    clone, fetch or `ls-remote` (DNS may change)."""

    allowed_networks: Sequence[IpNetwork] = ()
    """Networks a host may resolve into although not globally routable (the webhook setting)."""
    local: bool = True
    """Whether local paths and `file://` URLs may be fetched (the CLI's; never the API's)."""
    resolve: Resolver = resolve_host

    @classmethod
    def from_settings(cls, settings: Settings, *, local: bool = True) -> GitUrlPolicy:
        """The policy `HUBWATCH_WEBHOOK_ALLOWED_NETWORKS` describes, for git hosts too."""
        return cls(parse_networks(settings.webhook_allowed_networks, GitUrlRefused), local)

    def check(self, url: str) -> GitTarget:
        """Where `url` leads, its host's addresses checked; GitUrlRefused if it may not be
        fetched."""
        target = parse_git_url(url)
        if target.local:
            if not self.local:
                raise GitUrlRefused("local git paths are refused here; give an https:// URL")
            return target
        assert target.host is not None
        addresses = allowed_addresses(
            target.host,
            target.port,
            allowed=self.allowed_networks,
            resolve=self.resolve,
            error=GitUrlRefused,
            what="git",
        )
        return GitTarget(target.scheme, target.host, target.port, tuple(addresses))
