"""Credentials in URLs: split off on input, redacted in whatever is shown (API, pages, logs)."""

from __future__ import annotations

import re
from collections.abc import Container
from urllib.parse import SplitResult, urlsplit, urlunsplit

from hubwatch.errors import CredentialsInUrl

REDACTED = "<redacted>"
"""What stands where a secret was."""

# `scheme://userinfo@` anywhere in a text: userinfo is everything up to the last `@` before the
# host (RFC 3986 forbids a raw `@` in it, but users paste tokens holding one).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s?#'\"<>]*@")
# Query parameters that carry a token (`?token=…`, `&access_token=…`), in any text.
_TOKEN_PARAM = re.compile(
    r"(?P<key>[?&](?:token|access_token|api_token|api_key|apikey|key|secret|password)=)[^&\s'\"#]*",
    re.IGNORECASE,
)


def _host_netloc(parts: SplitResult) -> str:
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port is not None else host


def split_credentials(url: str) -> tuple[str, str | None]:
    """`url` without its userinfo (`user:token@`), and that userinfo (None when there was none).

    A local path or scp-style git address (`git@host:org/repo`) is returned unchanged.
    """
    if "://" not in url:
        return url, None
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo = parts.netloc.rsplit("@", 1)[0]
    clean = urlunsplit(parts._replace(netloc=_host_netloc(parts)))
    return clean, userinfo


def url_host(url: str) -> str:
    """The lower-case host of `url` ("" for a path): the key of its credentials."""
    if "://" not in url:
        return ""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def redact_text(text: str) -> str:
    """`text` with the userinfo of every URL in it and every token query value replaced."""
    if "@" in text:
        text = _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    if "=" in text:
        text = _TOKEN_PARAM.sub(lambda m: f"{m['key']}{REDACTED}", text)
    return text


def redact_url(url: str | None) -> str | None:
    """A URL fit to show: without its userinfo, and without token query values."""
    if url is None:
        return None
    try:
        clean, _ = split_credentials(url)
    except ValueError:  # malformed (an unclosed IPv6 bracket): the text redaction still holds
        clean = url
    return redact_text(clean)


def strip_credentials(url: str, hosts_with_credentials: Container[str]) -> str:
    """The URL to store for `url`: never with its userinfo.

    Credentials belong in HUBWATCH_GIT_CREDENTIALS (per host), never in a stored URL: one in a
    URL is dropped when that setting has its host, and refused otherwise (CredentialsInUrl, whose
    message does not repeat it).
    """
    try:
        clean, userinfo = split_credentials(url)
    except ValueError:
        raise CredentialsInUrl("the URL is malformed") from None
    if userinfo is None:
        return url
    host = url_host(clean)
    if host not in hosts_with_credentials:
        raise CredentialsInUrl(
            f"credentials in a URL are never stored: give them for {host!r} in "
            f'HUBWATCH_GIT_CREDENTIALS (a JSON object: {{"{host}": "user:token"}}) and track '
            f"{redact_text(clean)}"
        )
    return clean
